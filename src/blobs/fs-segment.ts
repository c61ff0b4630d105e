import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';

/**
 * A record in a segment: an 8-byte header (4-byte tag, then the blob's length as uint32 LE) and the blob's bytes.
 * The header makes a segment readable without the database: recovery walks it to find the blobs no row refers to.
 */
export const HEADER_BYTES = 8;
const LIVE = Buffer.from('MRB1');
export const DEAD = Buffer.from('MRB0');
/** A segment takes new blobs until it holds this much; then the next blob starts a new one. */
const SEGMENT_BYTES = 64 * 1024 * 1024;
/**
 * How far ahead of its records a segment is written with zeros. A synchronous write within the file's size makes only
 * its bytes durable; one that extends the file also commits the new size to the filesystem's journal, which takes
 * longer and holds up every other synchronous write on the disk (PostgreSQL's commits among them).
 */
const RUNWAY_BYTES = 1024 * 1024;

/** Makes a directory's entries, or a file's bytes, durable. */
export async function syncPath(path: string) {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function recordHeader(length: number): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  LIVE.copy(header);
  header.writeUInt32LE(length, LIVE.length);
  return header;
}

/** The header at `position`: whether its record is live, and its length; undefined when there is none to read. */
async function readHeader(
  handle: FileHandle,
  position: number,
): Promise<{ live: boolean; length: number } | undefined> {
  const header = Buffer.alloc(HEADER_BYTES);
  const { bytesRead } = await handle.read(header, 0, HEADER_BYTES, position);
  if (bytesRead < HEADER_BYTES) return undefined;
  const tag = header.subarray(0, LIVE.length);
  const live = tag.equals(LIVE);
  if (!live && !tag.equals(DEAD)) return undefined;
  return { live, length: header.readUInt32LE(LIVE.length) };
}

/**
 * Whether a live record of `length` bytes starts at `offset`: a deleted one, a made-up key, or one the file no longer
 * holds whole (a segment cut short on disk) does not, so its bytes are never served as if complete.
 */
export async function isLiveRecord(handle: FileHandle, offset: number, length: number): Promise<boolean> {
  if (offset < HEADER_BYTES) return false;
  const header = await readHeader(handle, offset - HEADER_BYTES);
  if (header?.live !== true || header.length !== length) return false;
  return (await handle.stat()).size >= offset + length;
}

/** The keys of a segment's live records, in order. A torn or unreadable record ends the walk. */
export async function* readRecords(handle: FileHandle, segmentKey: string): AsyncIterable<string> {
  const { size } = await handle.stat();
  let position = 0;
  while (position + HEADER_BYTES <= size) {
    const header = await readHeader(handle, position);
    const offset = position + HEADER_BYTES;
    if (!header || offset + header.length > size) return;
    if (header.live) yield `${segmentKey}/${offset}-${header.length}`;
    position = offset + header.length;
  }
}

interface PendingAppend {
  buffers: Buffer[];
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * The segment puts append to. Each put reserves its place at once (so its key is known), and queued records are
 * written in one positioned, synchronous (O_DSYNC) writev, while the next records queue behind.
 */
export class Segment {
  readonly key: string;
  readonly dir: string;
  /** Bytes reserved so far: the offset the next record starts at. */
  private size = 0;
  /** Set when a write failed or the segment was sealed: it takes no more records. */
  private closed = false;
  private readonly handle: Promise<FileHandle>;
  private queue: PendingAppend[] = [];
  private written = 0;
  private writing: Promise<void> | undefined;
  /** Bytes of the file that are on disk, records and the zeros written ahead of them. */
  private allocated = 0;
  /** The zeros being written ahead, from `allocated` on; a record that would reach past `allocated` waits for them. */
  private extending: Promise<void> | undefined;
  /** Records reserved (durable or on their way) and not deleted; a failed write takes its records off. */
  private liveRecords = 0;

  constructor(key: string, dir: string, path: string, dirReady: Promise<void>) {
    this.key = key;
    this.dir = dir;
    this.handle = dirReady.then(async () => {
      // O_DSYNC: a write returns once its bytes are durable, so a batch costs one trip to the thread pool, not two
      // (a write, then an fdatasync).
      const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_DSYNC);
      // The new file's entry is made durable once; after that each synchronous write makes its records durable.
      try {
        await syncPath(this.dir);
      } catch (error) {
        // Nothing will close a handle the segment never got: left to the garbage collector, the process would end.
        await handle.close();
        throw error;
      }
      return handle;
    });
    this.handle.catch(() => {});
  }

  /** Whether a record of `bytes` for `dir` goes here (a record larger than a segment gets an empty one). */
  accepts(dir: string, bytes: number): boolean {
    return !this.closed && this.dir === dir && (this.size === 0 || this.size + bytes <= SEGMENT_BYTES);
  }

  /** Queues a record; resolves with the offset of its bytes once they are durable. */
  append(chunks: readonly Buffer[], size: number): Promise<number> {
    const offset = this.size + HEADER_BYTES;
    this.size = offset + size;
    this.liveRecords++;
    return new Promise<number>((resolve, reject) => {
      const failed = (error: unknown) => {
        this.liveRecords--;
        reject(error);
      };
      this.queue.push({ buffers: [recordHeader(size), ...chunks], resolve: () => resolve(offset), reject: failed });
      this.writing ??= this.drain();
    });
  }

  /** Counts a deleted record off; returns how many are left, those still being written included. */
  recordDeleted(): number {
    return --this.liveRecords;
  }

  get liveRecordCount(): number {
    return this.liveRecords;
  }

  /** Takes no more records; resolves once those queued are written and the file is closed. */
  async seal(): Promise<void> {
    this.closed = true;
    await this.writing;
    await this.extending;
    const handle = await this.handle.catch(() => undefined);
    // The zeros past the last record would only take space: a segment's file ends with its last record.
    await handle?.truncate(this.written).catch(() => {});
    await handle?.close().catch(() => {});
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0);
      const buffers = batch.flatMap((pending) => pending.buffers);
      const length = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
      try {
        const handle = await this.handle;
        if (this.written + length > this.allocated) await this.extending;
        // A write cut short (a disk filling up) is followed by one of the rest, which completes or fails with ENOSPC.
        for (let done = 0; done < length; ) {
          const { bytesWritten } = await handle.writev(unwritten(buffers, done), this.written + done);
          if (bytesWritten === 0) throw new Error(`segment ${this.key}: wrote ${done} of ${length} bytes`);
          done += bytesWritten;
        }
        this.written += length;
        this.allocated = Math.max(this.allocated, this.written);
        for (const pending of batch) pending.resolve();
        this.writeAhead(handle);
      } catch (error) {
        // What follows the failed write cannot be placed reliably: this segment takes nothing more.
        this.closed = true;
        for (const pending of [...batch, ...this.queue.splice(0)]) pending.reject(error);
      }
    }
    this.writing = undefined;
  }

  /**
   * Starts writing the next RUNWAY_BYTES of zeros once less than half of the last ones is left. A failure (a full
   * disk) is left for the records' own writes to meet and report.
   */
  private writeAhead(handle: FileHandle) {
    const from = this.allocated;
    const length = Math.min(RUNWAY_BYTES, SEGMENT_BYTES - from);
    if (this.extending || this.closed || from - this.written >= RUNWAY_BYTES / 2 || length <= 0) return;
    this.extending = zeroRange(handle, from, length)
      .then(
        () => {
          this.allocated = Math.max(this.allocated, from + length);
        },
        () => {},
      )
      .finally(() => {
        this.extending = undefined;
      });
  }
}

/** What is left of `buffers` once their first `skip` bytes were written. */
function unwritten(buffers: Buffer[], skip: number): Buffer[] {
  if (skip === 0) return buffers;
  const rest: Buffer[] = [];
  for (const buffer of buffers) {
    if (skip < buffer.length) rest.push(buffer.subarray(skip));
    skip = Math.max(0, skip - buffer.length);
  }
  return rest;
}

const ZEROS = Buffer.alloc(1024 * 1024);

export async function zeroRange(handle: FileHandle, offset: number, length: number): Promise<void> {
  for (let done = 0; done < length; done += ZEROS.length) {
    await handle.write(ZEROS, 0, Math.min(ZEROS.length, length - done), offset + done);
  }
}
