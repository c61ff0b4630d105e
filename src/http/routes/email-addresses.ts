import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { EmailAddressesService } from '../../addresses/index.ts';
import { ClearableString, emptyBodyAsObject } from '../empty-body.ts';
import { pageInfo, pagination } from '../pagination.ts';
import { AddressDeletedSchema, EmailAddressSchema, presentEmailAddress } from '../presenters/email-addresses.ts';
import { ErrorBody, errorResponses, IdParams, Pagination, PaginationQuery } from '../schemas.ts';

export interface EmailAddressRoutesOptions {
  family: 'e2' | 'v2';
  addresses: EmailAddressesService;
}

const BodyTypes = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];
const Flag = Type.Union([Type.Literal('true'), Type.Literal('false')]);
const TargetId = ClearableString;

function flag(value: 'true' | 'false' | undefined): boolean | undefined {
  return value === undefined ? undefined : value === 'true';
}

/** Email address routes; both families serve the same shapes. */
export const emailAddressRoutes: FastifyPluginAsyncTypebox<EmailAddressRoutesOptions> = async (
  app,
  { family, addresses },
) => {
  const tags = [`${family} email addresses`];

  app.get(
    '/email-addresses',
    {
      schema: {
        tags,
        summary: 'List email addresses',
        querystring: Type.Object({
          ...PaginationQuery,
          domainId: Type.Optional(Type.String()),
          isActive: Type.Optional(Flag),
          isReceiptRuleConfigured: Type.Optional(Flag),
        }),
        response: {
          200: Type.Object({ data: Type.Array(EmailAddressSchema), pagination: Pagination }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const page = pagination(request.query);
      const { addresses: rows, total } = await addresses.list(request.account.id, {
        ...page,
        domainId: request.query.domainId,
        isActive: flag(request.query.isActive),
        isReceiptRuleConfigured: flag(request.query.isReceiptRuleConfigured),
      });
      return {
        data: rows.map((row) => presentEmailAddress(row, { listItem: true })),
        pagination: pageInfo(page, total, rows.length),
      };
    },
  );

  app.post(
    '/email-addresses',
    {
      schema: {
        tags,
        summary: 'Create an email address',
        description:
          'The domain need not be verified yet; until it is, `warning` says why the address cannot receive mail.',
        consumes: BodyTypes,
        body: Type.Object({
          address: Type.Optional(Type.String()),
          domainId: Type.Optional(Type.String()),
          endpointId: TargetId,
          webhookId: TargetId,
          isActive: Type.Optional(Type.Boolean()),
        }),
        response: { 201: EmailAddressSchema, 409: ErrorBody, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request, reply) => {
      const created = await addresses.create(request.account.id, request.body);
      return reply.code(201).send(presentEmailAddress(created));
    },
  );

  app.get(
    '/email-addresses/:id',
    {
      schema: {
        tags,
        summary: 'Read an email address',
        params: IdParams,
        response: { 200: EmailAddressSchema, ...errorResponses },
      },
    },
    async (request) => presentEmailAddress(await addresses.get(request.account.id, request.params.id)),
  );

  app.put(
    '/email-addresses/:id',
    {
      schema: {
        tags,
        summary: 'Update routing or activity',
        description: 'Only the fields sent change. Setting one routing id clears the other; null removes that routing.',
        consumes: BodyTypes,
        params: IdParams,
        body: Type.Object({ endpointId: TargetId, webhookId: TargetId, isActive: Type.Optional(Type.Boolean()) }),
        response: { 200: EmailAddressSchema, ...errorResponses },
      },
      preValidation: emptyBodyAsObject,
    },
    async (request) => presentEmailAddress(await addresses.update(request.account.id, request.params.id, request.body)),
  );

  app.delete(
    '/email-addresses/:id',
    {
      schema: {
        tags,
        summary: 'Delete an email address',
        params: IdParams,
        response: { 200: AddressDeletedSchema, ...errorResponses },
      },
    },
    async (request) => {
      const removed = await addresses.remove(request.account.id, request.params.id);
      return {
        message: 'Email address deleted successfully',
        cleanup: { emailAddress: removed.address, domain: removed.domain, sesRuleUpdated: false },
      };
    },
  );
};
