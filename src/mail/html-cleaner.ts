import { sanitizeEmailHtml } from '../mime/index.ts';
import { WorkerPool } from '../workers/index.ts';
import type { StoredEmail } from './stored-email.ts';

/** A stored email as it is read: its HTML body sanitized (`cleanedHtml`), null when it has none. */
export type ReadableEmail = StoredEmail & { cleanedHtml: string | null };

/** HTML up to this long is sanitized where it is read: some milliseconds at most, even for dense markup. */
const CLEANED_INLINE_CHARS = 65_536;

/** The cleaner's thread exits after this long without work, so that it costs no memory while mail is not read. */
const IDLE_MS = 30_000;

/**
 * Sanitizes received HTML for reading. A body may be 5 MB of markup, a second or more of sanitize-html, and a sender
 * can put many such in one thread: long ones are sanitized on a thread of their own, started when first needed,
 * so that reading them holds neither the event loop nor ingest's workers.
 */
export class HtmlCleaner {
  #pool: WorkerPool<{ html: string }, string> | undefined;
  #inProgress = 0;
  #idle: NodeJS.Timeout | undefined;

  async readable(email: StoredEmail): Promise<ReadableEmail> {
    return { ...email, cleanedHtml: email.htmlBody === null ? null : await this.clean(email.htmlBody) };
  }

  /** One after the other: the thread would take them in turn anyway, and each holds its body in memory meanwhile. */
  async readableAll(emails: StoredEmail[]): Promise<ReadableEmail[]> {
    const readable: ReadableEmail[] = [];
    for (const email of emails) readable.push(await this.readable(email));
    return readable;
  }

  async clean(html: string): Promise<string> {
    if (html.length <= CLEANED_INLINE_CHARS) return sanitizeEmailHtml(html);
    clearTimeout(this.#idle);
    this.#pool ??= new WorkerPool(new URL('./html-cleaner-worker.ts', import.meta.url), 1, null, 'html-cleaner', 16);
    this.#inProgress++;
    try {
      return await this.#pool.request({ html });
    } finally {
      if (--this.#inProgress === 0) this.#idle = setTimeout(() => void this.#release(), IDLE_MS).unref();
    }
  }

  async close(): Promise<void> {
    clearTimeout(this.#idle);
    await this.#release();
  }

  async #release(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.close();
  }
}
