import { Type } from 'typebox';
import type { EmailAddressesService } from '../../addresses/index.ts';
import { ClearableString, emptyBodyAsObject } from '../empty-body.ts';
import { ErrorBody, errorResponses, IdParams } from '../schemas.ts';
import { type Api, BodyTypes, Flag, type Tags } from './api.ts';
import { paginatedListRoute } from './paginated-list.ts';
import { AddressDeletedSchema, EmailAddressSchema, presentEmailAddress } from './presenters/email-addresses.ts';
import { updateRoute } from './update-route.ts';

/** Email address routes; both families serve the same shapes. */

interface EmailAddressRouteOptions {
  tags: Tags;
  addresses: EmailAddressesService;
}

const TargetId = ClearableString;

function flag(value: 'true' | 'false' | undefined): boolean | undefined {
  return value === undefined ? undefined : value === 'true';
}

export function listEmailAddresses(app: Api, { tags, addresses }: EmailAddressRouteOptions) {
  paginatedListRoute(app, {
    path: '/email-addresses',
    tags,
    summary: 'List email addresses',
    filters: {
      domainId: Type.Optional(Type.String()),
      isActive: Type.Optional(Flag),
      isReceiptRuleConfigured: Type.Optional(Flag),
    },
    key: 'data',
    item: EmailAddressSchema,
    list: (accountId, page, query) =>
      addresses.list(accountId, {
        ...page,
        domainId: query.domainId,
        isActive: flag(query.isActive),
        isReceiptRuleConfigured: flag(query.isReceiptRuleConfigured),
      }),
    present: (address) => presentEmailAddress(address, { listItem: true }),
  });
}

export function createEmailAddress(app: Api, { tags, addresses }: EmailAddressRouteOptions) {
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
}

export function readEmailAddress(app: Api, { tags, addresses }: EmailAddressRouteOptions) {
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
}

export function updateEmailAddress(app: Api, { tags, addresses }: EmailAddressRouteOptions) {
  updateRoute(app, {
    path: '/email-addresses/:id',
    tags,
    summary: 'Update routing or activity',
    description: 'Only the fields sent change. Setting one routing id clears the other; null removes that routing.',
    consumes: BodyTypes,
    fields: { endpointId: TargetId, webhookId: TargetId, isActive: Type.Optional(Type.Boolean()) },
    item: EmailAddressSchema,
    update: (accountId, id, changes) => addresses.update(accountId, id, changes),
    present: (address) => presentEmailAddress(address),
  });
}

export function deleteEmailAddress(app: Api, { tags, addresses }: EmailAddressRouteOptions) {
  app.delete(
    '/email-addresses/:id',
    {
      schema: {
        tags,
        summary: 'Delete an email address',
        params: IdParams,
        response: { 200: AddressDeletedSchema, 409: ErrorBody, ...errorResponses },
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
}
