import { sql } from 'kysely';
import type { Logger } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import { postgresSearchVectors } from './postgres-search-vectors.ts';
import { SEARCH_FIELD_CHARS, WORD_RULE_VERSION } from './search-words.ts';

/** Emails read and written again in one statement each. */
const BATCH_EMAILS = 500;
/**
 * One key for every Mailroom process of the installation (its schema), so that one of them builds the vectors; another
 * installation's on the same database must not stop it.
 */
const LOCK_KEY = sql`hashtext('mailroom search_word_rule ' || current_schema())`;

interface IndexedFields {
  id: string;
  subject: string;
  sender: string;
  recipients: string;
  body: string;
}

async function recordedVersion(db: Db): Promise<number> {
  const { rows } = await sql<{ version: number }>`SELECT version FROM search_word_rule`.execute(db);
  return rows[0]!.version;
}

/**
 * PostgreSQL: builds the search vectors of stored emails again when they were built by an earlier word rule (see
 * WORD_RULE_VERSION), in the background from a process's start; until it is done, a search may miss older mail by a
 * word the rule now folds otherwise. Only emails with a character past ASCII in an indexed field can have other words,
 * so only those are read, and only vectors that differ are written. One process does it, the one that takes the
 * advisory lock; one stopped halfway leaves the version unrecorded, and the next start goes through them again.
 */
export function startSearchVectorRebuild(db: Db, logger: Logger): { stop(): Promise<void> } {
  let stopping = false;
  const rebuilding = rebuild(db, logger, () => stopping).catch((error) =>
    logger.warn({ err: error }, 'Building the search vectors again failed; the next start tries again'),
  );
  return {
    async stop() {
      stopping = true;
      await rebuilding;
    },
  };
}

async function rebuild(db: Db, logger: Logger, stopping: () => boolean): Promise<void> {
  if ((await recordedVersion(db)) === WORD_RULE_VERSION) return;
  await db.connection().execute(async (connection) => {
    const { rows: locked } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${LOCK_KEY}) AS locked`.execute(
      connection,
    );
    if (!locked[0]!.locked) return;
    try {
      if ((await recordedVersion(connection)) === WORD_RULE_VERSION) return;
      logger.info('Building the search vectors of stored mail again for the current search word rule');
      let after = '';
      let read = 0;
      while (!stopping()) {
        const { rows } = await sql<IndexedFields>`
          SELECT id, coalesce(subject, '') AS subject,
            coalesce(from_name, '') || ' ' || coalesce(from_address, '') AS sender,
            recipient || ' ' || coalesce(to_json::json ->> 'text', '') || ' ' || coalesce(cc_json::json ->> 'text', '')
              || ' ' || coalesce(bcc_json::json ->> 'text', '') AS recipients,
            left(coalesce(text_body, ''), ${SEARCH_FIELD_CHARS}) AS body
          FROM emails
          WHERE id > ${after} AND (coalesce(subject, '') || coalesce(from_name, '') || coalesce(from_address, '')
            || recipient || coalesce(to_json, '') || coalesce(cc_json, '') || coalesce(bcc_json, '')
            || left(coalesce(text_body, ''), ${SEARCH_FIELD_CHARS})) ~ '[^\\x01-\\x7f]'
          ORDER BY id LIMIT ${BATCH_EMAILS}`.execute(connection);
        if (rows.length === 0) {
          await sql`UPDATE search_word_rule SET version = ${WORD_RULE_VERSION}`.execute(connection);
          logger.info({ emails: read }, 'Built the search vectors again');
          return;
        }
        const vectors = rows.map((row) => sql`(${row.id}, ${postgresSearchVectors(row)(row.recipients)})`);
        await sql`
          UPDATE emails SET search_vector = rebuilt.vector::tsvector
          FROM (VALUES ${sql.join(vectors)}) AS rebuilt (id, vector)
          WHERE emails.id = rebuilt.id AND emails.search_vector IS DISTINCT FROM rebuilt.vector::tsvector`.execute(
          connection,
        );
        read += rows.length;
        after = rows[rows.length - 1]!.id;
      }
    } finally {
      await sql`SELECT pg_advisory_unlock(${LOCK_KEY})`.execute(connection);
    }
  });
}
