import assert from 'node:assert/strict';
import { newId } from '../../src/core/index.ts';
import type { TestApp } from '../helpers/app.ts';
import type { DnsServer } from '../helpers/dns-server.ts';
import { createVerifiedDomain } from '../helpers/domains.ts';
import type { ApiClient } from '../helpers/http.ts';

/** Creates an address through the API, routed to `endpointId` when given, and returns its id. */
export async function createAddress(
  api: ApiClient,
  address: string,
  domainId: string,
  extra: { endpointId?: string; isActive?: boolean } = {},
): Promise<string> {
  const created = await api.post('/api/v2/email-addresses', { address, domainId, ...extra });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id;
}

/**
 * An endpoint row for routing tests. It is written straight into the endpoints table because these tests are about
 * ingest, not the endpoints API; the outbox rows ingest writes for it are what they check.
 */
export async function insertEndpoint(
  server: TestApp,
  type: 'webhook' | 'email' | 'email_group',
  options: { isActive?: boolean; accountName?: string } = {},
): Promise<string> {
  const { db } = server.app.database;
  const account = await db
    .selectFrom('accounts')
    .select('id')
    .where('name', '=', options.accountName ?? 'default')
    .executeTakeFirstOrThrow();
  const id = newId('endp');
  const now = new Date().toISOString();
  const config =
    type === 'webhook'
      ? { url: 'http://127.0.0.1:9/hook' }
      : type === 'email'
        ? { forwardTo: 'someone@elsewhere.test' }
        : { emails: ['a@elsewhere.test', 'b@elsewhere.test'] };
  await db
    .insertInto('endpoints')
    .values({
      id,
      account_id: account.id,
      name: `${type} endpoint`,
      type,
      config: JSON.stringify(config),
      is_active: options.isActive === false ? 0 : 1,
      description: null,
      deactivated_reason: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/** A verified domain with one active address on it, ready to receive mail. */
export async function receivingDomain(api: ApiClient, dns: DnsServer, domain: string) {
  const created = await createVerifiedDomain(api, dns, domain);
  return { domainId: created.id };
}
