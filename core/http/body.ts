import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { ApiError } from "../errors";

/** Request body limit (spec 8): 1 MiB. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** `payload_too_large` (413) for a body over `limit` bytes, with the answer's extra headers. */
function tooLarge(limit: number, headers?: Record<string, string>): ApiError {
  return new ApiError("payload_too_large", `Request body exceeds ${limit} bytes`, { limit }, headers);
}

/**
 * Reads the whole request body, refusing bodies over `limit` bytes with 413 `payload_too_large`
 * whether or not Content-Length is sent: a declared length over the limit is refused before reading;
 * a chunked body is counted as it streams and abandoned as soon as it passes the limit.
 *
 * @returns the raw bytes (empty for no body)
 * @throws {ApiError} payload_too_large
 */
export async function readBodyBytes(req: Request, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  const incoming = unreadNodeRequest(req);
  if (incoming) return readNodeRequest(incoming, limit);
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/**
 * The request body as a Node `Readable`, for parsers that stream it (multipart uploads): the Node
 * request itself under srvx's Node adapter while it is unread (srvx's `req.body` is `Readable.toWeb`
 * of it, which a parser would turn back with `Readable.fromWeb`: two conversions per chunk), else
 * `Readable.fromWeb(req.body)`.
 *
 * To stop reading early, call `abandon()`, not `destroy()`: destroying a Node request closes its
 * socket before the refusal can be sent. `abandon()` stops the stream and answers the headers the
 * refusal must carry: `Connection: close` while part of a Node request's body is still unread (Node
 * then closes the connection once the answer is written, instead of reading the rest), else none.
 * @returns undefined when the request has no body
 */
export function requestBodyStream(req: Request): { stream: Readable; abandon(): Record<string, string> } | undefined {
  const incoming = unreadNodeRequest(req);
  if (incoming) {
    return {
      stream: incoming,
      abandon: (): Record<string, string> => {
        incoming.unpipe();
        incoming.pause();
        return incoming.readableEnded ? {} : { connection: "close" };
      },
    };
  }
  if (!req.body) return undefined;
  const stream = Readable.fromWeb(req.body as WebReadableStream<Uint8Array>);
  return {
    stream,
    abandon: () => {
      stream.unpipe();
      stream.destroy();
      return {};
    },
  };
}

/**
 * The Node request under a request of srvx's Node adapter (`req.runtime.node.req`) while its body is
 * still to be read and nothing listens to it, else undefined (another server, a `Request` made in
 * process, a GET, a body already read, being read or abandoned: those go through `req.body`).
 */
function unreadNodeRequest(req: Request): IncomingMessage | undefined {
  if (req.method === "GET" || req.method === "HEAD") return undefined;
  const incoming = (req as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
  if (!incoming || typeof incoming.on !== "function" || incoming.readableEnded || incoming.destroyed || incoming.readableDidRead || incoming.listenerCount("data") > 0) return undefined;
  return incoming;
}

/**
 * Reads a Node request's body from its `data` events: what `req.body` would give, without making it a
 * web `ReadableStream` first (srvx builds one with `Readable.toWeb`; for a small JSON body that cost
 * more than the rest of reading it). Over `limit` reading stops and the refusal (413) closes the connection.
 */
function readNodeRequest(incoming: IncomingMessage, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      incoming.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        stop();
        // nothing more is read: the connection cannot carry another request (its parser is inside this
        // body), so the 413 closes it (without `Connection: close` a keep-alive client would wait on it)
        incoming.pause();
        reject(tooLarge(limit, { connection: "close" }));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    const onClose = () => {
      stop();
      reject(incoming.errored ?? new Error("The client closed the connection before the request body was read"));
    };
    incoming.on("data", onData).once("end", onEnd).once("error", onError).once("close", onClose);
  });
}

/** What {@link readJsonBody} answers for an empty body: `{}` (a fresh object each time). */
export function emptyJsonBody(): Record<string, never> {
  return {};
}

/**
 * Reads a JSON body (spec 4.2: JSON with an appropriate content type). An empty body reads as
 * {@link emptyJsonBody} (`{}`), so a route whose body schema accepts `{}` documents its body as optional.
 * @throws {ApiError} payload_too_large, unsupported_media_type (not `application/json` or `+json`),
 *   invalid_request (malformed JSON)
 */
export async function readJsonBody(req: Request): Promise<unknown> {
  const bytes = await readBodyBytes(req);
  if (bytes.byteLength === 0) return emptyJsonBody();
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json" && !type.endsWith("+json")) {
    throw new ApiError("unsupported_media_type", "The body must be JSON with Content-Type: application/json", { contentType: type || null });
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new ApiError("invalid_request", `The body is not valid JSON: ${(err as Error).message}`);
  }
}
