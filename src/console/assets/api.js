/** The console's only way to Mailroom: the public API with the signed-in key, exactly as any client would use it. */

const KEY_NAME = 'mailroom.apiKey';

export function storedKey() {
  return sessionStorage.getItem(KEY_NAME);
}

export function storeKey(key) {
  sessionStorage.setItem(KEY_NAME, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_NAME);
}

/** An API answer other than 2xx, carrying the API's own `error` text and its `details` when they are text. */
export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

let unauthorizedHandler = () => {};
/** Called when the API refuses the key mid-session (e.g. it was revoked). */
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

function authHeaders(key = storedKey()) {
  return { authorization: `Bearer ${key}` };
}

/** Said for a request that got no answer at all, where the browser would only say "Failed to fetch". */
export const UNREACHABLE = 'Mailroom did not answer: the server may be down or the network cut. Try again shortly.';

/** `fetch`, with a failure to get any answer said as `UNREACHABLE` (status 0); an abort stays an abort. */
async function send(path, init) {
  try {
    return await fetch(path, init);
  } catch (error) {
    if (error?.name === 'AbortError') throw error;
    throw new ApiError(0, UNREACHABLE, null);
  }
}

async function failure(response) {
  const text = await response.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  if (!body || typeof body !== 'object' || !body.error) {
    // Not the API's JSON: most often a proxy in front of Mailroom answering for it (502, 504).
    return new ApiError(response.status, `HTTP ${response.status} ${response.statusText}`.trim(), body);
  }
  // Some refusals say why in `details` (e.g. "Invalid configuration" names the bad field there).
  const message = typeof body.details === 'string' ? `${body.error}: ${body.details}` : body.error;
  return new ApiError(response.status, message, body);
}

/** Sends one request; `body` is sent as JSON. `key` overrides the stored key (for sign-in). */
export async function request(method, path, body, key) {
  const headers = authHeaders(key);
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await send(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) {
    const error = await failure(response);
    if (response.status === 401 && key === undefined) unauthorizedHandler(error);
    throw error;
  }
  if (response.status === 204) return null;
  return response.json();
}

export const get = (path) => request('GET', path);
export const post = (path, body = {}) => request('POST', path, body);
export const put = (path, body) => request('PUT', path, body);
export const patch = (path, body) => request('PATCH', path, body);
export const del = (path) => request('DELETE', path);

/** A path with its query, empty values left out. */
export function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') query.set(name, String(value));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** The API's largest page. */
const MAX_PAGE = 100;

/**
 * Every item of a paged list (`{ data, pagination }`), read page by page: Setup shows all of an account's domains,
 * endpoints and addresses, not the newest hundred. Kept by id: one added while the pages are read is listed once.
 */
export async function getAll(path) {
  const items = new Map();
  for (let offset = 0; ; offset += MAX_PAGE) {
    const page = await get(withQuery(path, { limit: MAX_PAGE, offset }));
    for (const item of page.data) items.set(item.id, item);
    if (!page.pagination.hasMore || page.data.length === 0) return [...items.values()];
  }
}

/** The body of a GET as text (raw source). */
export async function getText(path) {
  const response = await send(path, { headers: authHeaders() });
  if (!response.ok) throw await failure(response);
  return response.text();
}

/** The body of a GET as a Blob (a file that needs the bearer header, which a plain link or image cannot send). */
export async function getBlob(path) {
  const response = await send(path, { headers: authHeaders() });
  if (!response.ok) throw await failure(response);
  return response.blob();
}

/** Downloads a file that needs the bearer header: the bytes are saved through a temporary object URL. */
export async function download(path, filename) {
  const url = URL.createObjectURL(await getBlob(path));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * Opens the event stream; the caller reads the body. Resolves to the response whatever its status; a 401 (the key was
 * revoked, which also ends an open stream) is reported to the unauthorized handler as any other request's is.
 */
export async function openEventStream(lastEventId, signal) {
  const headers = { ...authHeaders(), accept: 'text/event-stream' };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const response = await send('/api/v2/events', { headers, signal, cache: 'no-store' });
  if (response.status === 401) unauthorizedHandler(await failure(response));
  return response;
}
