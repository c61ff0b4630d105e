import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';

type Parsers = typeof import('./message-parser.ts') & typeof import('./extract-attachment.ts');

const require = createRequire(import.meta.url);
let parsers: Parsers | undefined;
/**
 * The parsing modules, loaded at a thread's first parse: with mailparser they hold some 6 MB of a thread's heap, and
 * threads that only store or send mail (ingest's writer) reach this capability through the others' indexes.
 */
const loaded = (): Parsers =>
  (parsers ??= { ...require('./message-parser.ts'), ...require('./extract-attachment.ts') });

export const parseMessage = (raw: readonly Buffer[]) => loaded().parseMessage(raw);
export const extractAttachment = (stored: Readable, index: number) => loaded().extractAttachment(stored, index);
export const hashAttachments = (stored: Readable) => loaded().hashAttachments(stored);
export const attachmentsWithContent = (stored: Buffer) => loaded().attachmentsWithContent(stored);
