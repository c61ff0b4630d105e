import type { Logger } from '../core/index.ts';
import type { DatabaseConfig, Db, SqliteConfig } from '../db/index.ts';
import { startBackgroundThread } from '../workers/index.ts';
import { startSearchVectorRebuild } from './postgres-vector-rebuild.ts';

export interface SearchIndexerThreadData {
  database: SqliteConfig;
  pollMs: number;
}

/** The search indexer's thread name for the operating system (the ingest bench reports its CPU by it). */
export const SEARCH_INDEXER_THREAD_NAME = 'search-indexer';

/**
 * How often the indexer looks for queued emails. A search never waits for it (it applies what is queued first), so
 * this bounds how far the index falls behind, and with it what a search may have to apply itself.
 */
const POLL_MS = 50;

/**
 * Keeps SQLite's search database up to date (see sqlite-search-index.ts) from a thread and connection of its own, so
 * that neither ingest's writer nor the event loop spends its time on FTS5. A failure is logged and retried at the
 * next poll; the queue keeps what was not applied.
 */
function startSearchIndexer(config: SqliteConfig, logger: Logger): { stop(): Promise<void> } {
  // A slice cut off at exit is rolled back, and applied again at the next start.
  const thread = startBackgroundThread(
    new URL('./search-indexer-thread.ts', import.meta.url),
    SEARCH_INDEXER_THREAD_NAME,
    {
      database: config,
      pollMs: POLL_MS,
    } satisfies SearchIndexerThreadData,
    (report: { error: string }) => logger.warn({ err: report.error }, 'search indexing failed'),
  );
  thread.worker.on('error', (error) =>
    logger.error({ err: error }, 'search indexer stopped; searches index what they need'),
  );
  return thread;
}

/**
 * Keeps the search index in line with stored mail from a process's start: on SQLite, the indexer's thread (which
 * also builds a search file of another word rule again); on PostgreSQL, where ingest writes each email's vector, the
 * vectors of an earlier word rule are built again in the background.
 */
export function startSearchIndex(config: DatabaseConfig, db: Db, logger: Logger): { stop(): Promise<void> } {
  return config.kind === 'sqlite' ? startSearchIndexer(config, logger) : startSearchVectorRebuild(db, logger);
}
