export { withinAddressLength } from './address-length.ts';
export { type Clock, isoNow, systemClock } from './clock.ts';
export {
  AppError,
  Busy,
  ConfigError,
  Conflict,
  type ErrorExtras,
  Invalid,
  LimitReached,
  NotFound,
  NotSupported,
} from './errors.ts';
export { firstCharacters } from './first-characters.ts';
export { type IdPrefix, newId, randomHex } from './ids.ts';
export { createLogger, type Logger } from './logger.ts';
export { isOutage } from './outage.ts';
export type { Page } from './page.ts';
export { startPeriodicTask } from './periodic-task.ts';
export { MAX_SCHEMA_NAME_BYTES } from './postgres-schema-name.ts';
export { FixedWindowRateLimiter, type RateLimitAnswer } from './rate-limiter.ts';
export { storableText } from './storable-text.ts';
export { urlHost } from './url-host.ts';
