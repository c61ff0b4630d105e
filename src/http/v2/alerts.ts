import { Type } from 'typebox';
import type { AlertsService } from '../../alerts/index.ts';
import { emptyBodyAsObject } from '../empty-body.ts';
import { errorResponses, IdParams } from '../schemas.ts';
import { type Api, BodyTypes, type Tags } from '../shared/api.ts';
import { paginatedListRoute } from '../shared/paginated-list.ts';
import { AlertSchema, AlertSettingsSchema, presentAlert, presentAlertSettings } from './presenters/alerts.ts';

/**
 * Health alerts: the list (`/alerts`), one alert and its acknowledgement, and the account's alert settings (the
 * alert webhook endpoint and the silent-inbox period) at `/alerts/settings`.
 */

interface AlertRouteOptions {
  tags: Tags;
  alerts: AlertsService;
}

const ALERT_RULES =
  'An alert is raised once while its condition holds and cleared when it ends: `dns_drift` (a verified domain whose ' +
  'MX or verification TXT record stopped matching; cleared when they match again), `silent_inbox` (an address or ' +
  'domain that received nothing for `silentAfterHours`; cleared by its next mail), `delivery_failed` (a delivery to ' +
  'the endpoint ended failed; cleared when a later one succeeds) and `endpoint_deactivated` (its receiver answered ' +
  '410; cleared when it is active again). Each raise and clear is an `alert.raised` or `alert.cleared` event on the ' +
  'event stream and a signed webhook to the alert endpoint.';

/** A whole number, or null; one multi-type schema so that coercion does not turn null into 0. */
const NullableHours = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  description: 'Hours without mail, 1 to 8760, after which an address or domain raises silent_inbox; null: off',
});
const NullableUrl = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  description: 'http(s) URL that receives the alert webhooks; null: none are sent',
});

export function listAlerts(app: Api, { tags, alerts }: AlertRouteOptions) {
  paginatedListRoute(app, {
    path: '/alerts',
    tags,
    summary: "The account's health alerts, newest first",
    description: `${ALERT_RULES} \`status=open\` lists the open ones only.`,
    filters: {
      status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('all')], { default: 'all' })),
    },
    key: 'data',
    item: AlertSchema,
    list: (accountId, page, query) => alerts.list(accountId, { ...page, status: query.status ?? 'all' }),
    present: presentAlert,
  });
}

export function readAlert(app: Api, { tags, alerts }: AlertRouteOptions) {
  app.get(
    '/alerts/:id',
    {
      schema: {
        tags,
        summary: 'One health alert',
        params: IdParams,
        response: { 200: AlertSchema, ...errorResponses },
      },
    },
    async (request) => presentAlert(await alerts.get(request.account.id, request.params.id)),
  );
}

export function acknowledgeAlert(app: Api, { tags, alerts }: AlertRouteOptions) {
  app.post(
    '/alerts/:id/acknowledge',
    {
      preValidation: emptyBodyAsObject,
      schema: {
        tags,
        summary: 'Acknowledge a health alert',
        description: 'Records when and by which API key; the alert stays open until its condition ends.',
        consumes: BodyTypes,
        params: IdParams,
        response: { 200: AlertSchema, ...errorResponses },
      },
    },
    async (request) => presentAlert(await alerts.acknowledge(request.account.id, request.params.id, request.apiKeyId)),
  );
}

export function readAlertSettings(app: Api, { tags, alerts }: AlertRouteOptions) {
  app.get(
    '/alerts/settings',
    {
      schema: {
        tags,
        summary: "The account's alert endpoint and silent-inbox period",
        response: { 200: AlertSettingsSchema, ...errorResponses },
      },
    },
    async (request) => presentAlertSettings(await alerts.settings(request.account.id)),
  );
}

export function setAlertSettings(app: Api, { tags, alerts }: AlertRouteOptions) {
  app.put(
    '/alerts/settings',
    {
      schema: {
        tags,
        summary: "Set the account's alert endpoint and silent-inbox period",
        description:
          'A field left out stays as it is. The first save makes a `whsec_` secret unless `secret` is given; alert ' +
          'webhooks are signed with it like deliveries (Standard Webhooks) and retried on the delivery schedule. ' +
          'Switching the silent period off clears its open alerts.',
        body: Type.Object({
          endpointUrl: Type.Optional(NullableUrl),
          secret: Type.Optional(Type.String({ description: 'At least 16 characters; `whsec_<base64>` or any text' })),
          silentAfterHours: Type.Optional(NullableHours),
        }),
        response: { 200: AlertSettingsSchema, ...errorResponses },
      },
    },
    async (request) => presentAlertSettings(await alerts.updateSettings(request.account.id, request.body)),
  );
}
