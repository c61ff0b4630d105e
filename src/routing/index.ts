export { rcptRejection } from './rcpt-rejection.ts';
export {
  REJECT_REASONS,
  type RecipientRouter,
  type RejectReason,
  type RouteDecision,
  type RouteTarget,
} from './route-decision.ts';
export { RoutingService } from './routing-service.ts';
export { RoutingWritesPlugin } from './routing-writes.ts';
