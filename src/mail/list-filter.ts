import { domainToASCII } from 'node:url';
import { Invalid } from '../core/index.ts';
import type { Db } from '../db/index.ts';
import type { MailFilter } from '../search/index.ts';

/**
 * A list's filter as the API gives it: `domain` is a domain's name or id (`all`: every domain), and `emailId` stands
 * for every email of that email's thread.
 */
export type ListFilter = MailFilter & { domain?: string; emailId?: string };

/**
 * The filter the list runs: the domain name looked up (so the planner can use the domain index), an address id
 * turned into its address, and `emailId` turned into its thread, archived mail included.
 */
export async function resolveListFilter(db: Db, accountId: string, filter: ListFilter): Promise<MailFilter> {
  if (filter.emailAddress !== undefined && filter.emailId !== undefined) {
    throw new Invalid('Cannot filter by both emailAddress and emailId at the same time');
  }
  const { emailId, domain, emailAddress, ...rest } = filter;
  const resolved: MailFilter = { ...rest };
  if (emailAddress !== undefined) resolved.emailAddress = await addressFilter(db, accountId, emailAddress);
  // Domains are stored in their ASCII form; `bücher.test` names `xn--bcher-kva.test`.
  const name = domain === undefined ? undefined : domainToASCII(domain.trim()) || domain.trim().toLowerCase();
  if (name && name !== 'all') {
    const rows = await db
      .selectFrom('domains')
      .select('id')
      .where('account_id', '=', accountId)
      .where((eb) => eb.or([eb('domain', '=', name), eb('id', '=', domain!.trim())]))
      .execute();
    resolved.domainIds = rows.map((row) => row.id);
  }
  return emailId === undefined ? resolved : { ...resolved, ...(await threadFilter(db, accountId, emailId)) };
}

/** An address as given, or the address of the account's address with that id (the e2 clients send either). */
async function addressFilter(db: Db, accountId: string, value: string): Promise<string> {
  if (value.includes('@')) return value;
  const row = await db
    .selectFrom('email_addresses')
    .select('address')
    .where('account_id', '=', accountId)
    .where('id', '=', value)
    .executeTakeFirst();
  return row?.address ?? value;
}

async function threadFilter(db: Db, accountId: string, emailId: string): Promise<MailFilter> {
  const row = await db
    .selectFrom('emails')
    .select(['id', 'thread_id'])
    .where('account_id', '=', accountId)
    .where('id', '=', emailId)
    .executeTakeFirst();
  if (!row) return { ids: [] };
  return row.thread_id ? { threadId: row.thread_id, archived: 'include' } : { ids: [row.id], archived: 'include' };
}
