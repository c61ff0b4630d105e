export {
  type ConditionSet,
  ftsMatchOf,
  hasCheaperSubset,
  hasStoredCount,
  type MailFilter,
  mailConditions,
  prepareSearch,
  receivedSince,
  searchesWords,
  type TimeRange,
} from './mail-filters.ts';
export { postgresSearchVectors } from './postgres-search-vectors.ts';
export { SEARCH_INDEXER_THREAD_NAME, startSearchIndexer } from './search-indexer.ts';
export { parseSearch, type SearchQuery, type TextTerm } from './search-query.ts';
export type { SqlDialect, SqlitePlan } from './search-sql.ts';
export { attachSearchDatabase, catchUpSearchIndex, indexQueuedEmails } from './sqlite-search-index.ts';
export { WordFrequencies } from './word-frequencies.ts';
