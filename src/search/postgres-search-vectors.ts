import { firstCharacters } from '../core/index.ts';
import { SEARCH_FIELD_CHARS, searchWords } from './search-words.ts';

/**
 * The fields of the index (see migration 0005) that every recipient's row of a message shares, each as one text, of
 * which the first SEARCH_FIELD_CHARS characters are indexed.
 */
export interface SharedSearchFields {
  subject: string;
  /** `from_name from_address` */
  sender: string;
  /** The text body. */
  body: string;
}

/** PostgreSQL's limits for a tsvector (tsearch/ts_type.h): the last position, and positions kept per word. */
const LAST_POSITION = 16_383;
const POSITIONS_PER_WORD = 256;
/** to_tsvector leaves out a word of more bytes than this, and gives it no position; a tsquery refuses one. */
const WORD_BYTES_LIMIT = 2047;

/** Whether PostgreSQL's search vectors can hold `word`: one that cannot is in no email's vector. */
export function fitsPostgresIndex(word: string): boolean {
  // A UTF-16 unit is at most 3 bytes of UTF-8, so most words need no counting.
  return word.length * 3 <= WORD_BYTES_LIMIT || Buffer.byteLength(word) <= WORD_BYTES_LIMIT;
}

/** The weights, in the order of their index in a Position. */
const WEIGHTS = 'ABCD';

/**
 * A position with its weight, as one number: position * 4 + the weight's index in WEIGHTS. A 10 KB body has
 * thousands of positions, and a number per position costs its vector a fraction of what a pair would.
 */
type Position = number;
const encode = (at: number, weight: number): Position => at * 4 + weight;
const position = (encoded: Position) => encoded >> 2;
const weightIndex = (encoded: Position) => encoded & 3;

/** Word to its positions, in increasing order. */
type Vector = Map<string, Position[]>;

/**
 * `setweight(to_tsvector('simple', text), weight)` for a text split by the word rule: words numbered from 1, clamped
 * at the last position, at most one fewer than POSITIONS_PER_WORD positions a word, and none after the last position.
 */
function fieldVector(text: string, weight: 'A' | 'B' | 'C' | 'D'): Vector {
  const fieldWeight = WEIGHTS.indexOf(weight);
  const vector: Vector = new Map();
  let at = 0;
  for (const word of searchWords(text)) {
    if (!fitsPostgresIndex(word)) continue;
    at = Math.min(at + 1, LAST_POSITION);
    const positions = vector.get(word);
    if (!positions) {
      vector.set(word, [encode(at, fieldWeight)]);
      continue;
    }
    const last = position(positions[positions.length - 1]!);
    if (positions.length < POSITIONS_PER_WORD - 1 && last !== LAST_POSITION && last !== at) {
      positions.push(encode(at, fieldWeight));
    }
  }
  return vector;
}

/**
 * `left || right` (tsvector_concat): the right side's positions move past the left side's largest, clamped at the
 * last position; a word in both keeps the left's positions and takes the right's while it has fewer than
 * POSITIONS_PER_WORD and has not reached the last position. Neither side is changed (a word's positions are copied
 * before they grow), so a field's vector serves every row that shares it.
 */
function concat(left: Vector, right: Vector): Vector {
  let offset = 0;
  for (const positions of left.values()) offset = Math.max(offset, position(positions[positions.length - 1]!));
  const joined: Vector = new Map(left);
  for (const [word, positions] of right) {
    const merged = joined.get(word)?.slice() ?? [];
    for (const encoded of positions) {
      if (merged.length >= POSITIONS_PER_WORD || position(merged[merged.length - 1] ?? 0) === LAST_POSITION) break;
      merged.push(encode(Math.min(position(encoded) + offset, LAST_POSITION), weightIndex(encoded)));
    }
    joined.set(word, merged);
  }
  return joined;
}

/** A vector as tsvector text. Words hold only letters, digits and private-use characters, so need no escaping. */
function vectorText(vector: Vector): string {
  let text = '';
  for (const [word, positions] of vector) {
    text += `${text ? ' ' : ''}'${word}':`;
    for (let i = 0; i < positions.length; i++) {
      const encoded = positions[i]!;
      text += `${i ? ',' : ''}${position(encoded)}${WEIGHTS[weightIndex(encoded)]}`;
    }
  }
  return text;
}

/**
 * A message's PostgreSQL search vectors, as tsvector text, one per recipient's row: what migration 0005's expression
 * computed in the database, built here with the word rule itself. PostgreSQL's regular expression and text parser
 * were most of what storing an email cost its backend; reading this text back costs it far less. It also makes the
 * words the same as a search's whatever the database's locale (its `[[:alnum:]]` follows the database's ctype; plain
 * `C` knows no letters past ASCII). The shared fields are split once; `recipients` is each row's envelope recipient
 * with the To, Cc and Bcc header texts.
 */
export function postgresSearchVectors(fields: SharedSearchFields): (recipients: string) => string {
  const indexed = (text: string, weight: 'A' | 'B' | 'C' | 'D') =>
    fieldVector(firstCharacters(text, SEARCH_FIELD_CHARS), weight);
  const subjectAndSender = concat(indexed(fields.subject, 'A'), indexed(fields.sender, 'B'));
  const body = indexed(fields.body, 'D');
  return (recipients) => vectorText(concat(concat(subjectAndSender, indexed(recipients, 'C')), body));
}
