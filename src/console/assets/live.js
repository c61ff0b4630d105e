import { openEventStream } from './api.js';

/** How often the open view reloads when the server has no event stream. */
const POLL_INTERVAL_MS = 1000;
const RECONNECT_DELAY_MS = 2000;

/**
 * Splits a Server-Sent Events body into frames `{ id, type, data }`. `fetch` is used rather than EventSource because
 * the stream needs the bearer header, which EventSource cannot send.
 */
async function readFrames(body, onFrame) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const frame = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (frame) onFrame(frame);
      end = buffer.indexOf('\n\n');
    }
  }
}

function parseFrame(text) {
  const frame = { id: undefined, type: 'message', data: [] };
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'id') frame.id = value;
    else if (name === 'event') frame.type = value;
    else if (name === 'data') frame.data.push(value);
  }
  if (frame.data.length === 0) return frame.id === undefined ? null : { id: frame.id };
  let data = frame.data.join('\n');
  try {
    data = JSON.parse(data);
  } catch {
    // A non-JSON payload is passed on as text.
  }
  return { id: frame.id, type: frame.type, data };
}

/**
 * Keeps the console up to date: reads `/api/v2/events`, resuming with Last-Event-ID after a drop, and calls
 * `onEvent({ type, data })`. When the server has no stream (404) it calls `onPoll()` every second instead.
 * `onState` hears `connecting`, `live`, `polling` or `reconnecting`. Returns a function that stops it all.
 */
export function startLive({ onEvent, onPoll, onState }) {
  const controller = new AbortController();
  let lastEventId;
  let pollTimer;
  let wasLive = false;

  async function run() {
    while (!controller.signal.aborted) {
      onState(wasLive ? 'reconnecting' : 'connecting');
      try {
        const response = await openEventStream(lastEventId, controller.signal);
        // The key is refused: the console signs out (api.js reports it), so there is nothing to reconnect with.
        if (response.status === 401) return;
        if (response.status === 404) {
          onState('polling');
          pollTimer = setInterval(onPoll, POLL_INTERVAL_MS);
          return;
        }
        if (response.ok && response.body) {
          onState('live');
          // Whatever happened while disconnected and was not replayed is caught by one reload of the view: a stream
          // that dropped before its first event has no id to resume from, so nothing at all is replayed to it.
          if (wasLive) onPoll();
          wasLive = true;
          await readFrames(response.body, (frame) => {
            if (frame.id !== undefined) lastEventId = frame.id;
            if (frame.type) onEvent({ type: frame.type, data: frame.data });
          });
        }
      } catch {
        if (controller.signal.aborted) return;
      }
      onState('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_DELAY_MS));
    }
  }

  run();
  return () => {
    controller.abort();
    clearInterval(pollTimer);
  };
}
