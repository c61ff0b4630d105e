import { Type } from 'typebox';
import type { Endpoint, EndpointCleanup, EndpointDetail } from '../../../endpoints/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';

const EndpointTypeSchema = Type.Union([Type.Literal('webhook'), Type.Literal('email'), Type.Literal('email_group')]);

const DeliveryStatsSchema = Type.Object({
  total: Type.Integer(),
  successful: Type.Integer(),
  failed: Type.Integer(),
  lastDelivery: Nullable(DateTime),
});

const endpointFields = {
  id: Type.String(),
  name: Type.String(),
  type: EndpointTypeSchema,
  config: Type.Unknown({
    description:
      'By type: webhook {url, secret?, headers?, timeout, retryAttempts, verificationToken}; email {forwardTo, ' +
      'email (the same address), includeAttachments, subjectPrefix?, fromAddress?, senderName?}; email_group ' +
      '{emails, ...the same options}',
  }),
  isActive: Type.Boolean(),
  deactivatedReason: Type.Optional(
    Type.String({ description: 'Present when Mailroom switched the endpoint off, e.g. after a 410 Gone' }),
  ),
  description: Nullable(Type.String()),
  userId: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime,
  groupEmails: Nullable(Type.Array(Type.String())),
};

export const UpdatedEndpointSchema = Type.Object(endpointFields);
export const EndpointSchema = Type.Object({ ...endpointFields, deliveryStats: DeliveryStatsSchema });

export const EndpointDetailSchema = Type.Object({
  ...endpointFields,
  deliveryStats: DeliveryStatsSchema,
  recentDeliveries: Type.Array(
    Type.Object({
      id: Type.String(),
      emailId: Type.String(),
      deliveryType: Type.String(),
      status: Type.String(),
      attempts: Type.Integer(),
      lastAttemptAt: Nullable(DateTime),
      responseData: Type.Unknown(),
      createdAt: DateTime,
    }),
  ),
  associatedEmails: Type.Array(
    Type.Object({ id: Type.String(), address: Type.String(), isActive: Type.Boolean(), createdAt: DateTime }),
  ),
  catchAllDomains: Type.Array(Type.Object({ id: Type.String(), domain: Type.String(), status: Type.String() })),
});

export const EndpointDeletedSchema = Type.Object({
  message: Type.String(),
  cleanup: Type.Object({
    emailAddressesUpdated: Type.Integer(),
    emailAddresses: Type.Array(Type.String()),
    domainsUpdated: Type.Integer(),
    domains: Type.Array(Type.String()),
    groupEmailsDeleted: Type.Integer(),
    deliveriesDeleted: Type.Integer({ description: 'Always 0: Mailroom keeps the delivery history' }),
  }),
});

/** An endpoint's stored config; a forward target also as `email`, the name `@inboundemail/sdk` types it by. */
export function presentEndpointConfig(config: Record<string, unknown>) {
  return typeof config.forwardTo === 'string' ? { ...config, email: config.forwardTo } : config;
}

export function presentUpdatedEndpoint(endpoint: Endpoint) {
  return {
    id: endpoint.id,
    name: endpoint.name,
    type: endpoint.type,
    config: presentEndpointConfig(endpoint.config),
    isActive: endpoint.isActive,
    ...(endpoint.deactivatedReason ? { deactivatedReason: endpoint.deactivatedReason } : {}),
    description: endpoint.description,
    userId: endpoint.accountId,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt,
    groupEmails: endpoint.groupEmails,
  };
}

export function presentEndpoint(endpoint: Endpoint) {
  return { ...presentUpdatedEndpoint(endpoint), deliveryStats: endpoint.deliveryStats };
}

export function presentEndpointDetail(endpoint: EndpointDetail) {
  return {
    ...presentEndpoint(endpoint),
    recentDeliveries: endpoint.recentDeliveries,
    associatedEmails: endpoint.associatedEmails,
    catchAllDomains: endpoint.catchAllDomains,
  };
}

export function presentEndpointCleanup(cleanup: EndpointCleanup) {
  return {
    message: 'Endpoint deleted successfully',
    cleanup: {
      emailAddressesUpdated: cleanup.emailAddresses.length,
      emailAddresses: cleanup.emailAddresses,
      domainsUpdated: cleanup.domains.length,
      domains: cleanup.domains,
      groupEmailsDeleted: cleanup.groupEmailsDeleted,
      deliveriesDeleted: 0,
    },
  };
}
