import { parseArgs } from 'node:util';
import { AccountsService, DEFAULT_ACCOUNT } from './accounts/index.ts';
import { ConfigError, loadConfig } from './config/index.ts';
import { AppError, systemClock } from './core/index.ts';
import { migrateToLatest, openDatabase } from './db/index.ts';
import { serve, serveSandbox } from './main.ts';

const USAGE = `Usage: mailroom <command>

  serve                                   start the HTTP API and SMTP receiver (same as npm start)
  dev                                     start a local sandbox in ./.mailroom-dev with a verified domain
                                          and an address ready to receive (SQLite, no DNS to set up)
  migrate                                 apply pending database migrations
  keys create [--account NAME]            print a new API key (account "${DEFAULT_ACCOUNT}" by default)
  accounts set-limit NAME <N|unlimited>   cap how many domains the account may add
`;

async function withAccounts<T>(run: (accounts: AccountsService) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = await openDatabase(config.database);
  try {
    await migrateToLatest(database);
    return await run(new AccountsService(database.db, systemClock));
  } finally {
    await database.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, subcommand, ...rest] = argv;
  if (command === 'serve') {
    await serve();
    return -1;
  }
  if (command === 'dev') {
    await serveSandbox();
    return -1;
  }
  if (command === 'migrate') {
    const config = loadConfig();
    const database = await openDatabase(config.database);
    try {
      const applied = await migrateToLatest(database);
      process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date\n');
    } finally {
      await database.close();
    }
    return 0;
  }
  if (command === 'keys' && subcommand === 'create') {
    const { values } = parseArgs({ args: rest, options: { account: { type: 'string', default: DEFAULT_ACCOUNT } } });
    const issued = await withAccounts((accounts) => accounts.createKey(values.account));
    process.stdout.write(`${issued.key}\n`);
    process.stderr.write(`New API key for account "${issued.accountName}". It is shown only once.\n`);
    return 0;
  }
  if (command === 'accounts' && subcommand === 'set-limit' && rest.length === 2) {
    const [name, value] = rest as [string, string];
    const limit = value === 'unlimited' ? null : Number(value);
    const account = await withAccounts((accounts) => accounts.setDomainLimit(name, limit));
    process.stdout.write(`Account "${account.name}" domain limit: ${account.domainLimit ?? 'unlimited'}\n`);
    return 0;
  }
  process.stderr.write(USAGE);
  return 2;
}

try {
  const code = await main(process.argv.slice(2));
  if (code >= 0) process.exitCode = code;
} catch (error) {
  if (error instanceof ConfigError || error instanceof AppError) {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
  } else {
    throw error;
  }
}
