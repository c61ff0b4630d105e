export {
  createSmtpReceiver,
  SMTP_REFUSAL_REASONS,
  type SmtpObserver,
  type SmtpReceiver,
  type SmtpReceiverOptions,
  type SmtpRefusalReason,
} from './smtp-receiver.ts';
export { loadTlsMaterial, type TlsMaterial } from './tls-material.ts';
