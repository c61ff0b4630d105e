export {
  type Account,
  AccountsService,
  type ApiKey,
  type IssuedKey,
  MAX_ACTIVE_KEYS_PER_ACCOUNT,
} from './accounts-service.ts';
export { type Access, bootstrapAccess, DEFAULT_ACCOUNT, revokedConfiguredKeyWarning } from './bootstrap.ts';
