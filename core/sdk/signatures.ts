/**
 * Signature verification for inbound webhooks (spec 2.12, the `verify` step; spec 3 "Verify": a throw
 * answers 401 and the delivery is not an execution). Each helper reads the `WebhookRequest`'s headers
 * and raw bytes, before any parsing, and either returns or throws a `WebhookVerificationError`.
 *
 * Common rules:
 * - Every secret parameter takes one secret or an array of them (key rotation): the request passes
 *   when any secret produces one of the signatures it carries.
 * - Digests are compared as bytes with `crypto.timingSafeEqual`, only on equal-length buffers (a
 *   signature of the wrong length simply does not match).
 * - Timestamped schemes refuse a timestamp more than `toleranceSec` seconds away from now in either
 *   direction (replayed, or signed by a sender whose clock is far ahead).
 * - Empty secrets are refused (`invalid_secret`): an HMAC keyed with "" is forgeable by anyone, so an
 *   unset environment variable fails closed instead of accepting every request.
 *
 * Built on `node:crypto` only.
 * @example verify: (req) => verifyStripeSignature(req, process.env.STRIPE_WEBHOOK_SECRET!)
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { WebhookRequest } from "./connector";

/**
 * Why a request failed verification:
 * - `missing_header`: a required signature or timestamp header is absent or empty;
 * - `malformed_header`: a header is present but not in the scheme's format (for example a timestamp
 *   that is not whole unix seconds, or no signature of the supported version);
 * - `timestamp_out_of_tolerance`: the signed timestamp is further than `toleranceSec` from now, in the
 *   past or in the future;
 * - `bad_signature`: the header is well formed but no signature matches any secret;
 * - `invalid_secret`: the configured secret is empty (or, for Standard Webhooks, not base64): a
 *   configuration error, refused rather than verified against.
 */
export type WebhookVerificationReason = "missing_header" | "malformed_header" | "timestamp_out_of_tolerance" | "bad_signature" | "invalid_secret";

/**
 * Thrown by the verification helpers (and usable by custom `verify` functions): the runtime answers
 * 401 and records nothing (spec 3). `reason` is a stable code for logs and tests; `message` is for
 * people and never contains a secret or an expected signature.
 */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
  /** Stable code of the failure. */
  readonly reason: WebhookVerificationReason;

  /**
   * @param reason stable code (see `WebhookVerificationReason`)
   * @param message human-readable detail
   */
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Options of the timestamped helpers. */
export interface VerifyOptions {
  /** Largest accepted distance between the signed timestamp and now, in seconds, both ways. Default 300. Must be a finite number >= 0. */
  toleranceSec?: number;
  /** The current time in milliseconds since the epoch (for tests). Default `Date.now`. */
  now?: () => number;
}

/** One secret, or several during a key rotation (any of them may have signed the request). */
export type WebhookSecret = string | readonly string[];

const DEFAULT_TOLERANCE_SEC = 300;
const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const UNIX_SECONDS = /^\d{1,15}$/;

/** The secrets as a non-empty list of non-empty strings. @throws WebhookVerificationError `invalid_secret` */
function secretList(secret: WebhookSecret, scheme: string): string[] {
  const list = typeof secret === "string" ? [secret] : [...secret];
  if (list.length === 0 || list.some((s) => typeof s !== "string" || s.length === 0)) {
    throw new WebhookVerificationError("invalid_secret", `${scheme}: no webhook secret is configured (empty secret)`);
  }
  return list;
}

/** The header's value, or a `missing_header` error when it is absent or blank. */
function requireHeader(request: WebhookRequest, name: string): string {
  const value = request.headers.get(name);
  if (value === null || value.trim() === "") throw new WebhookVerificationError("missing_header", `Missing ${name} header`);
  return value.trim();
}

/** HMAC-SHA256 of the UTF-8 `prefix` followed by the raw body bytes. */
function hmac(key: string | Buffer, prefix: string, rawBody: Uint8Array): Buffer {
  return createHmac("sha256", key).update(prefix, "utf8").update(rawBody).digest();
}

/** Constant-time byte comparison; buffers of different lengths never match (and never throw). */
function bytesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Parses a unix-seconds timestamp header and checks it against the tolerance, both directions.
 * @throws WebhookVerificationError `malformed_header` when not whole seconds; `timestamp_out_of_tolerance`
 * @throws RangeError when `toleranceSec` is negative or not finite
 */
function checkTimestamp(value: string, header: string, opts: VerifyOptions | undefined): void {
  const toleranceSec = opts?.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  if (!Number.isFinite(toleranceSec) || toleranceSec < 0) throw new RangeError(`toleranceSec must be a finite number >= 0, got ${toleranceSec}`);
  if (!UNIX_SECONDS.test(value)) throw new WebhookVerificationError("malformed_header", `${header} must be a unix timestamp in whole seconds`);
  const nowSec = Math.floor((opts?.now ?? Date.now)() / 1000);
  const skew = nowSec - Number(value);
  if (Math.abs(skew) > toleranceSec) {
    throw new WebhookVerificationError(
      "timestamp_out_of_tolerance",
      `${header} is ${Math.round(Math.abs(skew))} s ${skew > 0 ? "in the past" : "in the future"} (tolerance ${toleranceSec} s)`,
    );
  }
}

/**
 * Whether any candidate digest equals the HMAC under any key. Every comparison is constant time.
 * @param digestFor computes the expected digest under one key
 */
function anyMatch<K>(keys: K[], candidates: Buffer[], digestFor: (key: K) => Buffer): boolean {
  for (const key of keys) {
    const expected = digestFor(key);
    for (const candidate of candidates) if (bytesEqual(candidate, expected)) return true;
  }
  return false;
}

/**
 * Verifies a Standard Webhooks signature (https://www.standardwebhooks.com, used by Svix, Resend,
 * Clerk, Supabase, …).
 *
 * Headers: `webhook-id`, `webhook-timestamp` (unix seconds) and `webhook-signature`, a space-separated
 * list of `<version>,<base64>` entries; only `v1` entries (HMAC-SHA256) are checked, others (such as
 * the asymmetric `v1a`) are ignored, and any matching `v1` entry passes. The signed content is the
 * UTF-8 `${webhook-id}.${webhook-timestamp}.` followed by the raw body bytes.
 *
 * @param request the raw request (`verify` step, spec 2.12)
 * @param secret `whsec_<base64>` (the key is the base64-decoded part after the prefix; a secret
 *   without the prefix is base64 too), or an array of them during a rotation
 * @param opts `toleranceSec` (default 300, both directions), `now` (ms)
 * @throws WebhookVerificationError `missing_header` (any of the three headers), `malformed_header`
 *   (timestamp not whole seconds, or no well-formed `v1` entry), `timestamp_out_of_tolerance`,
 *   `bad_signature`, `invalid_secret` (empty, or not base64)
 * @throws RangeError when `opts.toleranceSec` is negative or not finite
 * @example verify: (req) => verifyStandardWebhook(req, process.env.WEBHOOK_SECRET!)
 */
export function verifyStandardWebhook(request: WebhookRequest, secret: WebhookSecret, opts?: VerifyOptions): void {
  const keys = secretList(secret, "Standard Webhooks").map((s) => {
    const encoded = s.startsWith("whsec_") ? s.slice("whsec_".length) : s;
    if (encoded.length === 0 || !BASE64.test(encoded)) throw new WebhookVerificationError("invalid_secret", "Standard Webhooks: the secret must be base64, optionally prefixed with whsec_");
    return Buffer.from(encoded, "base64");
  });
  const id = requireHeader(request, "webhook-id");
  const timestamp = requireHeader(request, "webhook-timestamp");
  const header = requireHeader(request, "webhook-signature");
  checkTimestamp(timestamp, "webhook-timestamp", opts);

  const candidates: Buffer[] = [];
  for (const entry of header.split(/\s+/)) {
    const comma = entry.indexOf(",");
    if (comma < 0 || entry.slice(0, comma) !== "v1") continue;
    const value = entry.slice(comma + 1);
    if (value.length > 0 && BASE64.test(value)) candidates.push(Buffer.from(value, "base64"));
  }
  if (candidates.length === 0) throw new WebhookVerificationError("malformed_header", "webhook-signature has no v1,<base64> entry");

  const prefix = `${id}.${timestamp}.`;
  if (!anyMatch(keys, candidates, (key) => hmac(key, prefix, request.rawBody))) {
    throw new WebhookVerificationError("bad_signature", "No webhook-signature entry matches the payload");
  }
}

/**
 * Verifies Stripe's `Stripe-Signature` header (https://docs.stripe.com/webhooks#verify-manually).
 *
 * Header: `t=<unix seconds>,v1=<hex>[,v1=<hex>…]`; other schemes (`v0`, …) are ignored and any
 * matching `v1` passes (Stripe sends several while an endpoint secret is being rolled). The signature
 * is the hex HMAC-SHA256 of the UTF-8 `${t}.` followed by the raw body bytes, keyed with the whole
 * `whsec_…` string as UTF-8 (not decoded). Unlike the `stripe` library, a timestamp too far in the
 * future is refused as well.
 *
 * @param request the raw request (`verify` step, spec 2.12)
 * @param secret the endpoint's signing secret (`whsec_…`), or an array of them during a rotation
 * @param opts `toleranceSec` (default 300, both directions), `now` (ms)
 * @throws WebhookVerificationError `missing_header`, `malformed_header` (no `t=` in whole seconds, or
 *   no well-formed `v1=` entry), `timestamp_out_of_tolerance`, `bad_signature`, `invalid_secret` (empty)
 * @throws RangeError when `opts.toleranceSec` is negative or not finite
 * @example verify: (req) => verifyStripeSignature(req, process.env.STRIPE_WEBHOOK_SECRET!)
 */
export function verifyStripeSignature(request: WebhookRequest, secret: WebhookSecret, opts?: VerifyOptions): void {
  const keys = secretList(secret, "Stripe");
  const header = requireHeader(request, "stripe-signature");
  let timestamp: string | undefined;
  const candidates: Buffer[] = [];
  for (const item of header.split(",")) {
    const eq = item.indexOf("=");
    if (eq < 0) continue;
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === "t") {
      if (timestamp !== undefined) throw new WebhookVerificationError("malformed_header", "Stripe-Signature has more than one t=");
      timestamp = value;
    } else if (key === "v1" && HEX_SHA256.test(value)) {
      candidates.push(Buffer.from(value, "hex"));
    }
  }
  if (timestamp === undefined) throw new WebhookVerificationError("malformed_header", "Stripe-Signature has no t=<timestamp>");
  if (candidates.length === 0) throw new WebhookVerificationError("malformed_header", "Stripe-Signature has no v1=<hex> signature");
  checkTimestamp(timestamp, "Stripe-Signature t", opts);

  const prefix = `${timestamp}.`;
  if (!anyMatch(keys, candidates, (key) => hmac(key, prefix, request.rawBody))) {
    throw new WebhookVerificationError("bad_signature", "No Stripe-Signature v1 signature matches the payload");
  }
}

/**
 * Verifies GitHub's `X-Hub-Signature-256` header
 * (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries): `sha256=<hex
 * HMAC-SHA256 of the raw body>`, keyed with the webhook secret as UTF-8. GitHub signs no timestamp, so
 * replays are only stopped by the idempotency key (`X-GitHub-Delivery`).
 *
 * @param request the raw request (`verify` step, spec 2.12)
 * @param secret the webhook's secret, or an array of them during a rotation
 * @throws WebhookVerificationError `missing_header`, `malformed_header` (not `sha256=<64 hex>`),
 *   `bad_signature`, `invalid_secret` (empty)
 * @example verify: (req) => verifyGitHubSignature(req, process.env.GITHUB_WEBHOOK_SECRET!)
 */
export function verifyGitHubSignature(request: WebhookRequest, secret: WebhookSecret): void {
  const keys = secretList(secret, "GitHub");
  const header = requireHeader(request, "x-hub-signature-256");
  const value = header.startsWith("sha256=") ? header.slice("sha256=".length) : "";
  if (!HEX_SHA256.test(value)) throw new WebhookVerificationError("malformed_header", "X-Hub-Signature-256 must be sha256=<64 hex digits>");
  const candidate = Buffer.from(value, "hex");
  if (!anyMatch(keys, [candidate], (key) => hmac(key, "", request.rawBody))) {
    throw new WebhookVerificationError("bad_signature", "X-Hub-Signature-256 does not match the payload");
  }
}

/**
 * Verifies Slack's request signature (https://api.slack.com/authentication/verifying-requests-from-slack):
 * `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<X-Slack-Request-Timestamp>:<raw body>">`, keyed with
 * the app's signing secret as UTF-8; the timestamp is unix seconds.
 *
 * @param request the raw request (`verify` step, spec 2.12)
 * @param signingSecret the app's Signing Secret, or an array of them during a rotation
 * @param opts `toleranceSec` (default 300, both directions; Slack recommends 5 minutes), `now` (ms)
 * @throws WebhookVerificationError `missing_header` (either header), `malformed_header` (timestamp not
 *   whole seconds, or signature not `v0=<64 hex>`), `timestamp_out_of_tolerance`, `bad_signature`,
 *   `invalid_secret` (empty)
 * @throws RangeError when `opts.toleranceSec` is negative or not finite
 * @example verify: (req) => verifySlackSignature(req, process.env.SLACK_SIGNING_SECRET!)
 */
export function verifySlackSignature(request: WebhookRequest, signingSecret: WebhookSecret, opts?: VerifyOptions): void {
  const keys = secretList(signingSecret, "Slack");
  const timestamp = requireHeader(request, "x-slack-request-timestamp");
  const header = requireHeader(request, "x-slack-signature");
  checkTimestamp(timestamp, "X-Slack-Request-Timestamp", opts);
  const value = header.startsWith("v0=") ? header.slice("v0=".length) : "";
  if (!HEX_SHA256.test(value)) throw new WebhookVerificationError("malformed_header", "X-Slack-Signature must be v0=<64 hex digits>");
  const candidate = Buffer.from(value, "hex");
  const prefix = `v0:${timestamp}:`;
  if (!anyMatch(keys, [candidate], (key) => hmac(key, prefix, request.rawBody))) {
    throw new WebhookVerificationError("bad_signature", "X-Slack-Signature does not match the payload");
  }
}
