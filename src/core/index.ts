export { withinAddressLength } from './address-length.ts';
export { type Clock, isoNow, systemClock } from './clock.ts';
export { AppError, Conflict, type ErrorExtras, Invalid, LimitReached, NotFound, NotSupported } from './errors.ts';
export { type IdPrefix, newId, randomHex } from './ids.ts';
export { createLogger, type Logger } from './logger.ts';
export type { Page } from './page.ts';
export { startPeriodicTask } from './periodic-task.ts';
export { FixedWindowRateLimiter, type RateLimitAnswer } from './rate-limiter.ts';
export { urlHost } from './url-host.ts';
