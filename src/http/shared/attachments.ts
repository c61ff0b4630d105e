import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { NotFound } from '../../core/index.ts';
import type { AttachmentInfo, MailService } from '../../mail/index.ts';
import { errorResponses } from '../schemas.ts';
import type { Api, Tags } from './api.ts';

interface AttachmentRouteOptions {
  tags: Tags;
  mail: MailService;
}

/** `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<RFC 5987>` for any name, unicode included. */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

function sendAttachment(reply: FastifyReply, found: { attachment: AttachmentInfo; index: number; stream: unknown }) {
  const { attachment, index } = found;
  return reply
    .header('content-type', attachment.contentType || 'application/octet-stream')
    .header('content-length', attachment.size)
    .header('content-disposition', contentDisposition(attachment.filename || `attachment-${index + 1}`))
    .header('cache-control', 'private, max-age=3600')
    .send(found.stream);
}

const Binary = Type.String({ contentMediaType: 'application/octet-stream', description: 'The decoded file' });

/**
 * Attachment downloads, streamed out of the raw message (never held in memory). By name the first attachment with
 * that filename answers; by part, the 0-based index in the email's attachment list (the webhooks' downloadUrl).
 */
export function downloadAttachmentByIndex(app: Api, { tags, mail }: AttachmentRouteOptions) {
  app.get(
    '/attachments/:emailId/parts/:index',
    {
      schema: {
        tags,
        summary: 'Download attachment by its position',
        params: Type.Object({ emailId: Type.String(), index: Type.String() }),
        response: { 200: Binary, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { emailId, index } = request.params;
      if (!/^(0|[1-9][0-9]{0,5})$/.test(index)) throw new NotFound('Attachment not found');
      const found = await mail.openAttachment(request.account.id, emailId, { index: Number(index) });
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
