export type { DeliveryHistory, DeliveryStats, RecentDelivery } from './delivery-history.ts';
export {
  activeEndpointType,
  type DeliveryTarget,
  DeliveryTargets,
  type ForwardTarget,
  isActiveWebhook,
  type WebhookTarget,
} from './delivery-targets.ts';
export {
  addressLiteral,
  DEFAULT_RETRY_ATTEMPTS,
  DEFAULT_TIMEOUT_SECONDS,
  ENDPOINT_TYPES,
  type EndpointType,
  STANDARD_SECRET_PREFIX,
  signingSecretProblem,
} from './endpoint-config.ts';
export {
  type Endpoint,
  type EndpointCleanup,
  type EndpointDetail,
  type EndpointInput,
  type EndpointListQuery,
  EndpointsService,
  type EndpointUpdate,
  type RoutingTarget,
} from './endpoints-service.ts';
export { holdRoutingTarget } from './target-hold.ts';
export {
  assertPublicUrl,
  connectionGuard,
  isPrivateAddress,
  type UrlGuardOptions,
} from './url-guard.ts';
export { type Webhook, type WebhookInput, WebhooksService } from './webhooks-service.ts';
