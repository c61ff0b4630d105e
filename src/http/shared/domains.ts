import { Type } from 'typebox';
import type { DomainsService } from '../../domains/index.ts';
import type { MailService } from '../../mail/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { pageInfo, pagination } from '../pagination.ts';
import { ErrorBody, errorResponses, IdParams, NullableString, Pagination, PaginationQuery } from '../schemas.ts';
import { type Api, BodyTypes, Flag, type Tags } from './api.ts';
import {
  CatchAllUpdateSchema,
  CreatedDomainSchema,
  DnsRecordSchema,
  DomainDetailSchema,
  DomainItemSchema,
  presentCatchAll,
  presentCreatedDomain,
  presentDnsRecord,
  presentDomainDetail,
  presentDomainItem,
} from './presenters/domains.ts';

/** Domain routes. Both families serve the same shapes; they differ only in the catch-all verb and v2's `meta`. */

interface DomainRouteOptions {
  tags: Tags;
  domains: DomainsService;
}

/** `GET /domains`; `withMeta` adds v2's `meta` counts. */
export function listDomains(app: Api, { tags, domains, withMeta }: DomainRouteOptions & { withMeta: boolean }) {
  app.get(
    '/domains',
    {
      schema: {
        tags,
        summary: 'List domains',
        querystring: Type.Object({
          ...PaginationQuery,
          status: Type.Optional(
            Type.Union([Type.Literal('pending'), Type.Literal('verified'), Type.Literal('failed')]),
          ),
          canReceive: Type.Optional(Flag),
          check: Type.Optional(Flag),
        }),
        response: {
          200: Type.Object({
            data: Type.Array(DomainItemSchema),
            pagination: Pagination,
            capabilities: Type.Object({ envelopeRecipients: Type.Boolean() }),
            meta: Type.Optional(
              Type.Object(
                {
                  totalCount: Type.Integer(),
                  verifiedCount: Type.Integer(),
                  withCatchAllCount: Type.Integer(),
                  statusBreakdown: Type.Object({
                    verified: Type.Integer(),
                    pending: Type.Integer(),
                    failed: Type.Integer(),
                  }),
                },
                { description: 'v2 only' },
              ),
            ),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const page = pagination(request.query);
      const check = request.query.check === 'true';
      const { domains: rows, total } = await domains.list(request.account.id, {
        ...page,
        status: request.query.status,
        canReceive: request.query.canReceive === undefined ? undefined : request.query.canReceive === 'true',
        check,
      });
      const body = {
        data: rows.map((row) => presentDomainItem(row.domain, row.verificationCheck)),
        pagination: pageInfo(page, total, rows.length),
        capabilities: { envelopeRecipients: true },
      };
      if (!withMeta) return body;
      const { withCatchAll, ...statusBreakdown } = await domains.summary(request.account.id);
      return {
        ...body,
        meta: {
          totalCount: statusBreakdown.pending + statusBreakdown.verified + statusBreakdown.failed,
          verifiedCount: statusBreakdown.verified,
          withCatchAllCount: withCatchAll,
          statusBreakdown,
        },
      };
    },
  );
}

export function createDomain(app: Api, { tags, domains }: DomainRouteOptions) {
  app.post(
    '/domains',
    {
      schema: {
        tags,
        summary: 'Add a domain',
        description: 'Returns the DNS records to publish. The body is JSON, urlencoded or multipart.',
        consumes: BodyTypes,
        body: Type.Object({ domain: Type.Optional(Type.String({ description: '1 to 253 characters' })) }),
        response: { 201: CreatedDomainSchema, 403: ErrorBody, 409: ErrorBody, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) => {
      const created = await domains.create(request.account.id, request.body?.domain);
      return reply.code(201).send(presentCreatedDomain(created));
    },
  );
}

/** `GET /domains/:id`; `mail` counts the domain's received mail for `stats.emailsLast24h/7d/30d`. */
export function readDomain(
  app: Api,
  { tags, domains, mail }: DomainRouteOptions & { mail: Pick<MailService, 'countsByDomain'> },
) {
  app.get(
    '/domains/:id',
    {
      schema: {
        tags,
        summary: 'Read a domain',
        description: 'With `check=true`, checks every DNS record live and adds `verificationCheck`.',
        params: IdParams,
        querystring: Type.Object({ check: Type.Optional(Flag) }),
        response: { 200: DomainDetailSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { domain, records, verificationCheck } = await domains.get(request.account.id, request.params.id, {
        check: request.query.check === 'true',
      });
      const emailCounts = await mail.countsByDomain(request.account.id, domain.id);
      return presentDomainDetail(domain, records, emailCounts, verificationCheck);
    },
  );
}

/**
 * Catch-all configuration: e2 uses PATCH, v2 PUT. `isCatchAllEnabled` is required unless the body only sets
 * `includeSubdomains`; the first form is listed first so that a body missing both is told about `isCatchAllEnabled`.
 */
export function configureCatchAll(
  app: Api,
  { tags, domains, method }: DomainRouteOptions & { method: 'PATCH' | 'PUT' },
) {
  app.route({
    method,
    url: '/domains/:id',
    schema: {
      tags,
      summary: 'Configure catch-all',
      description:
        'With `includeSubdomains` (a verified root domain only), mail to any subdomain not added as a domain of its own is accepted and goes to the catch-all endpoint; the answer gives the wildcard MX record to publish.',
      consumes: BodyTypes,
      params: IdParams,
      body: Type.Union([
        Type.Object({
          isCatchAllEnabled: Type.Boolean(),
          catchAllEndpointId: Type.Optional(NullableString()),
          includeSubdomains: Type.Optional(Type.Boolean()),
        }),
        Type.Object({ includeSubdomains: Type.Boolean() }),
      ]),
      response: { 200: CatchAllUpdateSchema, 409: ErrorBody, ...errorResponses },
    },
    handler: async (request) => {
      const updated = await domains.updateCatchAll(request.account.id, request.params.id, request.body);
      return presentCatchAll(updated.domain, updated.wildcardMxRecord);
    },
  });
}

export function deleteDomain(app: Api, { tags, domains }: DomainRouteOptions) {
  app.delete(
    '/domains/:id',
    {
      schema: {
        tags,
        summary: 'Delete a domain',
        description:
          'Deletes its addresses and DNS records. A domain with dependent subdomains, or under legal hold (itself or one of its addresses), cannot be deleted.',
        params: IdParams,
        response: {
          200: Type.Object({
            success: Type.Boolean(),
            message: Type.String(),
            deletedResources: Type.Object({
              domain: Type.String(),
              emailAddresses: Type.Integer(),
              dnsRecords: Type.Integer(),
              blockedEmails: Type.Integer(),
              sesIdentity: Type.Boolean(),
              sesReceiptRules: Type.Boolean(),
            }),
          }),
          409: ErrorBody,
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const removed = await domains.remove(request.account.id, request.params.id);
      return {
        success: true,
        message: `Successfully deleted domain ${removed.domain} and all associated resources`,
        deletedResources: { ...removed, blockedEmails: 0, sesIdentity: false, sesReceiptRules: false },
      };
    },
  );
}

export function domainDnsRecords(app: Api, { tags, domains }: DomainRouteOptions) {
  app.get(
    '/domains/:id/dns-records',
    {
      schema: {
        tags,
        summary: 'DNS records of a domain',
        params: IdParams,
        response: {
          200: Type.Object({ domainId: Type.String(), domain: Type.String(), records: Type.Array(DnsRecordSchema) }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { domain, records } = await domains.dnsRecords(request.account.id, request.params.id);
      return { domainId: domain.id, domain: domain.domain, records: records.map(presentDnsRecord) };
    },
  );
}
