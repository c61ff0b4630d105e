import { type Static, Type } from 'typebox';
import type { Alert, AlertSettings } from '../../../alerts/index.ts';
import { Nullable } from '../../schemas.ts';

const Timestamp = Type.String({ format: 'date-time' });

export const AlertSchema = Type.Object({
  id: Type.String(),
  kind: Type.Union([
    Type.Literal('dns_drift'),
    Type.Literal('silent_inbox'),
    Type.Literal('delivery_failed'),
    Type.Literal('endpoint_deactivated'),
  ]),
  subject: Type.Object({
    type: Type.Union([
      Type.Literal('domain'),
      Type.Literal('address'),
      Type.Literal('endpoint'),
      Type.Literal('webhook'),
    ]),
    id: Type.String(),
    name: Type.String(),
  }),
  details: Type.Record(Type.String(), Type.Unknown(), { description: 'What the check saw when it raised the alert' }),
  status: Type.Union([Type.Literal('open'), Type.Literal('cleared')]),
  raisedAt: Timestamp,
  clearedAt: Nullable(Timestamp),
  acknowledgedAt: Nullable(Timestamp),
  acknowledgedBy: Nullable(Type.String({ description: 'The id of the API key that acknowledged it' })),
});

export const AlertSettingsSchema = Type.Object({
  endpointUrl: Nullable(Type.String({ description: 'Where alert webhooks go; null: none are sent' })),
  secret: Nullable(
    Type.String({ description: 'Signs the alert webhooks (Standard Webhooks); null until settings are saved' }),
  ),
  silentAfterHours: Nullable(
    Type.Integer({ description: 'Hours without mail that make an address or domain a silent inbox; null: off' }),
  ),
});

export const presentAlert = (alert: Alert): Static<typeof AlertSchema> => ({
  id: alert.id,
  kind: alert.kind,
  subject: { type: alert.subject.type, id: alert.subject.id, name: alert.subject.name },
  details: alert.details,
  status: alert.status,
  raisedAt: alert.raisedAt,
  clearedAt: alert.clearedAt,
  acknowledgedAt: alert.acknowledgedAt,
  acknowledgedBy: alert.acknowledgedBy,
});

export const presentAlertSettings = (settings: AlertSettings): Static<typeof AlertSettingsSchema> => ({
  endpointUrl: settings.endpointUrl,
  secret: settings.secret,
  silentAfterHours: settings.silentAfterHours,
});
