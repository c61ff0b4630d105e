/**
 * `npm run bench`: every scenario, loopback only, each bounded in messages and time.
 *   BENCH=ingest,e2e,search (default)      which scenarios to run; `console` runs search and also times the web
 *                                         console's first inbox page over its database (see bench/console.ts)
 *   SEARCH_MESSAGES=1000000                 emails the search scenario generates (see bench/search.ts)
 *   BENCH_DATABASE_URL=postgres://...     also run the ingest, e2e and search scenarios on PostgreSQL (default:
 *                                         TEST_DATABASE_URL)
 *   INGEST_WORKERS=N                      passed to Mailroom (parse/verdict worker threads)
 *   MAILROOM_NODE_OPTIONS=...             NODE_OPTIONS of the ingest scenario's Mailroom process, e.g.
 *                                         `--cpu-prof --cpu-prof-dir=/tmp/prof` (written when it stops)
 *   INGEST_TRIALS=3                       trial pairs (Mailroom, discard) per ingest level; middle by ratio shown
 *   INGEST_CLIENTS=pipelining,nodemailer  load clients for the ingest scenario (see bench/smtp-load.ts)
 *   INGEST_ROUTING=store,webhook          the ingest scenario's recipient addresses: store-only, and routed to a
 *                                         loopback webhook endpoint answering 200 (see bench/ingest.ts); each level
 *                                         runs a trial of each beside the discard server's, in rounds
 *   INGEST_SENDERS=one,mixed              the ingest scenario's senders: all unsigned from one sender, and half of
 *                                         the messages DKIM-signed by 1,000 sender domains (see bench/senders.ts)
 * BENCH=soak (never by default: it takes SOAK_MINUTES, 30 by default, and up to 10 minutes more) runs Mailroom
 * under a steady mixed load with a kill -9 halfway and checks for lost and duplicated mail (see bench/soak.ts), once:
 * on PostgreSQL when BENCH_DATABASE_URL (or TEST_DATABASE_URL) is set, else on SQLite.
 *   SOAK_MINUTES=30                       how long the load runs
 *   SOAK_RATE=30                          messages a second
 * Prints a table per scenario and, last, one JSON line with every figure.
 */
import { timeConsoleFirstPage } from './console.ts';
import { formatE2e, runE2e } from './e2e.ts';
import { formatIngest, ROUTINGS, type Routing, runIngestBench } from './ingest.ts';
import { formatSearch, runSearchBench } from './search.ts';
import { SENDER_MIXES, type SenderMix } from './senders.ts';
import { LOAD_CLIENTS, type LoadClient } from './smtp-load.ts';
import { formatSoak, runSoak } from './soak.ts';

/** The known names listed in `variable`'s comma list, or a stop naming the unknown one. */
function pick<T extends string>(variable: string, names: string, known: readonly T[]): T[] {
  return names.split(',').map((name) => {
    const found = known.find((candidate) => candidate === name);
    if (!found) throw new Error(`${variable}: unknown ${name} (known: ${known.join(', ')})`);
    return found;
  });
}

const which = new Set((process.env.BENCH ?? 'ingest,e2e,search').split(','));
const postgresUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const databases: Array<string | undefined> = [undefined, ...(postgresUrl ? [postgresUrl] : [])];
const results: Record<string, unknown[]> = { ingest: [], e2e: [], search: [], soak: [] };

for (const databaseUrl of databases) {
  if (which.has('ingest')) {
    const result = await runIngestBench({
      databaseUrl,
      trials: process.env.INGEST_TRIALS ? Number(process.env.INGEST_TRIALS) : undefined,
      clients: process.env.INGEST_CLIENTS
        ? pick<LoadClient>('INGEST_CLIENTS', process.env.INGEST_CLIENTS, LOAD_CLIENTS)
        : undefined,
      routings: process.env.INGEST_ROUTING
        ? pick<Routing>('INGEST_ROUTING', process.env.INGEST_ROUTING, ROUTINGS)
        : undefined,
      senders: process.env.INGEST_SENDERS
        ? pick<SenderMix>('INGEST_SENDERS', process.env.INGEST_SENDERS, SENDER_MIXES)
        : undefined,
      env: {
        ...(process.env.INGEST_WORKERS ? { INGEST_WORKERS: process.env.INGEST_WORKERS } : {}),
        ...(process.env.MAILROOM_NODE_OPTIONS ? { NODE_OPTIONS: process.env.MAILROOM_NODE_OPTIONS } : {}),
      },
    });
    results.ingest!.push(result);
    process.stdout.write(`${formatIngest(result)}\n\n`);
  }
  if (which.has('search') || which.has('console')) {
    const result = await runSearchBench({
      databaseUrl,
      timeServer: which.has('console') ? timeConsoleFirstPage : undefined,
    });
    results.search!.push(result);
    process.stdout.write(`${formatSearch(result)}\n\n`);
  }
  if (which.has('e2e')) {
    const result = await runE2e({
      rate: 100,
      warmupSeconds: 2,
      steadySeconds: 10,
      burst: 5000,
      connections: 20,
      databaseUrl,
    });
    results.e2e!.push(result);
    process.stdout.write(`${formatE2e(result)}\n\n`);
  }
}
if (which.has('soak')) {
  const result = await runSoak({
    minutes: Number(process.env.SOAK_MINUTES ?? 30),
    ratePerSecond: Number(process.env.SOAK_RATE ?? 30),
    databaseUrl: postgresUrl,
  });
  results.soak!.push(result);
  process.stdout.write(`${formatSoak(result)}\n\n`);
}
if (!postgresUrl) process.stdout.write('PostgreSQL skipped: set BENCH_DATABASE_URL to include it.\n');
process.stdout.write(`${JSON.stringify(results)}\n`);
