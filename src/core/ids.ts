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

function encodeRandom(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += CROCKFORD[byte % 32];
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
  | 'msg';

/** A prefixed id whose text sorts by creation time (ULID-like: 10 chars of ms time, 16 random). */
export function newId(prefix: IdPrefix, now = Date.now()): string {
  return `${prefix}_${encodeTime(now)}${encodeRandom(16)}`;
}

/** A random lower-case hex token of `bytes` bytes. */
export function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}
