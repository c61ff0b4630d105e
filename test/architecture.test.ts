import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

const SRC = resolve(import.meta.dirname, '../src');

/**
 * What each capability may import, read along the flow SMTP → routing → ingest → db/blobs → delivery: adapters
 * (smtp, http, and sandbox for `mailroom dev`) call services, services call the storage and DNS layers, and nothing calls back up the chain.
 * The files at the root of src/ may import any capability: app.ts, which wires everything, the entries main.ts and
 * cli.ts, and server.ts and process-settings.ts, which the entries call.
 */
const ALLOWED_IMPORTS: Record<string, readonly string[]> = {
  core: [],
  /** MIME parsing, attachment extraction and received HTML's sanitizer: a leaf, like core, for all who show mail. */
  mime: [],
  /**
   * Worker threads: a pool that runs a module's requests beside the event loop, and that module's side; a thread of
   * its own for a chore (WAL checkpoints, search indexing). A leaf.
   */
  workers: [],
  config: ['core'],
  db: ['core', 'config', 'workers'],
  blobs: ['core', 'config'],
  dns: ['core', 'config'],
  accounts: ['core', 'db'],
  domains: ['core', 'db', 'dns', 'events'],
  endpoints: ['core', 'db', 'dns'],
  addresses: ['core', 'db', 'endpoints'],
  routing: ['core', 'db', 'addresses'],
  search: ['core', 'db', 'workers'],
  /** The account event log behind the event stream; ingest, delivery, domains and alerts append to it. */
  events: ['core', 'db'],
  /** Guard-style rules, the sender blocklist and the routing explain; ingest runs the rules. */
  rules: ['core', 'db', 'mail', 'routing'],
  ingest: [
    'core',
    'config',
    'db',
    'blobs',
    'dns',
    'mime',
    'routing',
    'rules',
    'search',
    'endpoints',
    'mail',
    'delivery',
    'events',
    'workers',
  ],
  mail: ['core', 'db', 'mime', 'search', 'workers'],
  delivery: ['core', 'db', 'dns', 'mime', 'endpoints', 'mail', 'events'],
  /** Retention periods, legal holds, expiry and erase by query: deletes mail through its rows and blobs. */
  retention: ['core', 'db', 'mail', 'search'],
  /**
   * Health alerts: its own tables, raised and cleared with their events; signs its webhooks as delivery does. What it
   * learns of domains, mail and endpoints comes through sources app.ts wires, and delivery tells it of failed ends.
   */
  alerts: ['core', 'db', 'events', 'domains', 'endpoints', 'delivery'],
  /**
   * Prometheus metrics: a registry per app; capabilities report through recorders that app.ts hands them. It reads
   * the values its labels take from the lists the reporting capabilities keep; nothing but app.ts imports it.
   */
  metrics: ['core', 'delivery', 'endpoints', 'ingest', 'smtp'],
  smtp: ['core', 'routing', 'ingest'],
  /** The web console: static files and the plugin that serves them; it reaches Mailroom only through the public API. */
  console: [],
  http: [
    'console',
    'core',
    'accounts',
    'domains',
    'addresses',
    'endpoints',
    'mail',
    'delivery',
    'rules',
    'retention',
    'events',
    'alerts',
  ],
  sandbox: ['accounts', 'domains', 'addresses', 'endpoints'],
};

const ROOT = '.';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative specifiers of static imports, re-exports, dynamic imports and worker URLs. */
function relativeSpecifiers(source: string): string[] {
  const pattern = /(?:from\s+|import\s*\(\s*|import\s+|new\s+URL\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g;
  return [...source.matchAll(pattern)].map((match) => match[1]);
}

function capabilityOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  return parts.length === 1 ? ROOT : parts[0];
}

/** Every import that crosses a capability against the rules, as "importer -> target: why". */
function violations(files: readonly string[], read: (file: string) => string): string[] {
  const found: string[] = [];
  for (const file of files) {
    const from = capabilityOf(file);
    for (const specifier of relativeSpecifiers(read(file))) {
      const target = resolve(dirname(file), specifier);
      if (relative(SRC, target).startsWith('..')) continue;
      const to = capabilityOf(target);
      if (to === from) continue;
      const where = `${relative(SRC, file)} -> ${relative(SRC, target)}`;
      if (to === ROOT) {
        if (from !== ROOT) found.push(`${where}: only the root files import app.ts, main.ts or cli.ts`);
        continue;
      }
      if (relative(join(SRC, to), target) !== 'index.ts') {
        found.push(`${where}: another capability is used only through its index.ts`);
      }
      if (from !== ROOT && !(ALLOWED_IMPORTS[from] ?? []).includes(to)) {
        found.push(`${where}: ${from} may not import ${to}`);
      }
    }
  }
  return found;
}

test('architecture: every folder under src/ is a capability with an index.ts and a place in the rules', () => {
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
  const unknown = folders.filter((folder) => !(folder in ALLOWED_IMPORTS));
  assert.deepEqual(unknown, [], 'a new capability gets its line in ALLOWED_IMPORTS');
  const withoutIndex = folders.filter(
    (folder) => !sourceFiles(join(SRC, folder)).includes(join(SRC, folder, 'index.ts')),
  );
  assert.deepEqual(withoutIndex, []);
});

test('architecture: the allowed imports have no cycle, so the flow reads one way', () => {
  const visiting = new Set<string>();
  const done = new Set<string>();
  const cycles: string[] = [];
  const visit = (capability: string, path: string[]) => {
    if (done.has(capability)) return;
    if (visiting.has(capability)) {
      cycles.push([...path, capability].join(' -> '));
      return;
    }
    visiting.add(capability);
    for (const next of ALLOWED_IMPORTS[capability] ?? []) visit(next, [...path, capability]);
    visiting.delete(capability);
    done.add(capability);
  };
  for (const capability of Object.keys(ALLOWED_IMPORTS)) visit(capability, []);
  assert.deepEqual(cycles, []);
});

test('architecture: imports cross capabilities only through index.ts and along the flow', () => {
  const files = sourceFiles(SRC);
  assert.deepEqual(
    violations(files, (file) => readFileSync(file, 'utf8')),
    [],
  );
});

test('architecture: the check reports an import around index.ts and one against the flow', () => {
  const sources: Record<string, string> = {
    [join(SRC, 'delivery', 'worker.ts')]: "import { ingest } from '../ingest/index.ts';",
    [join(SRC, 'mail', 'reader.ts')]: "import { openDatabase } from '../db/database.ts';",
    [join(SRC, 'routing', 'rules.ts')]: "const { x } = await import('../app.ts');",
  };
  assert.deepEqual(
    violations(Object.keys(sources), (file) => sources[file]),
    [
      'delivery/worker.ts -> ingest/index.ts: delivery may not import ingest',
      'mail/reader.ts -> db/database.ts: another capability is used only through its index.ts',
      'routing/rules.ts -> app.ts: only the root files import app.ts, main.ts or cli.ts',
    ],
  );
});

/**
 * Files of a capability that import a value, not only types, from config/index.ts: its values load TypeBox's
 * validator, hundreds of modules and megabytes of heap in every worker thread whose module graph reaches them.
 * The root files read the configuration and hand each capability what it needs.
 */
function configValueImports(files: readonly string[], read: (file: string) => string): string[] {
  const valueImport = /^(?:import|export)\s+(?!type\s)[^;]*?from\s+['"]\.\.\/config\/index\.ts['"]/m;
  return files
    .filter((file) => !['config', ROOT].includes(capabilityOf(file)) && valueImport.test(read(file)))
    .map((file) => relative(SRC, file));
}

test('architecture: capabilities import only types from config, so no thread loads TypeBox for them', () => {
  assert.deepEqual(
    configValueImports(sourceFiles(SRC), (file) => readFileSync(file, 'utf8')),
    [],
  );
  const sources: Record<string, string> = {
    [join(SRC, 'db', 'open.ts')]: "import { ConfigError, type DatabaseConfig } from '../config/index.ts';",
    [join(SRC, 'blobs', 'store.ts')]: "import type { BlobConfig } from '../config/index.ts';",
    [join(SRC, 'server.ts')]: "import { loadConfig } from './config/index.ts';",
  };
  assert.deepEqual(
    configValueImports(Object.keys(sources), (file) => sources[file]),
    [join('db', 'open.ts')],
  );
});

test('architecture: no source file under src/ is over 400 lines', () => {
  const files = (function all(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? all(join(dir, entry.name)) : [join(dir, entry.name)],
    );
  })(SRC).filter((file) => /\.(ts|js|css|html)$/.test(file));
  const long = files
    .map((file) => ({ file: relative(SRC, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > 400);
  assert.deepEqual(long, []);
});
