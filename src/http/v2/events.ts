import type { ServerResponse } from 'node:http';
import { Type } from 'typebox';
import type { AccountsService } from '../../accounts/index.ts';
import type { EventHub, StreamedEvent } from '../../events/index.ts';
import { ErrorBody, errorResponses } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';

/** A comment line this often keeps proxies and clients from taking a quiet stream for a dead one. */
const HEARTBEAT_MS = 15_000;
/** How long a client that lost the stream waits before reconnecting (the SSE `retry:` field). */
const RECONNECT_MS = 1000;
const EVENT_STREAM = 'text/event-stream; charset=utf-8';
/** A client this far behind is cut off rather than buffered for; it resumes with Last-Event-ID. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/**
 * Streams one account may hold open at once in this process. Each holds a connection for as long as it lasts, and
 * HTTP_MAX_CONNECTIONS is shared: without a cap one account (or a client that reconnects without closing) could
 * take them all, and nobody else could reach the API.
 */
const MAX_STREAMS_PER_ACCOUNT = 20;

function frames(events: readonly StreamedEvent[]): string {
  return events.map((event) => `id: ${event.position}\nevent: ${event.type}\ndata: ${event.data}\n\n`).join('');
}

/**
 * `GET /events`: the account's events as Server-Sent Events, live, resumable with Last-Event-ID. The response is
 * written by hand (hijacked) for as long as the client stays and its key is not revoked; the server's close ends
 * every open stream first.
 */
export function streamEvents(
  app: Api,
  {
    tags,
    events,
    accounts,
  }: { tags: Tags; events: Pick<EventHub, 'subscribe'>; accounts: Pick<AccountsService, 'isKeyActive'> },
) {
  const open = new Set<ServerResponse>();
  const openPerAccount = new Map<string, number>();
  const countStream = (accountId: string, change: 1 | -1) => {
    const count = (openPerAccount.get(accountId) ?? 0) + change;
    if (count === 0) openPerAccount.delete(accountId);
    else openPerAccount.set(accountId, count);
  };
  app.addHook('preClose', async () => {
    for (const response of open) response.end();
  });
  app.get(
    '/events',
    {
      schema: {
        tags,
        summary: 'Stream the account’s events (Server-Sent Events)',
        description:
          'email.received, delivery.succeeded, delivery.failed, domain.status_changed, alert.raised, ' +
          'alert.cleared and account.mail_limit_exceeded as they are committed. ' +
          'Each event has an opaque `id`; send the last one received as `Last-Event-ID` to resume after it ' +
          '(events are kept for 7 days). Without it the stream starts now. Comments are sent every 15 s. ' +
          `An account holds at most ${MAX_STREAMS_PER_ACCOUNT} streams open at once (429 past that).`,
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String()) }),
        response: {
          200: {
            description: 'An endless text/event-stream',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          ...errorResponses,
          429: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      // Fastify answers HEAD with this handler too: the headers alone, and no stream that would never be read.
      if (request.method === 'HEAD')
        return reply.header('content-type', EVENT_STREAM).header('cache-control', 'no-store').send('');
      const response = reply.raw;
      // Each write waits for the key to be found still in force, in order, so a revoked key's stream ends before
      // anything committed after its revocation is sent; a stream with nothing to send finds out at its heartbeat.
      let writes = Promise.resolve();
      const writeWhileKeyActive = (text: string) => {
        writes = writes.then(async () => {
          if (response.writableEnded || response.destroyed) return;
          const active = await accounts.isKeyActive(request.apiKeyId).catch(() => false);
          if (!active) return void response.end();
          response.write(text);
          // Not end(): it waits for a client that is not reading, holding its socket, buffers and subscription. A
          // reset frees the kernel's send queue too, which a close would leave waiting behind megabytes never read.
          if (response.writableLength > MAX_BUFFERED_BYTES) response.socket?.resetAndDestroy();
        });
      };
      const accountId = request.account.id;
      if ((openPerAccount.get(accountId) ?? 0) >= MAX_STREAMS_PER_ACCOUNT) {
        return reply.code(429).send({
          error: `Too many event streams: an account holds at most ${MAX_STREAMS_PER_ACCOUNT} open at once; close one first`,
        });
      }
      countStream(accountId, 1);
      let subscription: Awaited<ReturnType<typeof events.subscribe>>;
      try {
        subscription = await events.subscribe(accountId, request.headers['last-event-id'], (batch) =>
          writeWhileKeyActive(frames(batch)),
        );
      } catch (error) {
        countStream(accountId, -1);
        throw error;
      }
      reply.hijack();
      response.writeHead(200, {
        'content-type': EVENT_STREAM,
        'cache-control': 'no-store',
        // Tells nginx not to buffer the stream.
        'x-accel-buffering': 'no',
      });
      response.write(`retry: ${RECONNECT_MS}\n\n`);
      open.add(response);
      const heartbeat = setInterval(() => writeWhileKeyActive(': heartbeat\n\n'), HEARTBEAT_MS);
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        clearInterval(heartbeat);
        subscription.close();
        open.delete(response);
        countStream(accountId, -1);
      };
      response.on('close', end);
      // The client may have gone while the subscription was opened, before 'close' was listened for.
      if (request.raw.socket.destroyed) end();
    },
  );
}
