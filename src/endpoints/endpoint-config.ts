import { validateHeaderName, validateHeaderValue } from 'node:http';
import { isIP } from 'node:net';
import { Invalid, withinAddressLength } from '../core/index.ts';

export const ENDPOINT_TYPES = ['webhook', 'email', 'email_group'] as const;
export type EndpointType = (typeof ENDPOINT_TYPES)[number];

export const DEFAULT_TIMEOUT_SECONDS = 30;
export const DEFAULT_RETRY_ATTEMPTS = 3;
const MAX_GROUP_SIZE = 50;
/**
 * The format the original service accepts for forward targets (`x@y.z`), less the characters that make an address
 * parse as another one (`a,b@x.test` is sent to b@x.test, `a<b@x.test` too); an address literal (`x@[192.0.2.1]`) is
 * a domain too.
 */
const ADDRESS_FORMAT = /^[^\s@<>()[\],;:\\"]+@(?:\[[^\s@<>()[\],;\\"]+\]|[^\s@<>()[\],;\\"]+\.[^\s@<>()[\],;\\"]+)$/;
/**
 * The IP address of an address literal domain (RFC 5321 section 4.1.3: `[192.0.2.1]`, `[IPv6:2001:db8::1]`, or
 * untagged `[2001:db8::1]`), or undefined when the domain is not one.
 */
export function addressLiteral(domain: string): string | undefined {
  const ip = /^\[(?:ipv6:)?(.*)\]$/i.exec(domain)?.[1];
  return ip !== undefined && isIP(ip) ? ip : undefined;
}

/**
 * Within SMTP's lengths too: a longer address could never be sent to. So could no bracketed domain but an IP
 * address (`[IPv4:192.0.2.1]`, `[0x7f.1]`, `[mail.example.com]`).
 */
const isAddress = (value: string) => {
  const domain = value.slice(value.lastIndexOf('@') + 1);
  return (
    ADDRESS_FORMAT.test(value) &&
    withinAddressLength(value) &&
    (!domain.startsWith('[') || addressLiteral(domain) !== undefined)
  );
};

export interface WebhookSettings {
  url: string;
  secret?: string;
  headers?: Record<string, string>;
  timeout: number;
  retryAttempts: number;
}

export interface ForwardSettings {
  includeAttachments: boolean;
  preserveHeaders?: boolean;
  subjectPrefix?: string;
  fromAddress?: string;
  senderName?: string;
}

const MAX_NAME = 255;
const MAX_DESCRIPTION = 1000;

export function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_NAME) throw new Invalid('Name must be 1 to 255 characters');
  return trimmed;
}

export function checkDescription(description: string | null | undefined): string | null {
  if (description === undefined || description === null) return null;
  if (description.length > MAX_DESCRIPTION) throw new Invalid('Description must be at most 1000 characters');
  return description;
}

/** What a config needs checked outside itself: the destination guard and the account's verified domains. */
export interface ConfigChecks {
  assertPublicUrl(url: string): Promise<void>;
  assertPublicForwardAddress(address: string): void;
  isVerifiedDomain(domain: string): Promise<boolean>;
}

/** Standard Webhooks secrets: the prefix, then the key in base64, which receivers' libraries decode strictly. */
export const STANDARD_SECRET_PREFIX = 'whsec_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Why a signing secret cannot be verified by Standard Webhooks libraries, or undefined when it can. */
export function signingSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(STANDARD_SECRET_PREFIX)) return undefined;
  const key = secret.slice(STANDARD_SECRET_PREFIX.length);
  if (key !== '' && BASE64.test(key)) return undefined;
  return 'A whsec_ secret must be base64 after its prefix (Standard Webhooks libraries decode it)';
}

function invalid(details: string): Invalid {
  return new Invalid('Invalid configuration', { details });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(config: Record<string, unknown>, key: string): string | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(`${key} must be a string`);
  return value;
}

/** Whole numbers only: both values are stored as integers, and a fractional retry count means nothing. */
function inRange(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

const MAX_TIMEOUT_SECONDS = 300;

/**
 * A webhook `timeout` in seconds (1-300, as the spec says). Above 300, a whole number of seconds written in
 * milliseconds (`@inboundemail/sdk`'s `setupDomain` sends 30000) is read as those seconds; anything else is refused,
 * so a typo is not silently turned into a different timeout.
 */
function timeoutSeconds(value: unknown): number {
  if (inRange(value, 1, MAX_TIMEOUT_SECONDS)) return value;
  if (inRange(value, 1000, MAX_TIMEOUT_SECONDS * 1000) && value % 1000 === 0) return value / 1000;
  throw invalid('Timeout must be a number between 1 and 300 seconds');
}

/** Custom headers HTTP can carry: a name that is a token, a value without line breaks or other control characters. */
function assertSendableHeaders(headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    try {
      validateHeaderName(name);
    } catch {
      throw invalid(`Invalid header name: ${JSON.stringify(name)}`);
    }
    try {
      validateHeaderValue(name, value);
    } catch {
      throw invalid(`Invalid value for header ${name}: line breaks and control characters are not allowed`);
    }
  }
}

/** The webhook fields shared by webhook endpoints and legacy webhooks, with defaults applied. */
export function webhookSettings(config: Record<string, unknown>): WebhookSettings {
  const url = config.url;
  if (url === undefined || url === null || url === '') throw invalid('Webhook URL is required');
  if (typeof url !== 'string' || !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw invalid('Invalid webhook URL format');
  }
  const timeout = timeoutSeconds(config.timeout ?? DEFAULT_TIMEOUT_SECONDS);
  const retryAttempts = config.retryAttempts ?? DEFAULT_RETRY_ATTEMPTS;
  if (!inRange(retryAttempts, 0, 10)) throw invalid('Retry attempts must be a number between 0 and 10');
  const headers = config.headers ?? undefined;
  if (headers !== undefined && (!isObject(headers) || !Object.values(headers).every((v) => typeof v === 'string'))) {
    throw invalid('Headers must be an object with string values');
  }
  if (headers !== undefined) assertSendableHeaders(headers as Record<string, string>);
  const secret = optionalString(config, 'secret');
  const secretProblem = secret === undefined ? undefined : signingSecretProblem(secret);
  if (secretProblem) throw invalid(secretProblem);
  return {
    url,
    ...(secret ? { secret } : {}),
    ...(headers ? { headers: headers as Record<string, string> } : {}),
    timeout,
    retryAttempts,
  };
}

async function forwardSettings(config: Record<string, unknown>, checks: ConfigChecks): Promise<ForwardSettings> {
  const includeAttachments = config.includeAttachments ?? true;
  if (typeof includeAttachments !== 'boolean') throw invalid('includeAttachments must be a boolean');
  const preserveHeaders = config.preserveHeaders ?? undefined;
  if (preserveHeaders !== undefined && typeof preserveHeaders !== 'boolean') {
    throw invalid('preserveHeaders must be a boolean');
  }
  const subjectPrefix = optionalString(config, 'subjectPrefix');
  const senderName = optionalString(config, 'senderName');
  const fromAddress = optionalString(config, 'fromAddress')?.trim().toLowerCase();
  if (fromAddress !== undefined) {
    if (!isAddress(fromAddress)) throw invalid('Invalid from address format');
    const domain = fromAddress.slice(fromAddress.lastIndexOf('@') + 1);
    if (!(await checks.isVerifiedDomain(domain))) {
      throw invalid(`From address must be on a verified domain of your account: ${domain} is not`);
    }
  }
  return {
    includeAttachments,
    ...(preserveHeaders !== undefined ? { preserveHeaders } : {}),
    ...(subjectPrefix !== undefined ? { subjectPrefix } : {}),
    ...(fromAddress !== undefined ? { fromAddress } : {}),
    ...(senderName !== undefined ? { senderName } : {}),
  };
}

/**
 * Validates a config against its type's table in the spec and returns the stored form: known keys only, with
 * defaults written out so reads show them. Throws 400 `Invalid configuration` with the reference's `details`.
 */
export async function normalizeConfig(
  type: EndpointType,
  config: unknown,
  checks: ConfigChecks,
): Promise<Record<string, unknown>> {
  if (!isObject(config)) throw invalid('Configuration must be an object');
  if (type === 'webhook') {
    const settings = webhookSettings(config);
    await checks.assertPublicUrl(settings.url);
    return { ...settings };
  }
  if (type === 'email') {
    // `@inboundemail/sdk`'s createForwarder sends the target as `email`.
    const target = config.forwardTo ?? config.email;
    if (target === undefined || target === null || target === '') throw invalid('Forward-to email address is required');
    if (typeof target !== 'string' || !isAddress(target.trim())) {
      throw invalid('Invalid forward-to email address format');
    }
    checks.assertPublicForwardAddress(target.trim());
    return { forwardTo: target.trim().toLowerCase(), ...(await forwardSettings(config, checks)) };
  }
  const emails = config.emails;
  if (!Array.isArray(emails)) throw invalid('Email group must have an emails array');
  if (emails.length === 0) throw invalid('Email group must have at least one email address');
  if (emails.length > MAX_GROUP_SIZE) throw invalid('Email group cannot have more than 50 email addresses');
  const normalized: string[] = [];
  for (const email of emails) {
    if (typeof email !== 'string' || !isAddress(email.trim())) {
      throw invalid(`Invalid email address in group: ${typeof email === 'string' ? email : JSON.stringify(email)}`);
    }
    checks.assertPublicForwardAddress(email.trim());
    normalized.push(email.trim().toLowerCase());
  }
  if (new Set(normalized).size !== normalized.length) throw invalid('Email group contains duplicate email addresses');
  return { emails: normalized, ...(await forwardSettings(config, checks)) };
}
