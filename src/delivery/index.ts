export { deliveredSince, deliveryHistory } from './delivery-history.ts';
export {
  deliveryJobRow,
  type JobLease,
  type JobTarget,
  type RunnableJob,
} from './delivery-jobs.ts';
export type { DeliveryRecord, DeliveryService, EndpointTestResult, ReplayQuery } from './delivery-service.ts';
export { createDeliverySystem, type DeliverySystem, type DeliverySystemOptions } from './delivery-system.ts';
export {
  buildEmailReceivedPayload,
  MAX_PAYLOAD_BYTES,
  type PayloadEmail,
} from './email-received-payload.ts';
export { type AddressGuard, createHttpSender, type HostLookup, type HttpSender } from './http-sender.ts';
export { ATTEMPT_OUTCOMES, type DeliveryObserver } from './job-runner.ts';
export type { DeliveryFailureObserver, DeliveryJob, FailedDelivery } from './outbox-store.ts';
export { createRetryPolicy, RETRY_SCHEDULE_SECONDS, type RetryPolicy } from './retry-policy.ts';
export { standardWebhookSignature } from './signing.ts';
