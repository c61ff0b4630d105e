export { type Account, AccountsService, type ApiKey, type IssuedKey } from './accounts-service.ts';
export { bootstrapAccess, DEFAULT_ACCOUNT } from './bootstrap.ts';
