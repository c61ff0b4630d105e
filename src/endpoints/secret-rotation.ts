/**
 * How long a replaced signing secret goes on signing beside the new one: a receiver may switch to the new secret at
 * any time within it, since every request verifies with either (Standard Webhooks' zero-downtime rotation).
 */
const PREVIOUS_SECRET_MS = 24 * 3600 * 1000;

/** The stored form: `previous_secret` signs until `previous_secret_expires_at`. */
export interface PreviousSecret {
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
}

/**
 * What is kept of the old secrets once `next` replaces `current`: a secret replaced by another signs for a day more;
 * otherwise a previous secret still signing keeps its own end. Removing the secret ends signing altogether.
 */
export function previousSecretAfter(
  current: string | null | undefined,
  kept: Partial<PreviousSecret>,
  next: string | undefined,
  now: Date,
): PreviousSecret {
  if (current && next && current !== next) {
    return {
      previous_secret: current,
      previous_secret_expires_at: new Date(now.getTime() + PREVIOUS_SECRET_MS).toISOString(),
    };
  }
  const previous = signingPreviousSecret(kept, now);
  return next && previous && previous !== next
    ? { previous_secret: previous, previous_secret_expires_at: kept.previous_secret_expires_at! }
    : { previous_secret: null, previous_secret_expires_at: null };
}

/** The previous secret while it still signs. */
export function signingPreviousSecret(stored: Partial<PreviousSecret>, now: Date): string | undefined {
  const { previous_secret: secret, previous_secret_expires_at: expiresAt } = stored;
  return secret && expiresAt && Date.parse(expiresAt) > now.getTime() ? secret : undefined;
}
