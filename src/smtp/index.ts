export {
  createSmtpReceiver,
  type SmtpObserver,
  type SmtpReceiver,
  type SmtpReceiverOptions,
  type SmtpRefusalReason,
} from './smtp-receiver.ts';
export { loadTlsMaterial, type TlsMaterial } from './tls-material.ts';
