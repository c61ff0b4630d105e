export { type EraseRequest, type EraseResult, type Erasure, ErasureService } from './erasure-service.ts';
export { MailEraser } from './mail-eraser.ts';
export {
  type AccountRetention,
  type RetentionChange,
  RetentionService,
  type ScopedRetention,
} from './retention-service.ts';
export { startRetentionSweeper } from './retention-sweeper.ts';
