import type { RouteDecision } from './route-decision.ts';

/** Recipients kept at most; past that the cache starts over, so a sender trying address after address cannot grow it. */
const MAX_DECISIONS = 10_000;

/**
 * Routing decisions made at one routing version (SQLite's counter of routing changes, see migration 0014; on
 * PostgreSQL a count of the changes this process has heard of, see RoutingService). A decision is kept only if the
 * version was read before the routing rows it was made from: the rows are then at least that new, and any later
 * change moves the version on and drops every decision.
 */
export class DecisionCache {
  #version: number | undefined;
  readonly #decisions = new Map<string, RouteDecision>();

  /** The decision kept for `recipient` at `version`; a different version drops everything kept. */
  get(version: number, recipient: string): RouteDecision | undefined {
    if (version !== this.#version) {
      this.#version = version;
      this.#decisions.clear();
      return undefined;
    }
    return this.#decisions.get(recipient);
  }

  /** Keeps a decision made from rows read after `version` was; ignored once the cache has moved to another. */
  set(version: number, recipient: string, decision: RouteDecision): void {
    if (version !== this.#version) return;
    if (this.#decisions.size >= MAX_DECISIONS) this.#decisions.clear();
    // Shared by every message to this recipient until routing changes, so nothing may change it.
    if (decision.accepted) Object.freeze(decision.target);
    this.#decisions.set(recipient, Object.freeze(decision));
  }
}
