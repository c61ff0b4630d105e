import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { apiClient } from '../helpers/http.ts';

/** Each route table line names its method and path in a comment; the family's OpenAPI document must agree. */

let server: TestApp;

before(async () => {
  server = await startTestApp({ DNS_SERVERS: '127.0.0.1:9' });
});
after(() => server.close());

const tableLine = /^ {2}\w+\(api, .*\); \/\/ ([A-Z|]+) (\/\S*)$/;

function tableRoutes(file: string): { methods: string[]; path: string }[] {
  const source = readFileSync(new URL(`../../src/http/${file}`, import.meta.url), 'utf8');
  const calls = source.split('\n').filter((line) => /^ {2}\w+\(api, \{/.test(line) && !line.includes('sharedRoutes('));
  return calls.map((line) => {
    const match = tableLine.exec(line);
    assert.ok(match, `${file}: route line without its method and path: ${line.trim()}`);
    return { methods: match[1].split('|'), path: match[2].replace(/:(\w+)/g, '{$1}') };
  });
}

for (const family of ['e2', 'v2']) {
  test(`the ${family} route tables list exactly the operations of /api/${family}/openapi.json`, async () => {
    const document = (await apiClient(server.baseUrl).get(`/api/${family}/openapi.json`)).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    const documented = Object.entries(document.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    const listed = [...tableRoutes('shared/routes.ts'), ...tableRoutes(`${family}/routes.ts`)]
      .map(({ methods, path }) => {
        const present = methods.filter((method) => document.paths[`/api/${family}${path}`]?.[method.toLowerCase()]);
        assert.equal(present.length, 1, `${methods.join('|')} ${path} is not one operation of ${family}`);
        return `${present[0]} /api/${family}${path}`;
      })
      .sort();
    assert.deepEqual(listed, documented);
  });
}
