import { type FileHandle, mkdir, open, readdir, rm } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { Readable } from 'node:stream';
import { newId } from '../core/index.ts';
import { assertSafeKey, BlobNotFound, type BlobStore, type ListedBlob, type StoredBlob } from './blob-store.ts';
import { DEAD, HEADER_BYTES, isLiveRecord, readRecords, Segment, syncPath, zeroRange } from './fs-segment.ts';

const MAX_BLOB_BYTES = 0xffff_ffff;
const SEGMENT_SUFFIX = '.seg';
/** `raw/2026/11/24/seg_x.seg/1048576-10342`: the blob of 10,342 bytes at offset 1,048,576 of that segment. */
const SEGMENT_RANGE = /^(.+\.seg)\/(\d+)-(\d+)$/;

/** Where a key's bytes are: a file of its own, or a record of a segment file. */
type Located =
  | { kind: 'file'; path: string }
  | { kind: 'record'; path: string; segmentKey: string; offset: number; length: number };

/**
 * Blobs on the filesystem, appended to segment files: a put writes a record (header and bytes) at the end of the
 * active segment, and resolves once the write that carries it has returned. Segments are opened with O_DSYNC, so a
 * write returns only when its bytes are durable. Puts that arrive while a write is under way share the next one, so
 * a burst of messages costs a few synchronous writes, not one file creation, write, fsync, close and directory fsync
 * each.
 *
 * A key is `<segment>/<offset>-<length>`; keys of blobs stored one file each (by earlier versions) still read and
 * delete as files. Deleting a segment's blob marks its record dead; a segment whose records are all dead, none still
 * being written, is removed (the active one is sealed first), which is how expired mail gives its space back:
 * segments fill in time order, so mail expiring in time order empties whole segments. Records are not moved to
 * compact a segment that still holds live ones, as a key names its record's place and is stored in the emails' rows.
 * A crash mid-write can leave a torn record at a segment's end, never one a stored email refers to (rows are
 * committed only after the put resolved), and ingest's start-up recovery marks dead the records no row refers to.
 * A segment not closed (a crash) also keeps the zeros written ahead of its records; a walk ends at them.
 * One process writes a directory's segments: the filesystem store is for a single Mailroom process (scale-out
 * uses S3).
 */
export async function openFsBlobStore(root: string): Promise<BlobStore> {
  await mkdir(root, { recursive: true });
  const syncedDirs = new Set<string>();
  let active: Segment | undefined;
  /** Segments this process created, by key; each counts its records from the moment they are reserved. */
  const ownSegments = new Map<string, Segment>();
  /** Live records per segment of an earlier run, counted the first time one of its records is deleted. */
  const liveRecords = new Map<string, number>();
  let deletions: Promise<void> = Promise.resolve();

  async function ensureDurableDir(dir: string) {
    if (syncedDirs.has(dir)) return;
    await mkdir(dir, { recursive: true });
    // The directory's own entry must be durable before a file in it is relied on.
    await syncPath(dirname(dir));
    syncedDirs.add(dir);
  }

  function segmentFor(dir: string, bytes: number): Segment {
    if (active?.accepts(dir, bytes)) return active;
    if (active) retire(active);
    const key = `${relative(root, dir).split(sep).join('/')}/${newId('seg')}${SEGMENT_SUFFIX}`;
    active = new Segment(key, dir, join(root, key), ensureDurableDir(dir));
    ownSegments.set(key, active);
    return active;
  }

  /** Seals (not awaited) the segment puts leave; one left with no record (its writes failed: a full disk) goes. */
  function retire(segment: Segment) {
    if (segment.liveRecordCount > 0) void segment.seal();
    else removeSegment(segment.key, join(root, segment.key), segment).catch(() => {});
  }

  function locate(key: string): Located {
    assertSafeKey(key);
    const range = SEGMENT_RANGE.exec(key);
    if (!range) return { kind: 'file', path: join(root, key) };
    const segmentKey = range[1]!;
    return {
      kind: 'record',
      path: join(root, segmentKey),
      segmentKey,
      offset: Number(range[2]),
      length: Number(range[3]),
    };
  }

  async function openForRead(key: string, start: number, end: number | undefined): Promise<Readable> {
    const blob = locate(key);
    let handle: FileHandle;
    try {
      handle = await open(blob.path, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFound(key);
      throw error;
    }
    if (blob.kind === 'file') return handle.createReadStream({ start, ...(end === undefined ? {} : { end }) });
    let live: boolean;
    try {
      live = await isLiveRecord(handle, blob.offset, blob.length);
    } catch (error) {
      // Closed by the garbage collector instead, the handle would end the process (an uncaught error in Node).
      await handle.close();
      throw error;
    }
    if (!live) {
      await handle.close();
      throw new BlobNotFound(key);
    }
    const last = Math.min(end ?? blob.length - 1, blob.length - 1);
    if (last < start) {
      await handle.close();
      return Readable.from([]);
    }
    return handle.createReadStream({ start: blob.offset + start, end: blob.offset + last });
  }

  async function deleteRecord(blob: Extract<Located, { kind: 'record' }>) {
    let handle: FileHandle;
    try {
      handle = await open(blob.path, 'r+');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    let remaining: number | undefined;
    const own = ownSegments.get(blob.segmentKey);
    try {
      if (!(await isLiveRecord(handle, blob.offset, blob.length))) return;
      // A deleted message must not stay readable in its segment until the segment goes: its bytes are zeroed first.
      await zeroRange(handle, blob.offset, blob.length);
      // No fsync: a mark lost in a crash only leaves the record for the next recovery to find again.
      await handle.write(DEAD, 0, DEAD.length, blob.offset - HEADER_BYTES);
      if (own) remaining = own.recordDeleted();
      else {
        remaining = liveRecords.get(blob.segmentKey);
        if (remaining === undefined) {
          remaining = 0;
          for await (const _record of readRecords(handle, blob.segmentKey)) remaining++;
        } else remaining--;
        liveRecords.set(blob.segmentKey, remaining);
      }
    } finally {
      await handle.close();
    }
    if (remaining === 0) await removeSegment(blob.segmentKey, blob.path, own);
  }

  /** Removes a segment without live records; one of this process is sealed first, so no put lands in it after. */
  async function removeSegment(segmentKey: string, path: string, own: Segment | undefined) {
    liveRecords.delete(segmentKey);
    if (own) {
      // A put may have reserved a record while the deletion awaited its file.
      if (own.liveRecordCount > 0) return;
      if (active === own) active = undefined;
      ownSegments.delete(segmentKey);
      await own.seal();
    }
    await rm(path, { force: true });
  }

  return {
    kind: 'fs',
    async put(name: string, chunks: readonly Buffer[]): Promise<StoredBlob> {
      assertSafeKey(name);
      const size = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      if (size > MAX_BLOB_BYTES) throw new Error(`Blob ${name} is larger than a segment record can hold`);
      const segment = segmentFor(join(root, dirname(name)), HEADER_BYTES + size);
      const offset = await segment.append(chunks, size);
      return { key: `${segment.key}/${offset}-${size}`, size };
    },
    get: (key) => openForRead(key, 0, undefined),
    getRange: (key, start, end) => openForRead(key, start, end),
    async delete(key) {
      const blob = locate(key);
      if (blob.kind === 'file') return rm(blob.path, { force: true });
      // One at a time, so two deletions of one record cannot both find it live and count it off twice.
      const deletion = deletions.then(() => deleteRecord(blob));
      deletions = deletion.catch(() => {});
      await deletion;
    },
    async *list(prefix: string): AsyncIterable<ListedBlob> {
      const base = join(root, prefix.replace(/\/+$/, ''));
      let paths: string[];
      try {
        paths = (await readdir(base, { recursive: true, withFileTypes: true }))
          .filter((entry) => entry.isFile())
          .map((entry) => join(entry.parentPath, entry.name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      for (const path of paths) {
        const key = relative(root, path).split(sep).join('/');
        // A file removed since the directory was read (a segment emptied meanwhile) has nothing left to list.
        const handle = await open(path, 'r').catch((error: NodeJS.ErrnoException) => {
          if (error.code === 'ENOENT') return undefined;
          throw error;
        });
        if (!handle) continue;
        try {
          const { mtime } = await handle.stat();
          if (!key.endsWith(SEGMENT_SUFFIX)) yield { key, lastModified: mtime };
          else for await (const record of readRecords(handle, key)) yield { key: record, lastModified: mtime };
        } finally {
          await handle.close();
        }
      }
    },
    location: (key) => ({ bucketName: 'fs', objectKey: key }),
    async close() {
      await active?.seal();
      active = undefined;
    },
  };
}
