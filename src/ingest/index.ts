export { type AccountVolumeDependencies, AccountVolumeWatch } from './account-volume.ts';
export type { AcceptedRoute, WrittenEmail } from './email-writer.ts';
export {
  type CommittedListener,
  createIngestService,
  INGEST_STAGES,
  INGEST_THREAD_NAMES,
  type IncomingMessage,
  type IngestDependencies,
  type IngestResult,
  type IngestService,
  type IngestStageSeconds,
} from './ingest-service.ts';
export { cleanStopMarker, type RecoveryOptions, removeOrphanBlobs } from './recovery.ts';
export type { Verdicts } from './verdicts.ts';
