/**
 * Typed service errors. Services throw these with the exact client-facing message (the spec's strings);
 * each edge (HTTP, SMTP) translates the class into its own status code once.
 */
export type ErrorExtras = Record<string, unknown>;

export class AppError extends Error {
  readonly extras: ErrorExtras;
  constructor(message: string, extras: ErrorExtras = {}) {
    super(message);
    this.name = new.target.name;
    this.extras = extras;
  }
}

/** The settings, or the installation they name, refuse a start or a command: printed as one line, no stack trace. */
export class ConfigError extends Error {}

/** The resource does not exist, or belongs to another account. */
export class NotFound extends AppError {}
/** The request is well-formed but breaks a rule. */
export class Invalid extends AppError {}
/** The request clashes with existing state (duplicates, dependants). */
export class Conflict extends AppError {}
/** The request clashes with work under way that ends by itself: the same request may succeed shortly. */
export class Busy extends Conflict {}
/** The account's plan does not allow more of this resource. */
export class LimitReached extends AppError {}
/** The operation is known but Mailroom deliberately does not implement it. */
export class NotSupported extends AppError {}
