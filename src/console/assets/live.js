import { openEventStream } from './api.js';

/** How often the open view reloads when the server has no event stream. */
const POLL_INTERVAL_MS = 1000;
/**
 * The server sends a comment every 15 s: past this without a byte, headers included, the stream is taken for dead (a
 * dropped network or a server that stopped answering says nothing) and opened again.
 */
const SILENCE_LIMIT_MS = 40_000;
/** Waits between tries, doubled after each failed one: a server that is down is not asked every second for ever. */
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;
/** A refusal for too many streams (429) lasts until another tab or client closes one: it is asked again seldom. */
const LIMITED_FIRST_RETRY_MS = 30_000;
const LIMITED_MAX_RETRY_MS = 5 * 60_000;
/** A stream that stayed up this long was no failure: the next drop starts the waits from the first again. */
const STEADY_MS = 60_000;

/**
 * Splits a Server-Sent Events body into frames `{ id, type, data }`. `fetch` is used rather than EventSource because
 * the stream needs the bearer header, which EventSource cannot send.
 */
async function readFrames(body, onBytes, onFrame) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onBytes();
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

/** The API's `error` text of a refusal, or its status line. */
async function refusalText(response) {
  const body = await response.json().catch(() => null);
  return typeof body?.error === 'string' ? body.error : `HTTP ${response.status} ${response.statusText}`.trim();
}

/** Retry-After in milliseconds, when it is a number of seconds. */
function retryAfterMs(response) {
  const seconds = Number(response.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

function backoff(first, max, failures) {
  return Math.min(max, first * 2 ** (failures - 1));
}

/**
 * Keeps the console up to date: reads `/api/v2/events`, resuming with Last-Event-ID after a drop, and calls
 * `onEvent({ type, data })`. When the server has no stream (404) it calls `onPoll()` every second instead.
 * `onState(state, detail)` hears `connecting`, `live`, `polling`, `reconnecting`, and while no stream is open and the
 * next try waits, `disconnected` or `limited` (429) with `{ reason, retryInMs }`. Returns a function that stops it.
 */
export function startLive({ onEvent, onPoll, onState }) {
  const controller = new AbortController();
  let lastEventId;
  let pollTimer;
  let wakeUp = () => {};
  /** Whether anything may have happened unseen: the view is reloaded once a stream is open again. */
  let behind = false;

  /**
   * One stream, from its request to its end. Resolves to why it ended, `{ reason, limited, retryAfterMs }`, or to
   * null when there is nothing to reconnect to (stopped, key refused, polling instead).
   */
  async function openOnce() {
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    controller.signal.addEventListener('abort', stop);
    let silent = false;
    let watchdog;
    const heard = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        silent = true;
        attempt.abort();
      }, SILENCE_LIMIT_MS);
    };
    let openedAt;
    try {
      heard();
      const response = await openEventStream(lastEventId, attempt.signal);
      // The key is refused: the console signs out (api.js reports it), so there is nothing to reconnect with.
      if (response.status === 401) return null;
      if (response.status === 404) {
        onState('polling');
        pollTimer = setInterval(onPoll, POLL_INTERVAL_MS);
        return null;
      }
      if (response.status === 429) {
        return { reason: await refusalText(response), limited: true, retryAfterMs: retryAfterMs(response) };
      }
      if (!response.ok) return { reason: await refusalText(response), retryAfterMs: retryAfterMs(response) };
      // A proxy or portal answering in Mailroom's place with a page of its own is no stream either.
      if (!/^text\/event-stream/i.test(response.headers.get('content-type') ?? '')) {
        await response.body?.cancel();
        return { reason: 'the server answered with something other than an event stream' };
      }
      heard();
      openedAt = Date.now();
      onState('live');
      // Whatever happened while disconnected and was not replayed is caught by one reload of the view: a stream
      // that dropped before its first event has no id to resume from, so nothing at all is replayed to it.
      if (behind) onPoll();
      behind = false;
      await readFrames(response.body, heard, (frame) => {
        if (frame.id !== undefined) lastEventId = frame.id;
        if (frame.type) onEvent({ type: frame.type, data: frame.data });
      });
      return { reason: 'the server ended the stream', steady: Date.now() - openedAt >= STEADY_MS };
    } catch {
      if (controller.signal.aborted) return null;
      const steady = openedAt !== undefined && Date.now() - openedAt >= STEADY_MS;
      if (silent) return { reason: `no word from the server for ${SILENCE_LIMIT_MS / 1000} s`, steady };
      return { reason: 'Mailroom did not answer', steady };
    } finally {
      clearTimeout(watchdog);
      controller.signal.removeEventListener('abort', stop);
    }
  }

  /** Waits `ms`, or less when the browser says it is back online. */
  function pause(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  const onOnline = () => wakeUp();
  window.addEventListener('online', onOnline);

  async function run() {
    let failures = 0;
    let limitedFailures = 0;
    let state = 'connecting';
    while (!controller.signal.aborted) {
      onState(state);
      const ended = await openOnce();
      if (!ended) return;
      behind = true;
      if (ended.steady) failures = limitedFailures = 0;
      const wait = ended.limited
        ? backoff(LIMITED_FIRST_RETRY_MS, LIMITED_MAX_RETRY_MS, ++limitedFailures)
        : backoff(FIRST_RETRY_MS, MAX_RETRY_MS, ++failures);
      const retryInMs = Math.max(wait, ended.retryAfterMs ?? 0);
      onState(ended.limited ? 'limited' : 'disconnected', { reason: ended.reason, retryInMs });
      await pause(retryInMs);
      state = 'reconnecting';
    }
  }

  run();
  return () => {
    controller.abort();
    clearInterval(pollTimer);
    wakeUp();
    window.removeEventListener('online', onOnline);
  };
}
