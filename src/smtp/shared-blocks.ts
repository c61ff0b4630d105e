/** The first block's size; each next one doubles, up to the largest. */
const FIRST_BLOCK_BYTES = 16 * 1024;
const LARGEST_BLOCK_BYTES = 1024 * 1024;
/** First blocks kept for reuse: 4 MiB, as many as the messages of about 250 connections at once. */
const SPARE_FIRST_BLOCKS = 256;

/**
 * First blocks of released messages. A new SharedArrayBuffer costs its allocation and a page fault for each of its
 * pages on first write; most messages fit in their first block, so reusing first blocks spares most of that. Bigger
 * blocks are rare and left to the garbage collector.
 */
const spareFirstBlocks: Buffer[] = [];

/**
 * Collects a message's bytes into SharedArrayBuffers, so that ingest's worker threads read them without a copy.
 * The blocks are of fixed size, growing as the message does: a growable SharedArrayBuffer reserves its maximum
 * (the 40 MB message limit) of address space up front, and reserving and releasing that for every message costs
 * several times what a fixed block does.
 */
export class SharedBlocks {
  private readonly filled: Buffer[] = [];
  private current: Buffer | undefined;
  private used = 0;
  private nextBlockBytes = FIRST_BLOCK_BYTES;
  size = 0;

  append(chunk: Buffer): void {
    let rest = chunk;
    while (rest.length > 0) {
      if (!this.current || this.used === this.current.length) this.startBlock(rest.length);
      const block = this.current!;
      const taken = rest.copy(block, this.used);
      this.used += taken;
      this.size += taken;
      rest = rest.subarray(taken);
    }
  }

  /**
   * Hands the first block back for reuse by later messages (only a first block can be of the first size). Only for a
   * message that nothing reads any more, nor will: a reused block is overwritten.
   */
  release(): void {
    const first = this.filled[0] ?? this.current;
    if (first?.length === FIRST_BLOCK_BYTES && spareFirstBlocks.length < SPARE_FIRST_BLOCKS)
      spareFirstBlocks.push(first);
    this.filled.length = 0;
    this.current = undefined;
  }

  /** The bytes so far, in order, as views of the shared blocks. */
  blocks(): Buffer[] {
    if (!this.current || this.used === 0) return [...this.filled];
    return [...this.filled, this.current.subarray(0, this.used)];
  }

  private startBlock(wanted: number) {
    if (this.current) this.filled.push(this.current);
    const bytes = Math.max(this.nextBlockBytes, Math.min(wanted, LARGEST_BLOCK_BYTES));
    this.nextBlockBytes = Math.min(this.nextBlockBytes * 2, LARGEST_BLOCK_BYTES);
    this.current = (bytes === FIRST_BLOCK_BYTES && spareFirstBlocks.pop()) || Buffer.from(new SharedArrayBuffer(bytes));
    this.used = 0;
  }
}
