import type { AccountsService, IssuedKey } from './accounts-service.ts';

export const DEFAULT_ACCOUNT = 'default';

export interface Access {
  /** An empty installation's first key of `default`, to be shown once. */
  issued?: IssuedKey;
  /** When MAILROOM_API_KEY was revoked (through the API or the CLI): it stays revoked and authenticates nothing. */
  configuredKeyRevokedAt?: string;
}

/**
 * Makes sure someone can call the API: MAILROOM_API_KEY becomes a key of the `default` account, and an empty
 * installation gets a fresh key for `default`, returned so it can be shown once.
 */
export async function bootstrapAccess(accounts: AccountsService, configuredKey?: string): Promise<Access> {
  if (configuredKey) {
    const { revokedAt } = await accounts.ensureKey(DEFAULT_ACCOUNT, configuredKey);
    return revokedAt ? { configuredKeyRevokedAt: revokedAt } : {};
  }
  if ((await accounts.count()) > 0) return {};
  return { issued: await accounts.createKey(DEFAULT_ACCOUNT) };
}

/**
 * What to tell an operator whose MAILROOM_API_KEY was revoked. Start-up goes on: revoking a leaked key is deliberate,
 * the account keeps another active key (its last one cannot be revoked), and refusing would stop receiving mail at the
 * next unattended restart.
 */
export function revokedConfiguredKeyWarning(revokedAt: string): string {
  return (
    `MAILROOM_API_KEY was revoked at ${revokedAt} and authenticates nothing: ` +
    `unset it, or set an active key of "${DEFAULT_ACCOUNT}"`
  );
}
