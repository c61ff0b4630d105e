import { Readable } from 'node:stream';
import { type AuthenticateResult, type AuthStatus, authenticate } from 'mailauth';
import type { Verdict } from '../db/index.ts';
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
  /** Our `Received:` trace header, which the spam scanner reads before the message (as spamc would get it). */
  receivedHeader: Buffer;
  clientIp: string;
  helo: string;
  mailFrom: string;
  /** Our host name, written into Authentication-Results. */
  mta: string;
}

export type RawResolver = (name: string, rrtype: string) => Promise<unknown>;

/** Anything taking longer is a temporary error, so a hostile DNS setup cannot hold a message indefinitely. */
const VERDICT_TIMEOUT_MS = 15_000;

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

/** With several signatures, one that passes is enough; otherwise the most telling failure is reported. */
function dkimWord(result: AuthenticateResult['dkim']): Verdict {
  const words = result.results.map((entry) => word(entry.status));
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

/** Headers whose signatures cover the body (DKIM's body hash; ARC seals carry DKIM-like signatures). */
const BODY_SIGNATURE = /^(dkim-signature|arc-seal|arc-message-signature)[ \t]*:/im;

/**
 * What mailauth must read. Only a DKIM or ARC signature looks at the body; SPF and DMARC read the envelope and the
 * header. So for an unsigned message the header alone gives the same verdicts, and the body (most of the message,
 * and most of mailauth's work) is skipped.
 */
function partThatMatters(chunks: readonly Buffer[]): readonly Buffer[] {
  const first = chunks[0];
  if (!first) return chunks;
  const crlf = first.indexOf('\r\n\r\n');
  const end = crlf >= 0 ? crlf + 4 : first.indexOf('\n\n') + 2;
  if (end < 2) return chunks;
  const header = first.subarray(0, end);
  return BODY_SIGNATURE.test(header.toString('latin1')) ? chunks : [header];
}

/** No virus scanner is supported, so that verdict is always reported as switched off. */
const VIRUS_NOT_SCANNED = 'DISABLED';

/**
 * SPF (client IP, MAIL FROM, HELO), DKIM, DMARC and ARC through mailauth and the configured resolver, and the spam
 * verdict from `scanForSpam` (DISABLED without one), both at once. DNS answers are cached briefly: a burst of mail
 * from one sender asks the same questions, and real MTAs sit behind a caching resolver too.
 */
export function createVerdictChecker(resolve: RawResolver, scanForSpam?: SpamScanner) {
  const resolver = cachedResolver(resolve);
  return async function checkVerdicts(input: VerdictInput): Promise<Verdicts> {
    const [authentication, spam] = await Promise.all([
      authenticationVerdicts(input),
      scanForSpam ? scanForSpam([input.receivedHeader, ...input.chunks]) : ('DISABLED' as const),
    ]);
    return { ...authentication, spam, virus: VIRUS_NOT_SCANNED };
  };

  async function authenticationVerdicts(input: VerdictInput): Promise<Omit<Verdicts, 'spam' | 'virus'>> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        authenticate(Readable.from(partThatMatters(input.chunks)), {
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
        authResults: authenticationResults(result.headers),
      };
    } catch {
      return { spf: 'TEMPERROR', dkim: 'TEMPERROR', dmarc: 'TEMPERROR', arc: 'TEMPERROR', authResults: null };
    } finally {
      clearTimeout(timer);
    }
  }
}

const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;
const CACHEABLE_ERRORS = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/** Caches answers and "no such record" for a minute; timeouts and server failures are never cached. */
export function cachedResolver(resolve: RawResolver): RawResolver {
  const cache = new Map<string, { expires: number; answer: Promise<unknown> }>();
  return (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`;
    const now = Date.now();
    const hit = cache.get(key);
    if (hit && hit.expires > now) return hit.answer;
    if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
    const answer = resolve(name, rrtype);
    cache.set(key, { expires: now + CACHE_TTL_MS, answer });
    answer.catch((error: NodeJS.ErrnoException) => {
      if (!CACHEABLE_ERRORS.has(error.code ?? '')) cache.delete(key);
    });
    return answer;
  };
}
