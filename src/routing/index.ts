export type { RecipientRouter, RejectReason, RouteDecision, RouteTarget } from './route-decision.ts';
export { parseRecipient, RoutingService } from './routing-service.ts';
