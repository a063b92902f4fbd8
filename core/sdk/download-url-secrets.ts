/**
 * Download URLs' secrets (spec 2.6, 4.3) in text: where they sit, and the same text without them. Pure
 * (no Node module), so the workflow isolate's engine uses it as the Node side does. A download URL is
 * `<origin>/api/download/<secret>`, the secret 43 base64url characters; inside another URL's query it
 * is percent-encoded (`%2Fapi%2Fdownload%2F<secret>`).
 */

/** A download URL's secret with what precedes it: the path, plain or percent-encoded (any case). */
const SECRET_IN_TEXT = /(\/api\/download\/|%2Fapi%2Fdownload%2F)[A-Za-z0-9_-]{43}/gi;

/** What {@link withoutDownloadSecrets} writes in place of a secret. */
export const REDACTED_SECRET = "[secret]";

/** The marks of a download URL in text or bytes: its path, plain and percent-encoded (both cases of the hex). */
export const DOWNLOAD_URL_MARKS = ["/api/download/", "%2Fapi%2Fdownload%2F", "%2fapi%2fdownload%2f"] as const;

/**
 * `text` with every download URL's secret replaced by {@link REDACTED_SECRET} (the origin and path
 * stay, so the message still says which kind of link it was): for error messages and stack traces,
 * which Temporal keeps as plain text in a run's history.
 */
export function withoutDownloadSecrets(text: string): string {
  return text.replace(SECRET_IN_TEXT, `$1${REDACTED_SECRET}`);
}
