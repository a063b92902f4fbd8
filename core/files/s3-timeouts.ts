/**
 * Timeouts of the S3 clients (the blob store's and the tus sessions'), in a module of their own: the
 * storage settings (./config.ts) read them without loading the AWS SDK.
 */

/** The default timeouts: 5 s to connect, 30 s of silence mid-request (ms). */
export const S3_TIMEOUTS = { connectMs: 5_000, idleMs: 30_000 } as const;

/**
 * The `requestHandler` settings of an S3 client (`@smithy/node-http-handler`'s `connectionTimeout` and
 * `socketTimeout`, ms) for `timeouts` (`S3BlobStoreConfig.timeouts`), defaults {@link S3_TIMEOUTS}.
 */
export function s3RequestHandler(timeouts: { connectMs?: number; idleMs?: number } = {}): { connectionTimeout: number; socketTimeout: number } {
  return { connectionTimeout: timeouts.connectMs ?? S3_TIMEOUTS.connectMs, socketTimeout: timeouts.idleMs ?? S3_TIMEOUTS.idleMs };
}
