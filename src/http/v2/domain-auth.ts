import type { DomainsService } from '../../domains/index.ts';
import { errorResponses, IdParams } from '../schemas.ts';
import type { Api, Tags } from '../shared/api.ts';
import {
  DomainAuthSetupSchema,
  DomainAuthStatusSchema,
  presentDomainAuthSetup,
  presentDomainAuthStatus,
} from './presenters/domain-auth.ts';

/**
 * `/domains/{id}/auth`, which `@inboundemail/sdk` calls to start and to check verification. Both run Mailroom's
 * own DNS check of the domain's records; the body Inbound reads (`mailFromDomain`, `generateSpf`, ...) is ignored.
 */

interface DomainAuthRouteOptions {
  tags: Tags;
  domains: DomainsService;
}

export function startDomainVerification(app: Api, { tags, domains }: DomainAuthRouteOptions) {
  app.post(
    '/domains/:id/auth',
    {
      schema: {
        tags,
        summary: 'Start domain verification',
        description: 'Checks the DNS records now and answers them with what to publish. Nothing is sent to SES.',
        params: IdParams,
        response: { 201: DomainAuthSetupSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { domain, records } = await domains.get(request.account.id, request.params.id, { check: true });
      return reply.code(201).send(presentDomainAuthSetup(domain, records));
    },
  );
}

export function checkDomainVerification(app: Api, { tags, domains }: DomainAuthRouteOptions) {
  app.patch(
    '/domains/:id/auth',
    {
      schema: {
        tags,
        summary: 'Check domain verification',
        description: 'Checks the DNS records now, as `GET /domains/{id}?check=true` does, and summarises them.',
        params: IdParams,
        response: { 200: DomainAuthStatusSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { domain, records } = await domains.get(request.account.id, request.params.id, { check: true });
      return presentDomainAuthStatus(domain, records);
    },
  );
}
