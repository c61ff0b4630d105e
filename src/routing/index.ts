export { rcptRejection } from './rcpt-rejection.ts';
export type { RecipientRouter, RejectReason, RouteDecision, RouteTarget } from './route-decision.ts';
export { RoutingService } from './routing-service.ts';
export { RoutingWritesPlugin } from './routing-writes.ts';
