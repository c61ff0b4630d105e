import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

function encodeTime(ms: number): string {
  let out = '';
  let rest = ms;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

/**
 * Random bytes for ids are drawn from the CSPRNG in bulk, as `crypto.randomUUID` does: one call per 256 ids instead
 * of one per id, which the ingest writer thread (three ids per message) would feel.
 */
const RANDOM_POOL_BYTES = 4096;
let randomPool = Buffer.alloc(0);
let randomPoolOffset = 0;

function encodeRandom(length: number): string {
  if (randomPoolOffset + length > randomPool.length) {
    randomPool = randomBytes(RANDOM_POOL_BYTES);
    randomPoolOffset = 0;
  }
  let out = '';
  for (let i = randomPoolOffset; i < randomPoolOffset + length; i++) out += CROCKFORD[randomPool[i]! % 32];
  randomPoolOffset += length;
  return out;
}

export type IdPrefix =
  | 'acc'
  | 'key'
  | 'dom'
  | 'dns'
  | 'addr'
  | 'endp'
  | 'whk'
  | 'email'
  | 'dlv'
  | 'dla'
  | 'att'
  | 'thr'
  | 'msg'
  | 'seg'
  | 'rule'
  | 'blk'
  | 'era'
  | 'bera'
  | 'alr'
  | 'alrn';

/** A prefixed id whose text sorts by creation time (ULID-like: 10 chars of ms time, 16 random). */
export function newId(prefix: IdPrefix, now = Date.now()): string {
  return `${prefix}_${encodeTime(now)}${encodeRandom(16)}`;
}

/** A random lower-case hex token of `bytes` bytes. */
export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}
