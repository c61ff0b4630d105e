import { Readable } from 'node:stream';
import { type AuthenticateResult, type AuthStatus, authenticate } from 'mailauth';
import type { Verdict } from '../db/index.ts';
import { headerFields, headerSection } from './header-fields.ts';
import { withVerifiedSignaturesOnly } from './signature-limit.ts';
import type { SpamScanner } from './spamd.ts';

export interface Verdicts {
  spf: Verdict;
  dkim: Verdict;
  dmarc: Verdict;
  arc: Verdict;
  spam: Verdict;
  virus: Verdict;
  /** The Authentication-Results header mailauth composed, or null when the checks could not run. */
  authResults: string | null;
}

export interface VerdictInput {
  /** The message as the client sent it, without our trace header. */
  chunks: readonly Buffer[];
  /** Our trace header, which the spam scanner reads before the message (as spamc would get it). */
  traceHeader: Buffer;
  clientIp: string;
  helo: string;
  mailFrom: string;
  /** Our host name, written into Authentication-Results. */
  mta: string;
}

export type RawResolver = (name: string, rrtype: string) => Promise<unknown>;

export type VerdictChecker = (input: VerdictInput) => Promise<Verdicts>;

type AuthenticationVerdicts = Omit<Verdicts, 'spam' | 'virus'>;

/** Anything taking longer is a temporary error, so a hostile DNS setup cannot hold a message indefinitely. */
const VERDICT_TIMEOUT_MS = 15_000;

/**
 * Far more header lines than real mail has. mailauth joins folded lines in time quadratic in their number, on the
 * analysis thread every message waits for (see docs/internals.md, "Headers too long to check").
 */
const MAX_CHECKED_HEADER_LINES = 5_000;

/** A header too long to check: an error of the message's making, not one to retry. */
const UNCHECKED: AuthenticationVerdicts = {
  spf: 'PERMERROR',
  dkim: 'PERMERROR',
  dmarc: 'PERMERROR',
  arc: 'PERMERROR',
  authResults: null,
};

/** Whether the header section (the lines before the first empty one) has more than `max` lines. */
function headerLinesExceed(chunks: readonly Buffer[], max: number): boolean {
  let lines = 0;
  // The line in progress at a chunk's end: its length so far and its last byte (a CR before the LF is no content).
  let carried = 0;
  let lastByte = -1;
  for (const chunk of chunks) {
    let start = 0;
    for (let lf = chunk.indexOf(10); lf !== -1; lf = chunk.indexOf(10, start)) {
      const length = carried + lf - start;
      const last = lf > start ? chunk[lf - 1] : lastByte;
      if (length === 0 || (length === 1 && last === 13)) return false;
      if (++lines > max) return true;
      start = lf + 1;
      carried = 0;
    }
    carried += chunk.length - start;
    if (chunk.length > start) lastByte = chunk[chunk.length - 1]!;
  }
  return false;
}

function word(status: Pick<AuthStatus, 'result'> | undefined): Verdict {
  switch (status?.result) {
    case 'pass':
      return 'PASS';
    case 'fail':
    case 'policy':
      return 'FAIL';
    case 'softfail':
      return 'SOFTFAIL';
    case 'neutral':
      return 'NEUTRAL';
    case 'temperror':
    case 'temperr':
      return 'TEMPERROR';
    case 'permerror':
      return 'PERMERROR';
    default:
      return 'NONE';
  }
}

/**
 * mailauth's lenient mode reports a signature whose body hash does not match as neutral; RFC 6376 section 6.1.3 makes
 * it a PERMFAIL, which RFC 8601 reports as fail. A changed body is what DKIM is there to catch, so it is a fail here.
 */
const BODY_HASH_MISMATCH = 'body hash did not verify';
/** Such a signature's row in Authentication-Results, with the comments mailauth may put before the reason. */
const NEUTRAL_BODY_HASH = /(;\r\n )dkim=neutral(\s+(?:\([^()]*\)\s+)*\(body hash did not verify\))/g;

function dkimStatusWord(status: AuthStatus): Verdict {
  return status.result === 'neutral' && status.comment === BODY_HASH_MISMATCH ? 'FAIL' : word(status);
}

/** With several signatures, one that passes is enough; otherwise the most telling failure is reported. */
function dkimWord(result: AuthenticateResult['dkim']): Verdict {
  const words = result.results.map((entry) => dkimStatusWord(entry.status));
  for (const candidate of ['PASS', 'FAIL', 'TEMPERROR', 'PERMERROR', 'NEUTRAL'] as const) {
    if (words.includes(candidate)) return candidate;
  }
  return 'NONE';
}

function authenticationResults(headers: string): string | null {
  const lines = headers.split(/\r?\n/);
  const start = lines.findIndex((line) => /^Authentication-Results:/i.test(line));
  if (start < 0) return null;
  let end = start + 1;
  while (end < lines.length && /^[ \t]/.test(lines[end]!)) end++;
  return lines.slice(start, end).join('\r\n');
}

/** Fields whose signatures cover the body (DKIM's body hash; ARC seals carry DKIM-like signatures). */
const BODY_SIGNATURES = new Set(['dkim-signature', 'arc-seal', 'arc-message-signature']);

interface Judged {
  /** What mailauth must read. */
  parts: readonly Buffer[];
  /** What the verdicts depend on, when that is only the envelope and the From header; otherwise null. */
  sameVerdictsKey: string | null;
}

/**
 * What the verdicts of a message depend on. Only a DKIM or ARC signature looks at the body; SPF and DMARC read the
 * envelope and the header. So for an unsigned message the header alone gives the same verdicts, and the body (most
 * of the message, and most of mailauth's work) is skipped. And with no DKIM or ARC header at all, what mailauth
 * reports is a function of the client IP, HELO, MAIL FROM and the From fields (and of DNS answers, cached below).
 * The fields are read by mailauth's parser: a From that it reads and a pattern missed (folded before its colon)
 * would let one message's DMARC verdict serve another with another author.
 */
function judged(input: VerdictInput): Judged {
  // Found once: the signature limit and the checks below read the same header.
  const section = headerSection(input.chunks);
  const whole: Judged = { parts: withVerifiedSignaturesOnly(input.chunks, section), sameVerdictsKey: null };
  if (!section) return whole;
  const { header } = section;
  const fields = headerFields(header);
  if (fields.some(({ key }) => key !== null && BODY_SIGNATURES.has(key))) return whole;
  if (fields.some(({ key }) => key?.startsWith('arc-'))) return { parts: [header], sameVerdictsKey: null };
  const from = fields.filter(({ key }) => key === 'from').map(({ line }) => line.toString('latin1'));
  return { parts: [header], sameVerdictsKey: JSON.stringify([input.clientIp, input.helo, input.mailFrom, ...from]) };
}

/** No virus scanner is supported, so that verdict is always reported as switched off. */
const VIRUS_NOT_SCANNED = 'DISABLED';

/**
 * SPF (client IP, MAIL FROM, HELO), DKIM, DMARC and ARC through mailauth and the configured resolver, and the spam
 * verdict from `scanForSpam` (DISABLED without one), both at once. DNS answers are cached briefly: a burst of mail
 * from one sender asks the same questions, and real MTAs sit behind a caching resolver too.
 */
export function createVerdictChecker(resolve: RawResolver, scanForSpam?: SpamScanner): VerdictChecker {
  const resolver = cachedResolver(resolve);
  const recentUnsigned = recentPromises<AuthenticationVerdicts>(
    UNSIGNED_REUSE_MS,
    (outcome) =>
      outcome.status === 'fulfilled' &&
      outcome.value.authResults !== null &&
      !Object.values(outcome.value).includes('TEMPERROR'),
  );
  return async function checkVerdicts(input: VerdictInput): Promise<Verdicts> {
    const [authentication, spam] = await Promise.all([
      authenticationVerdicts(input),
      scanForSpam ? scanForSpam([input.traceHeader, ...input.chunks]) : ('DISABLED' as const),
    ]);
    return { ...authentication, spam, virus: VIRUS_NOT_SCANNED };
  };

  /**
   * A burst of unsigned mail from one sender (same client, envelope and From fields) is authenticated once every
   * UNSIGNED_REUSE_MS: mailauth's SPF and DMARC work is a large share of an unsigned message's analysis, and would
   * give the same verdicts again. A temporary error, or a result without
   * Authentication-Results, is not reused.
   */
  function authenticationVerdicts(input: VerdictInput): Promise<AuthenticationVerdicts> {
    if (headerLinesExceed(input.chunks, MAX_CHECKED_HEADER_LINES)) return Promise.resolve(UNCHECKED);
    const { parts, sameVerdictsKey } = judged(input);
    if (sameVerdictsKey === null) return authenticated(parts, input);
    return recentUnsigned(sameVerdictsKey, () => authenticated(parts, input));
  }

  async function authenticated(parts: readonly Buffer[], input: VerdictInput): Promise<AuthenticationVerdicts> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        authenticate(Readable.from(parts), {
          ip: input.clientIp,
          helo: input.helo,
          sender: input.mailFrom,
          mta: input.mta,
          resolver: resolver as never,
          disableBimi: true,
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('verdicts timed out')), VERDICT_TIMEOUT_MS);
        }),
      ]);
      return {
        spf: result.spf ? word(result.spf.status) : 'NONE',
        dkim: dkimWord(result.dkim),
        dmarc: result.dmarc ? word(result.dmarc.status) : 'NONE',
        arc: result.arc ? word(result.arc.status) : 'NONE',
        authResults: authenticationResults(result.headers)?.replace(NEUTRAL_BODY_HASH, '$1dkim=fail$2') ?? null,
      };
    } catch {
      return { spf: 'TEMPERROR', dkim: 'TEMPERROR', dmarc: 'TEMPERROR', arc: 'TEMPERROR', authResults: null };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** How long the verdicts of an unsigned message serve the next ones that depend on the same (see judged). */
const UNSIGNED_REUSE_MS = 5_000;
const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;
/**
 * A larger answer is asked again each time rather than kept: TXT answers reach 64 KB over TCP, and a sender's own zone
 * could otherwise fill the cache's 10,000 entries with 640 MB. Real SPF records and DKIM keys are well under this.
 */
const CACHE_MAX_ANSWER_CHARS = 4096;
const CACHEABLE_ERRORS = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/**
 * Promises by key, each handed out again for `ttlMs` (so callers in the meantime share one computation), unless its
 * outcome is not worth `keep`ing; past CACHE_MAX_ENTRIES keys it starts afresh.
 */
function recentPromises<T>(ttlMs: number, keep: (outcome: PromiseSettledResult<T>) => boolean) {
  const entries = new Map<string, { expires: number; promise: Promise<T> }>();
  return (key: string, compute: () => Promise<T>): Promise<T> => {
    const now = Date.now();
    const hit = entries.get(key);
    if (hit && hit.expires > now) return hit.promise;
    if (entries.size >= CACHE_MAX_ENTRIES) entries.clear();
    const entry = { expires: now + ttlMs, promise: compute() };
    entries.set(key, entry);
    void Promise.allSettled([entry.promise]).then(([outcome]) => {
      if (!keep(outcome!) && entries.get(key) === entry) entries.delete(key);
    });
    return entry.promise;
  };
}

/**
 * Caches answers up to CACHE_MAX_ANSWER_CHARS and "no such record" for a minute; timeouts and server failures are
 * never cached.
 */
function cachedResolver(resolve: RawResolver): RawResolver {
  const recent = recentPromises<unknown>(CACHE_TTL_MS, (outcome) =>
    outcome.status === 'fulfilled'
      ? (JSON.stringify(outcome.value)?.length ?? 0) <= CACHE_MAX_ANSWER_CHARS
      : CACHEABLE_ERRORS.has((outcome.reason as NodeJS.ErrnoException | undefined)?.code ?? ''),
  );
  return (name, rrtype) => recent(`${rrtype} ${name.toLowerCase()}`, () => resolve(name, rrtype));
}
