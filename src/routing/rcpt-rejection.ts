import type { RejectReason } from './route-decision.ts';

/**
 * The SMTP reply that refuses a recipient, used by the SMTP edge and by the routing explain: a domain Mailroom does
 * not serve is a relay attempt (5.7.1), anything else an unknown user (5.1.1), told apart from a domain still waiting
 * for verification so that its owner sees why.
 */
export function rcptRejection(reason: RejectReason, address: string): { code: 550; message: string } {
  if (reason === 'unknown_domain') return { code: 550, message: '5.7.1 Relaying denied' };
  const why = reason === 'unverified_domain' ? 'Domain not verified yet' : 'User unknown';
  return { code: 550, message: `5.1.1 <${address}>: Recipient address rejected: ${why}` };
}
