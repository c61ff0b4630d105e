export { type EndpointSummary, findEndpointSummary } from './endpoint-directory.ts';
export { type EndpointType, findEndpointTargets, findWebhookTargets, type RoutingTarget } from './routing-targets.ts';
