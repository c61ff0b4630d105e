import type { HttpServices } from '../server.ts';
import type { Api } from './api.ts';
import { downloadAttachmentByIndex, downloadAttachmentByName } from './attachments.ts';
import { configureCatchAll, createDomain, deleteDomain, domainDnsRecords, listDomains, readDomain } from './domains.ts';
import {
  createEmailAddress,
  deleteEmailAddress,
  listEmailAddresses,
  readEmailAddress,
  updateEmailAddress,
} from './email-addresses.ts';
import { testEndpoint } from './endpoint-test.ts';
import { createEndpoint, deleteEndpoint, listEndpoints, readEndpoint, updateEndpoint } from './endpoints.ts';
import {
  cancelScheduledEmail,
  listScheduledEmails,
  readScheduledEmail,
  scheduleEmail,
  sendBatch,
  sendEmail,
} from './sending.ts';

export interface SharedRouteOptions {
  /** Starts every OpenAPI tag, e.g. `e2` for `e2 domains`. */
  tagPrefix: string;
  /** The verb of the catch-all update of `/domains/{id}`. */
  catchAllMethod: 'PATCH' | 'PUT';
  /** Whether the domain list carries `meta` counts. */
  domainMeta: boolean;
}

/** The routes both families serve alike, in the spec's URL order; each family's table adds its own. */
export function sharedRoutes(api: Api, services: HttpServices, options: SharedRouteOptions) {
  const { domains, addresses, endpoints, deliveries, mail } = services;
  const tags = (group: string) => [`${options.tagPrefix} ${group}`];
  listDomains(api, { tags: tags('domains'), domains, withMeta: options.domainMeta });
  createDomain(api, { tags: tags('domains'), domains });
  readDomain(api, { tags: tags('domains'), domains, mail });
  configureCatchAll(api, { tags: tags('domains'), domains, method: options.catchAllMethod });
  deleteDomain(api, { tags: tags('domains'), domains });
  domainDnsRecords(api, { tags: tags('domains'), domains });
  listEmailAddresses(api, { tags: tags('email addresses'), addresses });
  createEmailAddress(api, { tags: tags('email addresses'), addresses });
  readEmailAddress(api, { tags: tags('email addresses'), addresses });
  updateEmailAddress(api, { tags: tags('email addresses'), addresses });
  deleteEmailAddress(api, { tags: tags('email addresses'), addresses });
  listEndpoints(api, { tags: tags('endpoints'), endpoints });
  createEndpoint(api, { tags: tags('endpoints'), endpoints });
  readEndpoint(api, { tags: tags('endpoints'), endpoints });
  updateEndpoint(api, { tags: tags('endpoints'), endpoints });
  deleteEndpoint(api, { tags: tags('endpoints'), endpoints });
  testEndpoint(api, { tags: tags('deliveries'), deliveries });
  sendEmail(api, { tags: tags('emails') });
  sendBatch(api, { tags: tags('emails') });
  scheduleEmail(api, { tags: tags('emails') });
  listScheduledEmails(api, { tags: tags('emails') });
  readScheduledEmail(api, { tags: tags('emails') });
  cancelScheduledEmail(api, { tags: tags('emails') });
  downloadAttachmentByIndex(api, { tags: tags('attachments'), mail });
  downloadAttachmentByName(api, { tags: tags('attachments'), mail });
}
