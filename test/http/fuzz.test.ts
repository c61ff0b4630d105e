import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiClient } from '../helpers/http.ts';
import { type MailWorld, startMailWorld } from '../mail/setup.ts';

/**
 * Sends malformed requests, generated from the two OpenAPI documents the app serves, to every operation in them,
 * and checks that none is answered 5xx (but the spec's 501 on sending routes) and that every 4xx is `{ error }`
 * JSON. FUZZ_SEED replays a run; the seed is printed.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 31_2026);
const REQUESTS_PER_OPERATION = 100;
const CONCURRENCY = 8;
/** A share of requests goes without the API key, so the refusal path is fuzzed as well. */
const WITHOUT_KEY_SHARE = 0.04;

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
}
interface Parameter {
  in: 'path' | 'query';
  name: string;
  schema?: JsonSchema;
}
interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  bodySchema?: JsonSchema;
  /** The spec answers 501 on the sending routes; that is the one 5xx allowed. */
  answers501: boolean;
}
interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | FormData;
  description: string;
}

/** mulberry32: small, fast and the same on every machine. */
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (below: number) => Math.floor(next() * below),
    chance: (share: number) => next() < share,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}
type Random = ReturnType<typeof prng>;

const JUNK_NUMBERS = [0, -1, 1, 1.5, -0.5, 1e300, -1e300, 2 ** 53 + 2, -(2 ** 53) - 2, 101, 2_147_483_648];
const JUNK_NUMBER_TEXTS = ['99999999999999999999', '1e300', '-1e300', 'NaN', 'Infinity', '-0', '0x10', '1_000', ' 7 '];
const JUNK_STRINGS = [
  '',
  ' ',
  'a\u0000b',
  '\u0000',
  '\u0001\u0002\u001f\u007f',
  '\r\n\r\n',
  '\ud800',
  '😀'.repeat(50),
  "' OR 1=1 --",
  '%00',
  '%',
  '../../etc/passwd',
  '{"$gt":""}',
  '<script>alert(1)</script>',
  'null',
  'true',
  '[]',
  'a@b',
  '@',
  'x'.repeat(300),
  'example.test',
  'user@example.test',
  'http://127.0.0.1:9/hook',
  'https://',
  'javascript:alert(1)',
  '2026-13-45T99:99:99Z',
];

function junkString(random: Random): string {
  if (random.chance(0.08)) return random.pick(['x', '\u0000', 'é', '😀']).repeat(random.pick([1_000, 20_000, 60_000]));
  if (random.chance(0.2)) return random.pick(JUNK_NUMBER_TEXTS);
  return random.pick(JUNK_STRINGS);
}

function nested(depth: number, leaf: unknown, asArray: boolean): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level += 1) value = asArray ? [value] : { a: value };
  return value;
}

function junkValue(random: Random, depth = 0): unknown {
  switch (random.int(depth > 1 ? 5 : 8)) {
    case 0:
      return random.pick(JUNK_NUMBERS);
    case 1:
      return junkString(random);
    case 2:
      return random.pick([true, false, null]);
    case 3:
      return random.pick(JUNK_NUMBER_TEXTS);
    case 4:
      return junkString(random);
    case 5:
      return Array.from({ length: random.int(4) }, () => junkValue(random, depth + 1));
    case 6:
      return Object.fromEntries(
        Array.from({ length: random.int(4) }, () => [junkString(random).slice(0, 40), junkValue(random, depth + 1)]),
      );
    default:
      return nested(random.pick([50, 500]), junkValue(random, depth + 1), random.chance(0.5));
  }
}

/** A value the schema accepts, so that some requests get past validation into the services. */
function plausibleValue(random: Random, schema: JsonSchema | undefined, realIds: string[]): unknown {
  if (!schema) return junkValue(random);
  if (schema.enum) return random.pick(schema.enum);
  if (schema.anyOf) return plausibleValue(random, random.pick(schema.anyOf), realIds);
  const type = Array.isArray(schema.type) ? random.pick(schema.type) : schema.type;
  switch (type) {
    case 'integer':
      return random.pick([0, 1, 2, 10, 50, 100, 300]);
    case 'number':
      return random.pick([0, 1, 2.5, 30, 300]);
    case 'boolean':
      return random.chance(0.5);
    case 'null':
      return null;
    case 'array':
      return Array.from({ length: random.int(3) }, () => plausibleValue(random, schema.items, realIds));
    case 'object':
      return plausibleObject(random, schema, realIds);
    default:
      return random.chance(0.4) ? random.pick(realIds) : random.pick(JUNK_STRINGS.slice(20));
  }
}

function plausibleObject(random: Random, schema: JsonSchema, realIds: string[]) {
  const body: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (random.chance(0.3)) continue;
    body[name] = random.chance(0.6) ? plausibleValue(random, property, realIds) : junkValue(random);
  }
  if (random.chance(0.2)) body[junkString(random).slice(0, 30) || '__proto__'] = junkValue(random);
  return body;
}

/** Form fields are strings: objects and arrays go as JSON text or repeated fields. */
function formEntries(body: Record<string, unknown>, random: Random): Array<[string, string]> {
  const entries: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(body)) {
    if (Array.isArray(value) && random.chance(0.5)) for (const item of value) entries.push([name, String(item)]);
    else entries.push([name, typeof value === 'string' ? value : (JSON.stringify(value) ?? '')]);
  }
  return entries;
}

const MALFORMED_JSON = ['{"domain": ', '{', '[1,2', '{"a":1}}', "{'a':1}", 'nul', '\u0000{}', '{"a":"\u0000"}'];
const BAD_CONTENT_TYPES = [
  'text/plain',
  'application/xml',
  'application/json; charset=utf-16',
  'application/octet-stream',
  'multipart/form-data; boundary=',
  'multipart/mixed; boundary=x',
  'application/x-www-form-urlencoded; charset=nope',
  'application/merge-patch+json',
  '*/*',
  'application',
];
const MALFORMED_MULTIPART: Array<[string, string]> = [
  ['multipart/form-data', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--'],
  ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="domain"\r\n\r\nexample.te'],
  ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition\r\n\r\nvalue\r\n--x--\r\n'],
  ['multipart/form-data; boundary=x', 'not multipart at all'],
  ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="__proto__"\r\n\r\n1\r\n--x--\r\n'],
  [`multipart/form-data; boundary=${'b'.repeat(300)}`, '--'],
];

/** One body for an operation: well-formed with junk fields, malformed, of the wrong type, or none. */
function fuzzBody(random: Random, operation: Operation, realIds: string[]) {
  const body = operation.bodySchema
    ? plausibleObject(random, operation.bodySchema, realIds)
    : (junkValue(random) as Record<string, unknown>);
  const choice = random.int(10);
  if (choice === 0) return { description: 'no body' };
  if (choice === 1) {
    return {
      contentType: 'application/json',
      body: random.pick(MALFORMED_JSON),
      description: 'malformed JSON',
    };
  }
  if (choice === 2) {
    const depth = random.pick([0, 0, 1_000, 20_000]);
    return {
      contentType: 'application/json',
      body: depth ? `${'{"a":['.repeat(depth)}1${']}'.repeat(depth)}` : JSON.stringify(junkValue(random)),
      description: depth ? 'deeply nested JSON' : 'JSON of any shape',
    };
  }
  if (choice === 3) {
    return { contentType: random.pick(BAD_CONTENT_TYPES), body: JSON.stringify(body), description: 'bad type' };
  }
  if (choice === 4) {
    const [contentType, text] = random.pick(MALFORMED_MULTIPART);
    return { contentType, body: text, description: 'malformed multipart' };
  }
  const entries = body && typeof body === 'object' && !Array.isArray(body) ? formEntries(body, random) : [];
  if (choice === 5) {
    return {
      contentType: 'application/x-www-form-urlencoded',
      body: new URLSearchParams(entries).toString(),
      description: 'urlencoded form',
    };
  }
  if (choice === 6) {
    const form = new FormData();
    for (const [name, value] of entries) form.append(name, value);
    if (random.chance(0.3)) form.append('file', new Blob([junkString(random)]), 'junk.bin');
    return { body: form, description: 'multipart form' };
  }
  if (choice === 7 && random.chance(0.1)) {
    return { contentType: 'application/json', body: `"${'x'.repeat(2_200_000)}"`, description: 'too large' };
  }
  return { contentType: 'application/json', body: JSON.stringify(body), description: 'JSON object' };
}

/** URLs stay well under Node's 16 KiB header limit, whose 431 the connection tests cover on their own. */
const MAX_QUERY_LENGTH = 8_000;

function urlText(value: unknown) {
  return (typeof value === 'string' ? value : (JSON.stringify(value) ?? '')).slice(0, 1_000).toWellFormed();
}

/** Path segments sent as they are: bad percent escapes, overlong UTF-8, dot segments. */
const RAW_PATH_JUNK = ['%', '%ZZ', '%C0%80', '%FF%FE', '%00', '..', '.', '%2e%2e', '%2F', 'a%0D%0Ab', '%E2%82'];

function fuzzRequest(random: Random, operation: Operation, realIds: string[], apiKey: string): FuzzRequest {
  const path = operation.path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    if (name === 'index' && random.chance(0.4))
      return random.pick(['0', '1', '2', '-1', '1e300', '99999999999999999999']);
    if (random.chance(0.3)) return encodeURIComponent(random.pick(realIds));
    if (random.chance(0.1)) return random.pick(RAW_PATH_JUNK);
    return encodeURIComponent(urlText(junkValue(random)).toWellFormed()) || '%20';
  });
  const query: Array<[string, string]> = [];
  for (const parameter of operation.parameters) {
    if (parameter.in !== 'query' || random.chance(0.4)) continue;
    const value = random.chance(0.4) ? plausibleValue(random, parameter.schema, realIds) : junkValue(random);
    if (Array.isArray(value) && random.chance(0.5))
      for (const item of value) query.push([parameter.name, urlText(item)]);
    else query.push([parameter.name, urlText(value)]);
  }
  if (random.chance(0.1)) query.push([junkString(random).slice(0, 30), urlText(junkValue(random))]);
  let search = new URLSearchParams(query).toString();
  while (search.length > MAX_QUERY_LENGTH) {
    query.pop();
    search = new URLSearchParams(query).toString();
  }
  const withKey = !random.chance(WITHOUT_KEY_SHARE);
  const headers: Record<string, string> = withKey ? { authorization: `Bearer ${apiKey}` } : {};
  const request: FuzzRequest = {
    method: operation.method,
    url: `${path}${search ? `?${search}` : ''}`,
    headers,
    description: `${withKey ? '' : 'no key, '}`,
  };
  if (operation.method !== 'GET' && (operation.method !== 'DELETE' || random.chance(0.15))) {
    const body = fuzzBody(random, operation, realIds);
    if (body.contentType) headers['content-type'] = body.contentType;
    request.body = body.body;
    request.description += body.description;
  }
  return request;
}

async function operationsOf(baseUrl: string, family: string): Promise<Operation[]> {
  const document = (await (await fetch(`${baseUrl}/api/${family}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, any>>;
  };
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const content = (operation.requestBody?.content ?? {}) as Record<string, { schema: JsonSchema }>;
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: operation.parameters ?? [],
        bodySchema: Object.values(content)[0]?.schema,
        answers501: '501' in operation.responses,
      });
    }
  }
  return operations;
}

/** What is wrong with one answer, or undefined when it is acceptable. */
function problemWith(operation: Operation, status: number, contentType: string | null, text: string) {
  if (status >= 500 && !(operation.answers501 && status === 501)) return `answered ${status}: ${text.slice(0, 300)}`;
  if (status < 400) return undefined;
  if (!contentType?.startsWith('application/json'))
    return `answered ${status} as ${contentType}: ${text.slice(0, 200)}`;
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error !== 'string') return `answered ${status} without an error string: ${text.slice(0, 200)}`;
  } catch {
    return `answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`;
  }
  return undefined;
}

let world: MailWorld;
const realIds: string[] = [];

before(async () => {
  world = await startMailWorld(['fuzz@fuzz.test']);
  const { api } = world;
  const endpoint = await api.post('/api/v2/endpoints', {
    name: 'fuzz',
    type: 'webhook',
    config: { url: 'http://127.0.0.1:9/hook' },
  });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  const webhook = await api.post('/api/v2/webhooks', { name: 'fuzz', url: 'http://127.0.0.1:9/hook' });
  assert.equal(webhook.status, 201, JSON.stringify(webhook.body));
  const addresses = await api.get('/api/v2/email-addresses');
  const addressId = addresses.body.data[0].id;
  const routed = await api.put(`/api/v2/email-addresses/${addressId}`, { endpointId: endpoint.body.id });
  assert.equal(routed.status, 200, JSON.stringify(routed.body));
  const [emailId] = await world.deliver({
    from: 'sender@elsewhere.test',
    to: 'fuzz@fuzz.test',
    subject: 'Fuzz',
    text: 'Hello',
    attachments: [{ filename: 'notes.txt', content: 'notes' }],
  });
  const domains = await api.get('/api/v2/domains');
  const threads = await api.get('/api/e2/mail/threads');
  const deliveries = await api.get('/api/v2/deliveries');
  realIds.push(
    domains.body.data[0].id,
    addressId,
    threads.body.threads[0].id,
    deliveries.body.data[0].id,
    endpoint.body.id,
    webhook.body.id,
    emailId!,
    'notes.txt',
    'fuzz.test',
    'fuzz@fuzz.test',
  );
});
after(() => world.close());

test('every operation of both OpenAPI documents answers malformed requests without a 5xx, and 4xx as { error }', async () => {
  console.log(`fuzz seed ${SEED} (set FUZZ_SEED to replay)`);
  const { baseUrl, apiKey } = world.server;
  const operations = [...(await operationsOf(baseUrl, 'e2')), ...(await operationsOf(baseUrl, 'v2'))];
  assert.ok(operations.length >= 60, `${operations.length} operations in the documents`);
  // Deletions go last, so the real ids stay real for the other operations.
  operations.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
  const random = prng(SEED);
  const problems: string[] = [];
  const statusCounts = new Map<number, number>();
  for (const operation of operations) {
    const requests = Array.from({ length: REQUESTS_PER_OPERATION }, () =>
      fuzzRequest(random, operation, realIds, apiKey),
    );
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const request = requests[next++]!;
        let response: Response;
        let text: string;
        try {
          response = await fetch(`${baseUrl}${request.url}`, {
            method: request.method,
            headers: request.headers,
            body: request.body,
          });
          // An event stream never ends: its answer is judged by status and headers, then it is hung up on.
          if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
            await response.body?.cancel();
            text = '';
          } else text = await response.text();
        } catch (error) {
          const cause = (error as Error).cause;
          problems.push(`${request.method} ${request.url.slice(0, 200)} (${request.description}): ${error} ${cause}`);
          continue;
        }
        statusCounts.set(response.status, (statusCounts.get(response.status) ?? 0) + 1);
        const problem = problemWith(operation, response.status, response.headers.get('content-type'), text);
        if (problem) {
          problems.push(`${request.method} ${request.url.slice(0, 200)} (${request.description}): ${problem}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  }
  console.log('answers by status:', Object.fromEntries([...statusCounts].sort(([a], [b]) => a - b)));
  assert.deepEqual(problems.slice(0, 30), [], `${problems.length} problems`);
});

test('without the API key every operation answers 401 { error }', async () => {
  const { baseUrl } = world.server;
  const anonymous = apiClient(baseUrl);
  for (const family of ['e2', 'v2']) {
    for (const operation of await operationsOf(baseUrl, family)) {
      const response = await anonymous.call(operation.method, operation.path.replace(/\{\w+\}/g, 'x'));
      assert.equal(response.status, 401, `${operation.method} ${operation.path}`);
      assert.equal(typeof response.body.error, 'string', `${operation.method} ${operation.path}`);
    }
  }
});
