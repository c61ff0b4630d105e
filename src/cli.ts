import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { AccountsService, type ApiKey, DEFAULT_ACCOUNT } from './accounts/index.ts';
import { backUpFsBlobStore } from './blobs/index.ts';
import { loadConfig } from './config/index.ts';
import { AppError, ConfigError, NotFound, systemClock } from './core/index.ts';
import { backUpSqliteDatabase, migrateToLatest, openDatabase, pendingMigrations } from './db/index.ts';
import { refusal, serve, serveSandbox } from './server.ts';

const USAGE = `Usage: mailroom <command>

  serve                                   start the HTTP API and SMTP receiver (same as npm start)
  dev                                     start a local sandbox in ./.mailroom-dev with a verified domain
                                          and an address ready to receive (SQLite, no DNS to set up)
  migrate [--create]                      apply pending database migrations; --create makes DATA_DIR
                                          (SQLite) or DATABASE_SCHEMA (PostgreSQL) when it does not
                                          exist (a mistyped one is refused)
  keys create [--account NAME]            print a new API key (account "${DEFAULT_ACCOUNT}" by default)
  keys list [--account NAME]              list API keys: id, prefix, account, created, last used, revoked
  keys revoke ID                          revoke a key at once (an account's last active key cannot be)
  keys rotate ID                          print a new key for the account of key ID and revoke key ID
  accounts set-limit NAME <N|unlimited>   cap how many domains the account may add
  backup DIR                              copy a SQLite installation to DIR, a new directory, while it
                                          runs: the database and filesystem blobs; DIR is then a
                                          DATA_DIR to start Mailroom on
`;

/** Said when the settings name no installation, most often a mistyped one. */
const noInstallation = (where: string) =>
  new ConfigError(`No Mailroom installation in ${where}: run the CLI with the server's settings`);

/**
 * Runs a command on the server's installation. It never creates one: a mistyped DATA_DIR, DATABASE_URL or
 * DATABASE_SCHEMA would otherwise get an empty installation of its own, and a key no server accepts.
 */
async function withAccounts<T>(run: (accounts: AccountsService) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const where =
    config.database.kind === 'sqlite'
      ? `DATA_DIR ${config.dataDir}`
      : `PostgreSQL schema ${config.database.schema ?? "(the search_path's first)"}`;
  if (config.database.kind === 'sqlite' && !existsSync(config.database.file)) throw noInstallation(where);
  const database = await openDatabase(config.database, { ifSchemaMissing: () => noInstallation(where) });
  try {
    const pending = await pendingMigrations(database);
    if (pending.length > 0) {
      throw pending.some((name) => name.startsWith('0001_'))
        ? noInstallation(where)
        : new ConfigError('The database needs migrating first: run "mailroom migrate", or start the server');
    }
    return await run(new AccountsService(database.db, systemClock));
  } finally {
    await database.close();
  }
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** `mailroom backup DIR`: a copy of a running SQLite installation that is itself a DATA_DIR. */
async function backUp(target: string): Promise<string> {
  const config = loadConfig();
  if (config.database.kind !== 'sqlite') {
    throw new ConfigError(
      'mailroom backup copies a SQLite installation: on PostgreSQL, back up its schema with pg_dump --schema ' +
        'and the blob store with the tools of its own',
    );
  }
  if (!existsSync(config.database.file)) throw noInstallation(`DATA_DIR ${config.dataDir}`);
  if (`${target}${sep}`.startsWith(`${config.dataDir}${sep}`)) {
    throw new ConfigError(`The backup cannot go inside DATA_DIR ${config.dataDir}: name a directory outside it`);
  }
  const existed = existsSync(target);
  if (existed && readdirSync(target).length > 0) {
    throw new ConfigError(`${target} is not empty: name a new or empty directory for the backup`);
  }
  await mkdir(target, { recursive: true });
  try {
    const file = join(target, basename(config.database.file));
    backUpSqliteDatabase(config.database.file, file);
    const database = `the database (${megabytes(statSync(file).size)})`;
    const blobs =
      config.blobs.kind === 'fs'
        ? await backUpFsBlobStore(config.blobs.dir, join(target, 'blobs')).then(
            ({ files, bytes }) => `${files} blob ${files === 1 ? 'file' : 'files'} (${megabytes(bytes)})`,
          )
        : `none of the blobs, which stay in s3://${config.blobs.bucket}`;
    return `Backed up DATA_DIR ${config.dataDir} to ${target}: ${database} and ${blobs}. To restore it, start Mailroom with DATA_DIR=${target}`;
  } catch (error) {
    if (!existed) await rm(target, { recursive: true, force: true });
    throw error;
  }
}

/** The keys as a table with a header row, columns padded to their widest cell. */
function keyTable(keys: ApiKey[]): string {
  const rows = [
    ['ID', 'PREFIX', 'ACCOUNT', 'CREATED', 'LAST USED', 'REVOKED'],
    ...keys.map((k) => [k.id, k.prefix, k.accountName, k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ?? '-']),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [command, subcommand, ...rest] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command === 'serve') {
    await serve();
    return -1;
  }
  if (command === 'dev') {
    await serveSandbox();
    return -1;
  }
  if (command === 'migrate') {
    const { values } = parseArgs({ args: argv.slice(1), options: { create: { type: 'boolean', default: false } } });
    const config = loadConfig();
    // Opening the database would make the folder or schema: a mistyped one would become a new, empty installation.
    const refusal = (what: string, setting: string) =>
      new ConfigError(
        `${what} does not exist: check ${setting}, or run "mailroom migrate --create" to make a new installation ` +
          'there (npm start makes it too)',
      );
    if (config.database.kind === 'sqlite' && !values.create && !existsSync(config.dataDir)) {
      throw refusal(`DATA_DIR ${config.dataDir}`, 'DATA_DIR');
    }
    const schema = config.database.kind === 'postgres' ? config.database.schema : undefined;
    const database = await openDatabase(config.database, {
      ...(values.create ? {} : { ifSchemaMissing: () => refusal(`PostgreSQL schema ${schema}`, 'DATABASE_SCHEMA') }),
    });
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
  if (command === 'keys' && subcommand === 'list') {
    const { values } = parseArgs({ args: rest, options: { account: { type: 'string' } } });
    const keys = await withAccounts(async (accounts) => {
      if (values.account === undefined) return accounts.listKeys(null);
      const account = await accounts.findByName(values.account);
      if (!account) throw new NotFound(`No account named ${values.account}`);
      return accounts.listKeys(account.id);
    });
    process.stdout.write(`${keyTable(keys)}\n`);
    return 0;
  }
  if (command === 'keys' && subcommand === 'revoke' && rest.length === 1) {
    const key = await withAccounts((accounts) => accounts.revokeKey(null, rest[0]!));
    process.stdout.write(`Revoked key ${key.id} (${key.prefix}) of account "${key.accountName}" at ${key.revokedAt}\n`);
    return 0;
  }
  if (command === 'keys' && subcommand === 'rotate' && rest.length === 1) {
    const { issued, revoked } = await withAccounts((accounts) => accounts.rotateKey(rest[0]!));
    process.stdout.write(`${issued.key}\n`);
    process.stderr.write(
      `New API key ${issued.id} for account "${issued.accountName}". It is shown only once. ` +
        `Key ${revoked.id} (${revoked.prefix}) is revoked.\n`,
    );
    return 0;
  }
  if (command === 'accounts' && subcommand === 'set-limit' && rest.length === 2) {
    const [name, value] = rest as [string, string];
    // Digits only: Number() would read '' as 0 and 0x10 as 16.
    const limit = value === 'unlimited' ? null : /^\d+$/.test(value) ? Number(value) : Number.NaN;
    const account = await withAccounts((accounts) => accounts.setDomainLimit(name, limit));
    process.stdout.write(`Account "${account.name}" domain limit: ${account.domainLimit ?? 'unlimited'}\n`);
    return 0;
  }
  if (command === 'backup' && subcommand !== undefined && rest.length === 0) {
    process.stdout.write(`${await backUp(resolve(subcommand))}\n`);
    return 0;
  }
  process.stderr.write(USAGE);
  return 2;
}

try {
  const code = await main(process.argv.slice(2));
  if (code >= 0) process.exitCode = code;
} catch (error) {
  const refused = refusal(error);
  if (error instanceof ConfigError || error instanceof AppError) {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 1;
  } else if (refused) {
    // The database (or the data directory) refused: one line, as the server says it at start.
    process.stderr.write(`mailroom ${process.argv[2]}: ${refused}\n`);
    process.exitCode = 1;
  } else if (String((error as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS_')) {
    // An unknown option, or one without its value: what parseArgs says, then how the commands are written.
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else {
    throw error;
  }
}
