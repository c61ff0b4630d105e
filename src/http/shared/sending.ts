import { NotSupported } from '../../core/index.ts';
import { ErrorBody } from '../schemas.ts';
import type { Api, Tags } from './api.ts';

/**
 * Sending and scheduling. Mailroom keeps no sent mail, so these answer 501 in both families rather than pretending
 * (with `x-should-retry: false`, set where every 501 is answered).
 */

interface SendingRouteOptions {
  tags: Tags;
}

const SENDING_NOT_SUPPORTED = 'Sending is not supported by Mailroom';

function notSupported(app: Api, tags: Tags, method: 'GET' | 'POST' | 'DELETE', url: string, summary: string) {
  app.route({
    method,
    url,
    // 401 first: like every route of the family, these ask for a key before saying they are not supported.
    schema: { tags, summary, description: 'Not supported: answers 501.', response: { 401: ErrorBody, 501: ErrorBody } },
    handler: async () => {
      throw new NotSupported(SENDING_NOT_SUPPORTED);
    },
  });
}

export function sendEmail(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'POST', '/emails', 'Send an email');
}

export function sendBatch(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'POST', '/emails/batch', 'Send a batch of emails');
}

export function scheduleEmail(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'POST', '/emails/schedule', 'Schedule an email');
}

export function listScheduledEmails(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'GET', '/emails/schedule', 'List scheduled emails');
}

export function readScheduledEmail(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'GET', '/emails/schedule/:id', 'Read a scheduled email');
}

export function cancelScheduledEmail(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'DELETE', '/emails/schedule/:id', 'Cancel a scheduled email');
}

/** Replies are sent mail too: e2 and v2 `POST /emails/{id}/reply` (the v2 placeholder stays on `POST /mail`). */
export function replyToEmail(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'POST', '/emails/:id/reply', 'Reply to an email');
}

/** v2 `GET /emails/{id}` reads sent mail (received mail is read at `/mail/{id}`). */
export function readSentEmail(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'GET', '/emails/:id', 'Read a sent email');
}

/** e2 `DELETE /emails/{id}` cancels a scheduled email. */
export function cancelEmail(app: Api, { tags }: SendingRouteOptions) {
  notSupported(app, tags, 'DELETE', '/emails/:id', 'Cancel a scheduled email');
}
