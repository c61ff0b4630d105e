import { setFlagsFromString } from 'node:v8';
import { bootstrapAccess } from './accounts/index.ts';
import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config/index.ts';

/** `npm start`: read config, build the app, print where it listens, and close cleanly on SIGTERM/SIGINT. */
export async function serve(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  // V8 pretenures objects from allocation sites whose objects often survive a young-generation GC. MailParser's
  // per-message objects do, briefly; pretenured into the old generation, they then keep the young objects they point
  // to alive through every young GC until the next full one. V8 flags are process-wide, so this covers the ingest
  // worker threads too; it is set before they start.
  setFlagsFromString('--no-allocation-site-pretenuring');
  const app = await createApp(config);
  const issued = await bootstrapAccess(app.accounts, config.bootstrapApiKey);
  if (issued) {
    process.stdout.write(
      [
        '',
        `Created account "${issued.accountName}". Its API key (shown once, store it now):`,
        '',
        `    ${issued.key}`,
        '',
        'Make more keys with: npx mailroom keys create [--account NAME]',
        '',
      ].join('\n'),
    );
  }
  // Handlers go in before listening, so a signal that arrives right after start-up still closes cleanly.
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.logger.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      (error) => {
        app.logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  const { httpUrl, smtpPort } = await app.start();
  process.stdout.write(`Mailroom HTTP API listening on ${httpUrl} (docs at ${httpUrl}/docs)\n`);
  process.stdout.write(`Mailroom SMTP listening on ${config.smtp.host}:${smtpPort}\n`);
}

if (import.meta.main) await serve();
