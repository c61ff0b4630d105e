import { type AccountsService, DEFAULT_ACCOUNT } from '../accounts/index.ts';
import type { EmailAddressesService } from '../addresses/index.ts';
import type { Domain, DomainsService } from '../domains/index.ts';
import type { EndpointsService } from '../endpoints/index.ts';
import type { SandboxDns } from './sandbox-dns.ts';

export const SANDBOX_DOMAIN = 'mailroom.test';
/** The MX host the sandbox domain is created with, unless MX_HOST says otherwise. */
export const SANDBOX_MX_HOST = `mx.${SANDBOX_DOMAIN}`;
const SANDBOX_ADDRESS = `inbox@${SANDBOX_DOMAIN}`;
/** Where the catch-all endpoint would post once activated; a placeholder the user replaces. */
const CATCH_ALL_URL = 'http://127.0.0.1:8080/webhook';
const PAGE = 100;

export interface SandboxServices {
  accounts: AccountsService;
  domains: DomainsService;
  addresses: EmailAddressesService;
  endpoints: EndpointsService;
}

export interface Sandbox {
  /** A key of the default account: MAILROOM_API_KEY when set and not revoked, else one issued for this run. */
  key: string;
  /** When MAILROOM_API_KEY was revoked, so that a key was issued in its place. */
  configuredKeyRevokedAt?: string;
  address: string;
  domainId: string;
  /** Whether the domain's other addresses are accepted too (a rerun keeps the user's choice). */
  catchAll: boolean;
}

/**
 * Makes the sandbox exist, through the same services the API uses: the default account, the sandbox domain verified
 * by the real check against the sandbox DNS server, an active address, and a catch-all whose endpoint is switched off
 * (so any other address on the domain is accepted and stored, with no delivery). A rerun finds what is there and
 * only makes sure the domain is verified and its address is active.
 */
export async function setUpSandbox(
  services: SandboxServices,
  dns: SandboxDns,
  configuredKey?: string,
): Promise<Sandbox> {
  const { accounts, domains, addresses, endpoints } = services;
  // A revoked MAILROOM_API_KEY stays revoked; the sandbox prints a key that works instead.
  const revokedAt = configuredKey ? (await accounts.ensureKey(DEFAULT_ACCOUNT, configuredKey)).revokedAt : null;
  const key = configuredKey && !revokedAt ? configuredKey : (await accounts.createKey(DEFAULT_ACCOUNT)).key;
  const accountId = (await accounts.findByName(DEFAULT_ACCOUNT))!.id;

  let domain = await findDomain(domains, accountId);
  const created = !domain;
  if (!domain) domain = (await domains.create(accountId, SANDBOX_DOMAIN)).domain;
  // The zone lives in memory, so each run publishes the records the domain was created with.
  dns.publish((await domains.dnsRecords(accountId, domain.id)).records.filter((record) => record.isRequired));
  if (domain.status !== 'verified') {
    const checked = await domains.get(accountId, domain.id, { check: true });
    if (checked.domain.status !== 'verified') {
      throw new Error(`The sandbox domain did not verify: ${JSON.stringify(checked.verificationCheck)}`);
    }
    domain = checked.domain;
  }

  // Only a new sandbox gets the catch-all: a rerun keeps what the user made of the domain since.
  if (created) {
    const endpoint = await endpoints.create(accountId, {
      name: 'Sandbox catch-all',
      type: 'webhook',
      config: { url: CATCH_ALL_URL },
      description: 'Set its URL to your receiver and activate it to get the catch-all mail as webhooks',
    });
    await domains.updateCatchAll(accountId, domain.id, { isCatchAllEnabled: true, catchAllEndpointId: endpoint.id });
    await endpoints.update(accountId, endpoint.id, { isActive: false });
  }

  const inbox = await findInbox(addresses, accountId, domain.id);
  if (!inbox) await addresses.create(accountId, { address: SANDBOX_ADDRESS, domainId: domain.id });
  else if (!inbox.isActive) await addresses.update(accountId, inbox.id, { isActive: true });
  return {
    key,
    ...(revokedAt ? { configuredKeyRevokedAt: revokedAt } : {}),
    address: SANDBOX_ADDRESS,
    domainId: domain.id,
    catchAll: created || domain.isCatchAllEnabled,
  };
}

async function findDomain(domains: DomainsService, accountId: string): Promise<Domain | undefined> {
  return findInPages(
    async (offset) => {
      const page = await domains.list(accountId, { limit: PAGE, offset });
      return { items: page.domains.map(({ domain }) => domain), total: page.total };
    },
    ({ domain }) => domain === SANDBOX_DOMAIN,
  );
}

/** The sandbox address among the domain's addresses, however many the user added (newest are listed first). */
async function findInbox(addresses: EmailAddressesService, accountId: string, domainId: string) {
  return findInPages(
    (offset) => addresses.list(accountId, { limit: PAGE, offset, domainId }),
    ({ address }) => address === SANDBOX_ADDRESS,
  );
}

/** The first item `wanted` picks, reading a list PAGE items at a time until one does or none are left. */
async function findInPages<T>(
  read: (offset: number) => Promise<{ items: T[]; total: number }>,
  wanted: (item: T) => boolean,
): Promise<T | undefined> {
  for (let offset = 0; ; offset += PAGE) {
    const { items, total } = await read(offset);
    const found = items.find(wanted);
    if (found) return found;
    if (offset + PAGE >= total) return undefined;
  }
}
