import { Type } from 'typebox';
import { DateTime, Nullable } from './schemas.ts';

const AddressGroup = Type.Object(
  {
    text: Type.String(),
    addresses: Type.Array(Type.Object({ name: Nullable(Type.String()), address: Nullable(Type.String()) })),
  },
  { description: 'An address header as written (`text`) and parsed; `{ "text": "", "addresses": [] }` when absent' },
);

const Attachment = Type.Object({
  filename: Type.String({ description: '"" when the part has no name' }),
  contentType: Type.String(),
  size: Type.Integer({ description: 'bytes, decoded' }),
  contentId: Type.String({ description: '"" when the part has no Content-ID' }),
  contentDisposition: Type.String({ description: 'as the part says it, lower-cased; `attachment` when it does not' }),
  downloadUrl: Type.String({ description: '`GET` it with the API key (bearer) for the decoded bytes' }),
});

const HeaderMap = Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())]), {
  description: 'Header fields by lower-cased name, decoded; a repeated field as an array',
});

/** The `email.received` body as Mailroom sends it (see src/delivery/email-received-payload.ts). */
const EmailReceivedBody = Type.Object({
  event: Type.Literal('email.received'),
  timestamp: Type.String({ format: 'date-time', description: 'when this attempt was sent' }),
  email: Type.Object({
    id: Type.String(),
    messageId: Type.String({ description: '"" when the message has none' }),
    from: AddressGroup,
    to: AddressGroup,
    recipient: Type.String({ description: 'the address the message was received for' }),
    subject: Type.String(),
    receivedAt: DateTime,
    threadId: Nullable(Type.String()),
    threadPosition: Nullable(Type.Integer()),
    parsedData: Type.Object({
      messageId: Type.String(),
      date: Type.Optional(Type.String({ format: 'date-time', description: 'the Date header; absent when unreadable' })),
      subject: Type.String(),
      from: AddressGroup,
      to: AddressGroup,
      cc: Nullable(AddressGroup),
      bcc: Nullable(AddressGroup),
      replyTo: Nullable(AddressGroup),
      inReplyTo: Type.Optional(Type.String()),
      references: Type.Array(Type.String()),
      textBody: Nullable(Type.String()),
      htmlBody: Nullable(Type.String()),
      raw: Type.String({ description: 'the message as stored; "" when over 4 MB' }),
      attachments: Type.Array(Attachment),
      headers: HeaderMap,
      priority: Type.Optional(Type.Union([Type.Literal('high'), Type.Literal('normal'), Type.Literal('low')])),
    }),
    cleanedContent: Type.Object({
      html: Nullable(Type.String({ description: 'the HTML body sanitized' })),
      text: Nullable(Type.String()),
      hasHtml: Type.Boolean(),
      hasText: Type.Boolean(),
      attachments: Type.Array(Attachment),
      headers: HeaderMap,
    }),
  }),
  endpoint: Type.Object({
    id: Type.String(),
    name: Type.String(),
    type: Type.Union([Type.Literal('webhook'), Type.Literal('email'), Type.Literal('email_group')]),
  }),
});

/** The body's JSON Schema as OpenAPI's types take it (TypeBox's own types carry more than they know). */
const bodySchema: object = EmailReceivedBody;

const header = (name: string, description: string, required = true) => ({
  in: 'header' as const,
  name,
  required,
  description,
  schema: { type: 'string' as const },
});

/**
 * The OpenAPI 3.1 `webhooks` entry for what Mailroom posts to a webhook endpoint, as Inbound documents it in its e2
 * document, so that clients generated from the documents type the body too.
 */
export const emailReceivedWebhook = {
  post: {
    summary: 'email.received',
    description:
      'Posted to the URL of the endpoint (or legacy webhook) a received message is routed to; under 1 MB, trimmed ' +
      'to fit as docs/internals.md describes. Verify `webhook-signature` over the raw body before parsing it.',
    parameters: [
      header('webhook-id', 'the delivery: the same on every attempt of it, so use it to dedupe'),
      header('webhook-timestamp', "this attempt's time, in Unix seconds"),
      header(
        'webhook-signature',
        'with a `secret`: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, space-separated from the old ' +
          "secret's for 24 hours after the secret changed",
        false,
      ),
      header('x-webhook-event', '`email.received`'),
      header('x-webhook-timestamp', "this attempt's time, ISO 8601; equals the body's `timestamp`"),
      header('x-endpoint-id', 'the endpoint (or legacy webhook) id'),
      header('x-email-id', 'the email id'),
      header('x-message-id', 'the Message-ID, or ""'),
      header('x-webhook-verification-token', "the endpoint's `config.verificationToken`"),
      header('user-agent', '`InboundEmail-Webhook/1.0`'),
    ],
    requestBody: { required: true, content: { 'application/json': { schema: bodySchema } } },
    responses: {
      '200': {
        description:
          'Any 2xx is success. Anything else is retried (`retryAttempts`), a 429 or 503 after its `Retry-After`; ' +
          'a 410 switches the endpoint off; redirects are not followed.',
      },
    },
  },
};
