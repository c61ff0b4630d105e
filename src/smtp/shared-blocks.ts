/** The first block's size; each next one doubles, up to the largest. */
const FIRST_BLOCK_BYTES = 16 * 1024;
const LARGEST_BLOCK_BYTES = 1024 * 1024;

/**
 * Collects a message's bytes into SharedArrayBuffers, so that ingest's worker threads read them without a copy.
 * The blocks are of fixed size, growing as the message does: a growable SharedArrayBuffer reserves its maximum
 * (the 40 MB message limit) of address space up front, and reserving and releasing that for every message cost
 * about 200 µs of CPU against 30 for a fixed block.
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

  /** The bytes so far, in order, as views of the shared blocks. */
  blocks(): Buffer[] {
    if (!this.current || this.used === 0) return [...this.filled];
    return [...this.filled, this.current.subarray(0, this.used)];
  }

  private startBlock(wanted: number) {
    if (this.current) this.filled.push(this.current);
    const bytes = Math.max(this.nextBlockBytes, Math.min(wanted, LARGEST_BLOCK_BYTES));
    this.nextBlockBytes = Math.min(this.nextBlockBytes * 2, LARGEST_BLOCK_BYTES);
    this.current = Buffer.from(new SharedArrayBuffer(bytes));
    this.used = 0;
  }
}
