/**
 * Download URLs (spec 2.6, 4.3): the format and stored form of their secrets, and the public origin
 * they point at.
 */
import { createHash } from "node:crypto";
import { ApiError } from "../errors";

/** A download URL secret as issued: 32 random bytes, base64url (43 characters). */
export const SECRET_FORMAT = /^[A-Za-z0-9_-]{43}$/;

/** The stored form of a download URL secret: SHA-256, base64url. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("base64url");
}

/**
 * `value` as a public origin (`SVC_API_PUBLIC_ORIGIN`): an http(s) origin, optionally with the path
 * prefix a reverse proxy serves the API under, answered without trailing slashes
 * (`https://example.com/svc/` → `https://example.com/svc`); undefined when it is no URL, not http(s),
 * or has credentials, a query or a fragment.
 */
export function asPublicOrigin(value: string): string | undefined {
  if (!URL.canParse(value)) return undefined;
  const url = new URL(value);
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password || url.search || url.hash) return undefined;
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * The path prefix of a public origin (`SVC_API_PUBLIC_ORIGIN`, `Config.basePath`): its URL path without
 * trailing slashes, `/svc` for `https://example.com/svc/`; `""` for none, or for an undefined or
 * unparsable value.
 */
export function basePathOf(publicOrigin: string | undefined): string {
  return publicOrigin && URL.canParse(publicOrigin) ? new URL(publicOrigin).pathname.replace(/\/+$/, "") : "";
}

/**
 * Checks the public origin download URLs point at (spec 4.3: `SVC_API_PUBLIC_ORIGIN`, an http(s) origin,
 * optionally with the path prefix of a reverse proxy) and answers it without a trailing slash.
 * @throws {ApiError} `not_configured` (503) naming `SVC_API_PUBLIC_ORIGIN` when it is missing; Error when it is not an http(s) origin
 */
export function publicOriginOf(value: string | undefined): string {
  if (!value) {
    throw new ApiError("not_configured", "Download URLs need SVC_API_PUBLIC_ORIGIN: set it to the address external services reach this API at (for example https://api.example.com); local addresses are unreachable for external services", { variable: "SVC_API_PUBLIC_ORIGIN" });
  }
  if (!URL.canParse(value)) throw new Error(`SVC_API_PUBLIC_ORIGIN must be an origin such as https://api.example.com (got ${JSON.stringify(value)})`);
  const origin = asPublicOrigin(value);
  if (origin === undefined) throw new Error(`SVC_API_PUBLIC_ORIGIN must be an http(s) origin such as https://api.example.com (got ${JSON.stringify(value)})`);
  return origin;
}
