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
  listDomains(api, { tags: tags('domains'), domains, withMeta: options.domainMeta }); // GET /domains
  createDomain(api, { tags: tags('domains'), domains }); // POST /domains
  readDomain(api, { tags: tags('domains'), domains, mail }); // GET /domains/:id
  configureCatchAll(api, { tags: tags('domains'), domains, method: options.catchAllMethod }); // PATCH|PUT /domains/:id
  deleteDomain(api, { tags: tags('domains'), domains }); // DELETE /domains/:id
  domainDnsRecords(api, { tags: tags('domains'), domains }); // GET /domains/:id/dns-records
  listEmailAddresses(api, { tags: tags('email addresses'), addresses }); // GET /email-addresses
  createEmailAddress(api, { tags: tags('email addresses'), addresses }); // POST /email-addresses
  readEmailAddress(api, { tags: tags('email addresses'), addresses }); // GET /email-addresses/:id
  updateEmailAddress(api, { tags: tags('email addresses'), addresses }); // PUT /email-addresses/:id
  deleteEmailAddress(api, { tags: tags('email addresses'), addresses }); // DELETE /email-addresses/:id
  listEndpoints(api, { tags: tags('endpoints'), endpoints }); // GET /endpoints
  createEndpoint(api, { tags: tags('endpoints'), endpoints }); // POST /endpoints
  readEndpoint(api, { tags: tags('endpoints'), endpoints }); // GET /endpoints/:id
  updateEndpoint(api, { tags: tags('endpoints'), endpoints }); // PUT /endpoints/:id
  deleteEndpoint(api, { tags: tags('endpoints'), endpoints }); // DELETE /endpoints/:id
  testEndpoint(api, { tags: tags('deliveries'), deliveries, endpoints }); // POST /endpoints/:id/test
  sendEmail(api, { tags: tags('emails') }); // POST /emails
  sendBatch(api, { tags: tags('emails') }); // POST /emails/batch
  scheduleEmail(api, { tags: tags('emails') }); // POST /emails/schedule
  listScheduledEmails(api, { tags: tags('emails') }); // GET /emails/schedule
  readScheduledEmail(api, { tags: tags('emails') }); // GET /emails/schedule/:id
  cancelScheduledEmail(api, { tags: tags('emails') }); // DELETE /emails/schedule/:id
  downloadAttachmentByIndex(api, { tags: tags('attachments'), mail }); // GET /attachments/:emailId/parts/:idOrIndex
  downloadAttachmentByName(api, { tags: tags('attachments'), mail }); // GET /attachments/:emailId/:filename
}
