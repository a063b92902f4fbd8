import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { ALLOWED_CDN_HOSTS } from "../../core/plugin-api";

/** What a frame link grants: one reader, one version of one deck, until `expiresAt` (ms since the epoch). */
export interface FrameGrant {
  artifactId: string;
  version: number;
  reader: string;
  expiresAt: number;
}

/** Where the deck frames are served: `/artifact-frames/<token>/<path>`. */
export const FRAME_PREFIX = "/artifact-frames/";

/**
 * Short-lived links for deck frames (spec 2.10): an HMAC-SHA256-signed grant in the path, so the deck's
 * relative URLs resolve under it and the frame needs no cookie (it has none: it runs in an opaque origin).
 * The key is made per process, so a restart ends every link (the page mints a new one on reload).
 */
export class FrameLinks {
  private readonly key = randomBytes(32);

  /** @param ttlMs how long a link works, in ms */
  constructor(readonly ttlMs: number) {}

  /** A token for `grant` (without `expiresAt`: now + ttl). */
  mint(grant: Omit<FrameGrant, "expiresAt">, now = Date.now()): string {
    const payload = Buffer.from(JSON.stringify([grant.artifactId, grant.version, grant.reader, now + this.ttlMs])).toString("base64url");
    return `${payload}.${this.sign(payload)}`;
  }

  /** The grant of a token, `expired`, or undefined when it was not made here (or was altered). */
  verify(token: string, now = Date.now()): FrameGrant | "expired" | undefined {
    const [payload, signature, extra] = token.split(".");
    if (!payload || !signature || extra !== undefined) return undefined;
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    try {
      const [artifactId, version, reader, expiresAt] = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as [string, number, string, number];
      if (expiresAt <= now) return "expired";
      return { artifactId, version, reader, expiresAt };
    } catch {
      return undefined;
    }
  }

  private sign(payload: string): string {
    return createHmac("sha256", this.key).update(payload).digest("base64url");
  }
}

/**
 * The CSP of a deck frame (spec 2.10): the document is sandboxed (`allow-scripts` only: an opaque
 * origin, so no cookies, no storage of the app's, no same-origin API calls), and it loads only its own
 * files (under its link's path: not the API, not other frames) and the public CDNs; it can only be
 * framed by the app's own pages.
 * @param base the frame link's absolute base URL, ending in `/`
 * @param origins the app's origins that may frame it
 */
export function frameCsp(base: string, origins: string[]): string {
  const cdns = ALLOWED_CDN_HOSTS.map((h) => `https://${h}`).join(" ");
  const own = `${base} ${cdns}`;
  return [
    "default-src 'none'",
    `script-src ${own} 'unsafe-inline'`,
    `style-src ${own} 'unsafe-inline'`,
    `img-src ${own} data: blob:`,
    `font-src ${own} data:`,
    `media-src ${own} blob:`,
    `connect-src ${own}`,
    "object-src 'none'",
    "frame-src 'none'",
    "worker-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${origins.join(" ")}`,
    "sandbox allow-scripts",
  ].join("; ");
}
