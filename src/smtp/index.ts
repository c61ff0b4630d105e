export { createSmtpReceiver, type SmtpReceiver, type SmtpReceiverOptions } from './smtp-receiver.ts';
export { loadTlsMaterial, type TlsMaterial } from './tls-material.ts';
