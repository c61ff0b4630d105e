import { Type } from 'typebox';
import type { Webhook } from '../../../endpoints/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';

export const WebhookSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  url: Type.String(),
  secret: Nullable(Type.String({ description: 'Signs deliveries: `X-Webhook-Signature: sha256=<hex HMAC>`' })),
  headers: Nullable(Type.Record(Type.String(), Type.String())),
  timeout: Type.Integer({ description: 'Seconds, 1 to 300' }),
  retryAttempts: Type.Integer({ description: '0 to 10' }),
  isActive: Type.Boolean(),
  description: Nullable(Type.String()),
  verificationToken: Type.String({ description: 'Sent as X-Webhook-Verification-Token' }),
  lastUsed: Nullable(DateTime),
  totalDeliveries: Type.Integer(),
  successfulDeliveries: Type.Integer(),
  failedDeliveries: Type.Integer(),
  createdAt: DateTime,
  updatedAt: DateTime,
  userId: Type.String(),
});

export const WebhookDeletedSchema = Type.Object({
  message: Type.String(),
  cleanup: Type.Object({
    emailAddressesUpdated: Type.Integer(),
    emailAddresses: Type.Array(Type.String()),
    deliveriesDeleted: Type.Integer({ description: 'Always 0: Mailroom keeps the delivery history' }),
  }),
});

export function presentWebhook(webhook: Webhook) {
  return {
    id: webhook.id,
    name: webhook.name,
    url: webhook.url,
    secret: webhook.secret,
    headers: webhook.headers,
    timeout: webhook.timeout,
    retryAttempts: webhook.retryAttempts,
    isActive: webhook.isActive,
    description: webhook.description,
    verificationToken: webhook.verificationToken,
    lastUsed: webhook.deliveryStats.lastDelivery,
    totalDeliveries: webhook.deliveryStats.total,
    successfulDeliveries: webhook.deliveryStats.successful,
    failedDeliveries: webhook.deliveryStats.failed,
    createdAt: webhook.createdAt,
    updatedAt: webhook.updatedAt,
    userId: webhook.accountId,
  };
}

export function presentWebhookCleanup(cleanup: { emailAddresses: string[] }) {
  return {
    message: 'Webhook deleted successfully',
    cleanup: {
      emailAddressesUpdated: cleanup.emailAddresses.length,
      emailAddresses: cleanup.emailAddresses,
      deliveriesDeleted: 0,
    },
  };
}
