export type { MailFilter } from './mail-filters.ts';
export type { MailPages } from './mail-pages.ts';
export { PostgresMailPages } from './postgres-mail-pages.ts';
export { postgresSearchVectors } from './postgres-search-vectors.ts';
export { SEARCH_INDEXER_THREAD_NAME, startSearchIndex } from './search-indexer.ts';
export { WORD_RULE_VERSION } from './search-words.ts';
export { SqliteMailPages } from './sqlite-mail-pages.ts';
export { attachSearchDatabase, catchUpSearchIndex, indexQueuedEmails } from './sqlite-search-index.ts';
