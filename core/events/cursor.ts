import { ApiError } from "../errors";

/**
 * Opaque stream cursors. A cursor encodes the stream's epoch (a random id made when the database was
 * created) and the position, base64url-encoded, so clients cannot do arithmetic on it and a cursor of
 * another database is refused instead of silently meaning something else.
 */
export function encodeCursor(epoch: string, seq: number): string {
  return Buffer.from(`c1:${epoch}:${seq}`).toString("base64url");
}

/**
 * Decodes a cursor of this stream into its position.
 * @throws {ApiError} invalid_request when the string is not a cursor of this stream
 */
export function decodeCursor(epoch: string, cursor: string): number {
  const parts = Buffer.from(cursor, "base64url").toString("utf8").split(":");
  const seq = Number(parts[2]);
  if (parts.length !== 3 || parts[0] !== "c1" || parts[1] !== epoch || !Number.isSafeInteger(seq) || seq < 0) {
    throw new ApiError("invalid_request", "afterCursor is not a cursor of this event stream", { afterCursor: cursor });
  }
  return seq;
}
