export { deliveryHistory } from './delivery-history.ts';
export { deliveryJobRow, insertDeliveryJob, type JobLease, type JobTarget } from './delivery-jobs.ts';
export type { DeliveryRecord, DeliveryService, EndpointTestResult, ReplayQuery } from './delivery-service.ts';
export { createDeliverySystem, type DeliverySystem, type DeliverySystemOptions } from './delivery-system.ts';
export {
  attachmentDownloadUrl,
  buildEmailReceivedPayload,
  MAX_PAYLOAD_BYTES,
  type PayloadEmail,
} from './email-received-payload.ts';
export type { AddressGuard } from './http-sender.ts';
export type { DeliveryJob } from './outbox-store.ts';
export { RETRY_SCHEDULE_SECONDS } from './retry-policy.ts';
export { legacyWebhookSignature, standardWebhookSignature } from './signing.ts';
