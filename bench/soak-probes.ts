/**
 * What the soak (see soak.ts) reads of Mailroom from outside it: the process's resident memory, the files under its
 * data directory, and its database, which the bench also writes to age mail (retention periods are whole days).
 */
import { type Dirent, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';

/** A process's resident memory in MB, or null when it is gone. */
export function rssMb(pid: number | undefined): number | null {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : null;
  } catch {
    return null;
  }
}

/** The files under `dir` with their sizes (a file removed while listed is left out). */
export function filesUnder(dir: string): Map<string, number> {
  const files = new Map<string, number>();
  let entries: Dirent[] = [];
  try {
    entries = readdirSync(dir, { recursive: true, withFileTypes: true });
  } catch {}
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    try {
      files.set(path, statSync(path).size);
    } catch {}
  }
  return files;
}

export interface DatabaseProbe {
  /**
   * Moves the received time of the emails received in [floor, cutoff) two days back, as if two days had passed for
   * them; resolves to their ids.
   */
  age(cutoff: string, floor: string): Promise<string[]>;
  emailIds(): Promise<Set<string>>;
  /** SQLite: the files' sizes, WAL included; PostgreSQL: the schema's tables with their indexes and TOAST. */
  sizeBytes(): Promise<number>;
  /** SQLite: the share of the main database's pages free for reuse. */
  freeShare(): Promise<number | undefined>;
  close(): Promise<void>;
}

/** The SQLite database of the data directory `dataDir`. */
export function sqliteProbe(dataDir: string): DatabaseProbe {
  const file = join(dataDir, 'mailroom.sqlite');
  // A connection per use: none is left open across the kill, where it would change what recovery finds.
  const use = <T>(work: (db: DatabaseSync) => T): T => {
    const db = new DatabaseSync(file, { timeout: 5000 });
    try {
      return work(db);
    } finally {
      db.close();
    }
  };
  return {
    async age(cutoff, floor) {
      const sql = `update emails set received_at = strftime('%Y-%m-%dT%H:%M:%fZ', received_at, '-2 days')
        where received_at < ? and received_at >= ? returning id`;
      return use((db) => db.prepare(sql).all(cutoff, floor)).map((row) => String(row.id));
    },
    async emailIds() {
      return new Set(use((db) => db.prepare('select id from emails').all()).map((row) => String(row.id)));
    },
    async sizeBytes() {
      const files = readdirSync(dataDir).filter((name) => /\.sqlite(-wal|-shm)?$/.test(name));
      return files.reduce((sum, name) => sum + statSync(join(dataDir, name)).size, 0);
    },
    async freeShare() {
      return use((db) => {
        const free = Number(db.prepare('pragma freelist_count').get()!.freelist_count);
        const pages = Number(db.prepare('pragma page_count').get()!.page_count);
        return Math.round((free / pages) * 1000) / 1000;
      });
    },
    async close() {},
  };
}

/** The PostgreSQL schema `schema` at `url`. */
export function postgresProbe(url: string, schema: string): DatabaseProbe {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const emails = `"${schema}".emails`;
  return {
    async age(cutoff, floor) {
      const result = await pool.query(
        `update ${emails} set received_at = to_char((received_at::timestamptz - interval '2 days') at time zone 'UTC',
          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') where received_at < $1 and received_at >= $2 returning id`,
        [cutoff, floor],
      );
      return result.rows.map((row) => String(row.id));
    },
    async emailIds() {
      return new Set((await pool.query(`select id from ${emails}`)).rows.map((row) => String(row.id)));
    },
    async sizeBytes() {
      const result = await pool.query(
        `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as bytes from pg_class c
          join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relkind = 'r'`,
        [schema],
      );
      return Number(result.rows[0].bytes);
    },
    async freeShare() {
      return undefined;
    },
    close: () => pool.end(),
  };
}
