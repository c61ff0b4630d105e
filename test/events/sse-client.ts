export interface StreamEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

/**
 * A Server-Sent Events client over fetch (an EventSource cannot send the Authorization header): it parses the frames
 * as they arrive and keeps every event, in order.
 */
export async function openEventStream(baseUrl: string, apiKey: string, lastEventId?: string) {
  const abort = new AbortController();
  const response = await fetch(`${baseUrl}/api/v2/events`, {
    headers: { authorization: `Bearer ${apiKey}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: abort.signal,
  });
  const events: StreamEvent[] = [];
  let retry: number | undefined;
  const waiters: Array<() => void> = [];
  const wakeWaiters = () => {
    for (const wake of waiters.splice(0)) wake();
  };
  let ended = false;

  const reading = (async () => {
    if (!response.ok || !response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const fields: Record<string, string> = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(': ');
          fields[line.slice(0, colon)] = line.slice(colon + 2);
        }
        if (fields.retry) retry = Number(fields.retry);
        if (fields.data !== undefined) {
          events.push({ id: fields.id!, event: fields.event!, data: JSON.parse(fields.data) });
          wakeWaiters();
        }
      }
    }
  })()
    .catch((error: Error) => {
      if (error.name !== 'AbortError') throw error;
    })
    .finally(() => {
      ended = true;
      wakeWaiters();
    });

  return {
    response,
    events,
    get retry() {
      return retry;
    },
    /** Resolves with the first `count` events once they have arrived; rejects after `timeoutMs` or at the end. */
    async waitFor(count: number, timeoutMs = 15_000): Promise<StreamEvent[]> {
      const deadline = Date.now() + timeoutMs;
      while (events.length < count) {
        if (ended) throw new Error(`stream ended after ${events.length} of ${count} events`);
        if (Date.now() > deadline) {
          throw new Error(`${events.length} of ${count} events in ${timeoutMs} ms: ${JSON.stringify(events)}`);
        }
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
      return events.slice(0, count);
    },
    /** Resolves once the server has ended the stream. */
    ended: () => reading,
    close() {
      abort.abort();
      return reading;
    },
  };
}

export type EventStream = Awaited<ReturnType<typeof openEventStream>>;
