import { PassThrough, type Readable } from 'node:stream';
import type { AttachmentInfo } from './stored-email.ts';

/**
 * The part's bytes, ending as soon as its known size has passed. The parser only ends a part when it reads what
 * follows it, and a response that ends late keeps the client's keep-alive connection busy (a closing server then
 * waits for it). The source is always read to its end, so the parser releases the part and closes the raw message.
 */
export function endAfter(source: Readable, size: number): Readable {
  const out = new PassThrough();
  let remaining = size;
  const finish = () => {
    if (!out.writableEnded && !out.destroyed) out.end();
    source.resume();
  };
  if (remaining === 0) finish();
  source.on('data', (chunk: Buffer) => {
    // A reader gone (a client that hung up) is not written to: the write would fail and pause the source for good,
    // leaving the raw message's file open until the garbage collector finds it, which ends the process.
    if (remaining <= 0 || out.destroyed) return;
    const part = chunk.length > remaining ? chunk.subarray(0, remaining) : chunk;
    remaining -= part.length;
    const flowing = out.write(part);
    if (remaining === 0) finish();
    else if (!flowing) source.pause();
  });
  out.on('drain', () => source.resume());
  out.on('close', () => source.resume());
  source.on('end', finish);
  source.on('error', (error) => out.destroy(error));
  return out;
}

/**
 * The first attachment with that filename. Webhooks name an unnamed part `attachment` in its download URL, so that
 * name also finds the first unnamed part when no part is called so.
 */
export function indexByName(attachments: AttachmentInfo[], filename: string): number {
  const named = attachments.findIndex((attachment) => attachment.filename === filename);
  if (named >= 0 || filename !== 'attachment') return named;
  return attachments.findIndex((attachment) => !attachment.filename);
}
