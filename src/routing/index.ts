export type { RecipientRouter, RejectReason, RouteDecision, RouteTarget } from './route-decision.ts';
