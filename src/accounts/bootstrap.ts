import type { AccountsService, IssuedKey } from './accounts-service.ts';

export const DEFAULT_ACCOUNT = 'default';

/**
 * Makes sure someone can call the API: MAILROOM_API_KEY becomes a key of the `default` account, and an empty
 * installation gets a fresh key for `default`, returned so it can be shown once.
 */
export async function bootstrapAccess(
  accounts: AccountsService,
  configuredKey?: string,
): Promise<IssuedKey | undefined> {
  if (configuredKey) {
    await accounts.ensureKey(DEFAULT_ACCOUNT, configuredKey);
    return undefined;
  }
  if ((await accounts.count()) > 0) return undefined;
  return accounts.createKey(DEFAULT_ACCOUNT);
}
