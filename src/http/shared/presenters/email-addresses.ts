import { Type } from 'typebox';
import type { EmailAddress } from '../../../addresses/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';
import { presentEndpointConfig } from './endpoints.ts';

const RoutingSchema = Type.Object({
  type: Type.Union([Type.Literal('endpoint'), Type.Literal('webhook'), Type.Literal('none')]),
  id: Nullable(Type.String()),
  name: Nullable(Type.String()),
  config: Type.Optional(Type.Unknown({ description: "The target's config; absent when routing is `none`" })),
  isActive: Type.Boolean({ description: 'Whether the target is active; false when routing is `none`' }),
  endpointType: Type.Optional(
    Type.Union([Type.Literal('webhook'), Type.Literal('email'), Type.Literal('email_group')], {
      description: 'In lists, when routing is `endpoint`',
    }),
  ),
});

export const EmailAddressSchema = Type.Object({
  id: Type.String(),
  address: Type.String({ description: 'Stored lower-cased; unique across all accounts' }),
  domainId: Type.String(),
  webhookId: Nullable(Type.String()),
  endpointId: Nullable(Type.String()),
  isActive: Type.Boolean(),
  isReceiptRuleConfigured: Type.Boolean({
    description: 'True when the SMTP receiver accepts mail for the address now: it is active and its domain verified',
  }),
  receiptRuleName: Nullable(
    Type.String({ description: 'Always null: Mailroom receives mail itself, with no SES rule' }),
  ),
  createdAt: DateTime,
  updatedAt: DateTime,
  userId: Type.String(),
  domain: Type.Object({ id: Type.String(), name: Type.String(), status: Type.String() }),
  routing: RoutingSchema,
  warning: Type.Optional(Type.String({ description: 'Why the address cannot receive mail yet' })),
});

export const AddressDeletedSchema = Type.Object({
  message: Type.String(),
  cleanup: Type.Object({
    emailAddress: Type.String(),
    domain: Type.String(),
    sesRuleUpdated: Type.Boolean(),
  }),
});

export function presentEmailAddress(address: EmailAddress, options: { listItem?: boolean } = {}) {
  const { routing } = address;
  return {
    id: address.id,
    address: address.address,
    domainId: address.domainId,
    webhookId: address.webhookId,
    endpointId: address.endpointId,
    isActive: address.isActive,
    isReceiptRuleConfigured: address.isReceiptRuleConfigured,
    receiptRuleName: null,
    createdAt: address.createdAt,
    updatedAt: address.updatedAt,
    userId: address.accountId,
    domain: address.domain,
    routing: {
      type: routing.type,
      id: routing.id,
      name: routing.name,
      ...(routing.config ? { config: presentEndpointConfig(routing.config) } : {}),
      isActive: routing.isActive,
      ...(options.listItem && routing.endpointType ? { endpointType: routing.endpointType } : {}),
    },
    ...(address.warning ? { warning: address.warning } : {}),
  };
}
