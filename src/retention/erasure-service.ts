import { sql } from 'kysely';
import { type Clock, Conflict, Invalid, isOutage, isoNow, type Logger, newId, type Page } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import { type ListFilter, resolveListFilter } from '../mail/index.ts';
import type { MailPages } from '../search/index.ts';
import type { MailEraser } from './mail-eraser.ts';

/** Emails deleted per transaction of an erase. */
const ERASE_BATCH = 200;

/** The audit record of one erase by query. */
export interface Erasure {
  id: string;
  /** The API key that asked for it. */
  apiKeyId: string;
  /** The list filter, as the request gave it. */
  filter: Record<string, unknown>;
  erasedCount: number;
  erasedAt: string;
}

export interface EraseRequest {
  /** What the list's parameters say, as the request gave them: kept in the audit record. */
  given: Record<string, unknown>;
  /** The same, as the list filters. */
  filter: ListFilter;
  dryRun: boolean;
  /** The dry run's count, required to erase: the erase goes ahead only if the filter still matches as many. */
  expectedCount?: number;
}

export type EraseResult = { dryRun: true; count: number } | { dryRun: false; count: number; erasure: Erasure };

/**
 * Erase by query, for data-subject requests: the emails a list with the same filter would show go, with their
 * search entries, deliveries, events and raw blobs (see MailEraser), and an audit record says who erased how many
 * with which filter, and when. A dry run counts first; the erase must repeat that count, so a filter that matches
 * more than its author saw erases nothing.
 */
export class ErasureService {
  readonly #db: Db;
  readonly #pages: MailPages;
  readonly #clock: Clock;
  readonly #eraser: MailEraser;
  readonly #logger: Logger;

  constructor(deps: { db: Db; pages: MailPages; clock: Clock; eraser: MailEraser; logger: Logger }) {
    this.#db = deps.db;
    this.#pages = deps.pages;
    this.#clock = deps.clock;
    this.#eraser = deps.eraser;
    this.#logger = deps.logger;
  }

  async erase(accountId: string, apiKeyId: string, request: EraseRequest): Promise<EraseResult> {
    const resolved = await resolveListFilter(this.#db, accountId, request.filter);
    const conditions = await this.#pages.conditions(accountId, resolved, this.#clock.now().getTime());
    const ids = (
      await this.#db
        .selectFrom('emails')
        .select('emails.id')
        .where((eb) => eb.and(conditions(eb)))
        .execute()
    ).map((row) => row.id);
    if (request.dryRun) return { dryRun: true, count: ids.length };
    if (request.expectedCount === undefined) {
      throw new Invalid('expectedCount is required to erase: send the count of a dry run with the same filter');
    }
    if (request.expectedCount !== ids.length) {
      throw new Conflict(
        `The filter matches ${ids.length} emails, not the expected ${request.expectedCount}: run the dry run again`,
        { count: ids.length },
      );
    }
    const erasure: Erasure = {
      id: newId('era'),
      apiKeyId,
      filter: request.given,
      erasedCount: 0,
      erasedAt: isoNow(this.#clock),
    };
    // The record is written with the first batch and counts each one in its transaction, so it always says what
    // was erased, even of an erase a crash cut short.
    let recorded = false;
    const record = async (trx: Db, deleted: number) => {
      if (!recorded) {
        await trx
          .insertInto('mail_erasures')
          .values({
            id: erasure.id,
            account_id: accountId,
            api_key_id: apiKeyId,
            filter_json: JSON.stringify(request.given),
            erased_count: deleted,
            erased_at: erasure.erasedAt,
          })
          .execute();
        recorded = true;
      } else {
        await trx
          .updateTable('mail_erasures')
          .set({ erased_count: sql`erased_count + ${deleted}` })
          .where('id', '=', erasure.id)
          .execute();
      }
      erasure.erasedCount += deleted;
    };
    for (let start = 0; start < ids.length; start += ERASE_BATCH) {
      const batch = ids.slice(start, start + ERASE_BATCH);
      await this.#eraser.deleteBatch(
        (eb) => eb.and([eb('emails.account_id', '=', accountId), eb('emails.id', 'in', batch)]),
        {
          limit: batch.length,
          skipLocked: false,
          afterDelete: (trx, deleted) => record(trx, deleted),
        },
      );
    }
    if (!recorded) await record(this.#db, 0);
    // The erase is committed, its blobs queued with it: a store out of reach leaves them to the retention sweeper,
    // and the answer still says what was erased, where an error would have the client retry an erase already done.
    await this.#eraser.deleteQueuedBlobs().catch((error) => {
      this.#logger[isOutage(error) ? 'warn' : 'error'](
        { err: error, erasureId: erasure.id },
        'erased blobs left queued',
      );
    });
    return { dryRun: false, count: ids.length, erasure };
  }

  /** The account's erasures, newest first. */
  async list(accountId: string, page: { limit: number; offset: number }): Promise<Page<Erasure>> {
    const rows = await this.#db
      .selectFrom('mail_erasures')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('erased_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute();
    const { total } = await this.#db
      .selectFrom('mail_erasures')
      .select((eb) => eb.fn.countAll<string | number>().as('total'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    return {
      items: rows.map((row) => ({
        id: row.id,
        apiKeyId: row.api_key_id,
        filter: JSON.parse(row.filter_json) as Record<string, unknown>,
        erasedCount: Number(row.erased_count),
        erasedAt: row.erased_at,
      })),
      total: Number(total),
    };
  }
}
