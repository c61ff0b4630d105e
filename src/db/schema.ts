import type { AccountsTable, ApiKeysTable } from './tables/accounts.ts';
import type { EmailAddressesTable } from './tables/addresses.ts';
import type { AlertNotificationsTable, AlertSettingsTable, AlertsTable } from './tables/alerts.ts';
import type { DeliveriesTable, DeliveryAttemptsTable } from './tables/delivery.ts';
import type { DnsRecordsTable, DomainsTable } from './tables/domains.ts';
import type { EndpointsTable, WebhooksTable } from './tables/endpoints.ts';
import type { EventsTable } from './tables/events.ts';
import type { EmailCountsTable, EmailsTable, ThreadsTable } from './tables/mail.ts';
import type { BlobErasuresTable, MailErasuresTable } from './tables/retention.ts';
import type { RoutingVersionTable } from './tables/routing.ts';
import type { BlockedSendersTable, RulesTable } from './tables/rules.ts';

/**
 * The tables shared by SQLite and PostgreSQL, each typed in tables/ beside the others of the capability that owns it.
 * Both databases store the same column types so that one migration list serves both: times are ISO 8601 UTC text
 * (which sorts correctly), booleans are 0/1 integers (Flag), and JSON is text.
 */
export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  domains: DomainsTable;
  dns_records: DnsRecordsTable;
  endpoints: EndpointsTable;
  webhooks: WebhooksTable;
  email_addresses: EmailAddressesTable;
  threads: ThreadsTable;
  emails: EmailsTable;
  email_counts: EmailCountsTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  routing_version: RoutingVersionTable;
  rules: RulesTable;
  blocked_senders: BlockedSendersTable;
  blob_erasures: BlobErasuresTable;
  mail_erasures: MailErasuresTable;
  events: EventsTable;
  alert_settings: AlertSettingsTable;
  alerts: AlertsTable;
  alert_notifications: AlertNotificationsTable;
}
