import { Type } from 'typebox';
import type { DeliveryRecord, EndpointTestResult } from '../../../delivery/index.ts';
import { DateTime, Nullable } from '../../schemas.ts';

export const EndpointTestSchema = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  responseTime: Type.Integer({ description: 'milliseconds' }),
  statusCode: Type.Optional(Type.Integer()),
  responseBody: Type.Optional(Type.String({ description: 'the first 2,000 characters' })),
  error: Type.Optional(Type.String()),
  testPayload: Type.Optional(Type.Unknown({ description: 'the synthetic email.received body that was sent' })),
  webhookFormat: Type.Optional(Type.Literal('inbound')),
  urlTested: Type.Optional(Type.String()),
});

export const E2RetrySchema = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  delivery_id: Type.Optional(Type.String()),
});

export const V2RetrySchema = Type.Object({
  success: Type.Boolean(),
  message: Type.String(),
  deliveryId: Type.String(),
});

export const ReplaySchema = Type.Object({
  replayed: Type.Integer({ description: 'deliveries queued again' }),
  deliveryIds: Type.Array(Type.String()),
});

function retryMessage(count: number): string {
  return count === 1 ? 'Delivery queued for retry' : `${count} deliveries queued for retry`;
}

export function presentE2Retry(deliveryIds: string[]) {
  return { success: true, message: retryMessage(deliveryIds.length), delivery_id: deliveryIds[0] };
}

export function presentV2Retry(deliveryIds: string[]) {
  return { success: true, message: retryMessage(deliveryIds.length), deliveryId: deliveryIds[0]! };
}

export function presentEndpointTest(result: EndpointTestResult) {
  return result;
}

const deliveryFields = {
  id: Type.String(),
  emailId: Type.String(),
  endpointId: Type.String({ description: 'the endpoint or legacy webhook id' }),
  targetType: Type.Union([Type.Literal('endpoint'), Type.Literal('webhook')]),
  deliveryType: Type.Union([Type.Literal('webhook'), Type.Literal('email_forward')]),
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('processing'),
    Type.Literal('success'),
    Type.Literal('failed'),
  ]),
  attempts: Type.Integer(),
  nextAttemptAt: Nullable(DateTime),
  lastAttemptAt: Nullable(DateTime),
  lastError: Nullable(Type.String()),
  responseData: Nullable(
    Type.Object(
      {
        responseCode: Nullable(Type.Integer()),
        responseBody: Nullable(Type.String()),
        deliveryTime: Type.Integer({ description: 'milliseconds' }),
        url: Nullable(Type.String()),
      },
      { additionalProperties: true },
    ),
  ),
  createdAt: DateTime,
  updatedAt: DateTime,
};

export const DeliverySchema = Type.Object(deliveryFields);

const AttemptSchema = Type.Object({
  attempt: Type.Integer(),
  startedAt: DateTime,
  durationMs: Type.Integer(),
  success: Type.Boolean(),
  statusCode: Nullable(Type.Integer()),
  responseBody: Nullable(Type.String({ description: 'the first 2,000 characters' })),
  error: Nullable(Type.String()),
  url: Nullable(Type.String()),
  recipients: Nullable(
    Type.Array(
      Type.Object({
        address: Type.String(),
        status: Type.String(),
        response: Type.Optional(Type.String()),
        error: Type.Optional(Type.String()),
      }),
    ),
  ),
});

export const DeliveryDetailSchema = Type.Object({ ...deliveryFields, attemptLog: Type.Array(AttemptSchema) });

type DeliveryRow = Omit<DeliveryRecord, 'attempt_log'>;

export function presentDelivery(row: DeliveryRow) {
  return {
    id: row.id,
    emailId: row.email_id,
    endpointId: row.target_id,
    targetType: row.target_type,
    deliveryType: row.delivery_type,
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptAt: row.status === 'pending' ? row.next_attempt_at : null,
    lastAttemptAt: row.last_attempt_at,
    lastError: row.last_error,
    responseData: row.response_data ? JSON.parse(row.response_data) : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function presentDeliveryDetail(record: DeliveryRecord) {
  return {
    ...presentDelivery(record),
    attemptLog: record.attempt_log.map((attempt) => ({
      attempt: Number(attempt.attempt),
      startedAt: attempt.started_at,
      durationMs: Number(attempt.duration_ms),
      success: Number(attempt.success) === 1,
      statusCode: attempt.status_code === null ? null : Number(attempt.status_code),
      responseBody: attempt.response_body,
      error: attempt.error,
      url: attempt.url,
      recipients: attempt.recipients ? JSON.parse(attempt.recipients) : null,
    })),
  };
}
