export {
  type Account,
  AccountsService,
  type ApiKey,
  type IssuedKey,
  MAX_ACTIVE_KEYS_PER_ACCOUNT,
} from './accounts-service.ts';
export { bootstrapAccess, DEFAULT_ACCOUNT } from './bootstrap.ts';
