import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { AttachmentInfo, MailService } from '../../mail/index.ts';
import { errorResponses, Nullable } from '../schemas.ts';
import type { Api, Tags } from './api.ts';

interface AttachmentRouteOptions {
  tags: Tags;
  mail: MailService;
}

/**
 * `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<RFC 5987>` for any name, unicode included. A lone
 * surrogate (a UTF-16 encoded word can decode to one) has no UTF-8 and is sent as U+FFFD; encodeURIComponent throws.
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(filename.toWellFormed()).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * A media type as RFC 9110 spells it (`type/subtype`, both tokens), each name at most 127 characters (RFC 6838);
 * parameters are not stored with it.
 */
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,127}\/[!#$%&'*+.^_`|~0-9A-Za-z-]{1,127}$/;

/**
 * The longest file name served, in characters. Content-Disposition carries it twice, once percent-encoded, and Node's
 * fetch refuses a response whose headers pass 16 KB: a sender's longer name would make the part impossible to get.
 */
const MAX_FILENAME_CHARACTERS = 255;

/** The name cut to MAX_FILENAME_CHARACTERS, keeping its extension. */
function servedFilename(filename: string): string {
  const characters = Array.from(filename);
  if (characters.length <= MAX_FILENAME_CHARACTERS) return filename;
  const extension = /\.[^.]{1,16}$/.exec(filename)?.[0] ?? '';
  return characters.slice(0, MAX_FILENAME_CHARACTERS - Array.from(extension).length).join('') + extension;
}

function sendAttachment(reply: FastifyReply, found: { attachment: AttachmentInfo; index: number; stream: unknown }) {
  const { attachment, index } = found;
  // The sender chose the type: one that is not a media type (control bytes, raw UTF-8) is no valid header value and
  // is served as plain bytes; nosniff keeps browsers to the type served.
  return reply
    .header(
      'content-type',
      MEDIA_TYPE.test(attachment.contentType) ? attachment.contentType : 'application/octet-stream',
    )
    .header('x-content-type-options', 'nosniff')
    .header('content-length', attachment.size)
    .header('content-disposition', contentDisposition(servedFilename(attachment.filename || `attachment-${index + 1}`)))
    .header('cache-control', 'private, max-age=3600')
    .send(found.stream);
}

/** A download's answer: the decoded file with the part's own Content-Type (errors stay JSON). */
const Binary = {
  description: "The decoded file, served with the part's own Content-Type",
  content: { '*/*': { schema: Type.String({ contentMediaType: 'application/octet-stream' }) } },
};

const ListedAttachmentSchema = Type.Object({
  id: Type.String({ description: '`att_<index>_<first 12 hex of the SHA-256 of the content>`: stable for the email' }),
  index: Type.Integer({ description: '0-based position in the email attachment list' }),
  filename: Nullable(Type.String({ description: 'null for an unnamed part' })),
  contentType: Type.String(),
  size: Type.Integer(),
  contentId: Nullable(Type.String()),
  contentDisposition: Nullable(Type.String()),
});

/** Every attachment part of an email, unnamed and same-named ones included, with ids to download them by. */
export function listAttachments(app: Api, { tags, mail }: AttachmentRouteOptions) {
  app.get(
    '/attachments/:emailId',
    {
      schema: {
        tags,
        summary: 'List the attachments of an email',
        params: Type.Object({ emailId: Type.String() }),
        response: { 200: Type.Object({ data: Type.Array(ListedAttachmentSchema) }), ...errorResponses },
      },
    },
    async (request) => {
      const listed = await mail.listAttachments(request.account.id, request.params.emailId);
      return {
        data: listed.map((attachment) => ({
          id: attachment.id,
          index: attachment.index,
          filename: attachment.filename,
          contentType: attachment.contentType,
          size: attachment.size,
          contentId: attachment.contentId,
          contentDisposition: attachment.contentDisposition,
        })),
      };
    },
  );
}

/**
 * Attachment downloads, streamed out of the raw message (never held in memory). By name the first attachment with
 * that filename answers; by part, the 0-based index in the email's attachment list (the webhooks' downloadUrl) or
 * the id the listing gives.
 */
export function downloadAttachmentByIndex(app: Api, { tags, mail }: AttachmentRouteOptions) {
  app.get(
    '/attachments/:emailId/parts/:idOrIndex',
    {
      schema: {
        tags,
        summary: 'Download attachment by its position or id',
        params: Type.Object({ emailId: Type.String(), idOrIndex: Type.String() }),
        response: { 200: Binary, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { emailId, idOrIndex } = request.params;
      const selector = /^(0|[1-9][0-9]{0,5})$/.test(idOrIndex) ? { index: Number(idOrIndex) } : { id: idOrIndex };
      const found = await mail.openAttachment(request.account.id, emailId, selector);
      return sendAttachment(reply, found);
    },
  );
}

export function downloadAttachmentByName(app: Api, { tags, mail }: AttachmentRouteOptions) {
  app.get(
    '/attachments/:emailId/:filename',
    {
      schema: {
        tags,
        summary: 'Download attachment by filename',
        params: Type.Object({ emailId: Type.String(), filename: Type.String() }),
        response: { 200: Binary, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { emailId, filename } = request.params;
      const found = await mail.openAttachment(request.account.id, emailId, { filename });
      return sendAttachment(reply, found);
    },
  );
}
