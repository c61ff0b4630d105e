export { EventHub, type EventHubOptions, type EventSubscription } from './event-hub.ts';
export {
  appendEvents,
  deleteEmailEvents,
  type EventType,
  eventRow,
  type NewEvent,
  type StreamedEvent,
} from './event-log.ts';
