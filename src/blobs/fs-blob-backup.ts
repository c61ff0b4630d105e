import { copyFile, mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { syncPath } from './fs-segment.ts';

/**
 * Copies the files of the filesystem blob store at `root` to `target` while a server may be writing them, and makes
 * the copies durable. Taken after the database's copy, it holds every blob that copy's rows name: a blob is durable
 * before its row is committed, and a segment's records stay where they are (closing one cuts only the zeros past
 * them). A file removed meanwhile (a segment whose records were all deleted) is left out, as that mail was deleted
 * after the database was copied.
 */
export async function backUpFsBlobStore(root: string, target: string): Promise<{ files: number; bytes: number }> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch((error) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  });
  // Made even with no file to copy: a store that holds none yet is still restored as an empty directory.
  await mkdir(target, { recursive: true });
  const dirs = new Set<string>([target]);
  let files = 0;
  let bytes = 0;
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const from = join(entry.parentPath, entry.name);
    const to = join(target, relative(root, from));
    await mkdir(dirname(to), { recursive: true });
    for (let dir = dirname(to); dir.startsWith(target); dir = dirname(dir)) dirs.add(dir);
    const copied = await copyFile(from, to).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return false;
        throw error;
      },
    );
    if (!copied) continue;
    await syncPath(to);
    files += 1;
    bytes += (await stat(to)).size;
  }
  for (const dir of dirs) await syncPath(dir);
  return { files, bytes };
}
