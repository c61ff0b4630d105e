import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const ASSETS_DIR = join(import.meta.dirname, 'assets');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * The console's own policy. Message HTML is shown in a `srcdoc` iframe, which inherits this policy, so images may come
 * from anywhere here; the iframe's own meta policy blocks remote content until the reader asks for it.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  'img-src * data: blob:',
  "connect-src 'self'",
  "frame-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'",
].join('; ');

interface Asset {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** Reads every asset once at start-up: they ship with the package and never change while Mailroom runs. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(ASSETS_DIR)) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (!contentType) continue;
    const body = readFileSync(join(ASSETS_DIR, name));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, contentType, etag });
  }
  return assets;
}

/** Names are not content-hashed, so a browser keeps each asset but asks again each time (a 304 when unchanged). */
function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset) {
  reply
    .header('cache-control', 'no-cache')
    .header('etag', asset.etag)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
  if (asset.contentType.startsWith('text/html')) {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('x-frame-options', 'DENY');
  }
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.contentType).send(asset.body);
}

/** Serves the web console: its page at `/` and its files under `/console/`. */
export async function consoleRoutes(app: FastifyInstance) {
  const assets = loadAssets();
  const page = assets.get('index.html')!;
  app.get('/', { schema: { hide: true } }, (request, reply) => sendAsset(request, reply, page));
  app.get<{ Params: { name: string } }>('/console/:name', { schema: { hide: true } }, (request, reply) => {
    const asset = assets.get(request.params.name);
    if (!asset || request.params.name === 'index.html') {
      return reply.code(404).send({ error: `Route GET ${request.url.split('?')[0]} not found` });
    }
    return sendAsset(request, reply, asset);
  });
}
