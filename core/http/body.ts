import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { ApiError } from "../errors";

/** Request body limit (spec 8): 1 MiB. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** `payload_too_large` (413) for a body over `limit` bytes. */
function tooLarge(limit: number): ApiError {
  return new ApiError("payload_too_large", `Request body exceeds ${limit} bytes`, { limit });
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
  const node = unreadNodeRequest(req);
  if (node) return readNodeRequest(node, limit);
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
 * The request body as a Node `Readable`, for parsers that stream it (spec 4.1 `POST /api/files`): the
 * Node request itself under srvx's Node adapter while it is unread (srvx's `req.body` is
 * `Readable.toWeb` of it, which a parser would turn back with `Readable.fromWeb`: two conversions per
 * chunk), else `Readable.fromWeb(req.body)`. Never throws.
 *
 * To stop reading early, call `abandon()`, not `destroy()`: destroying a Node request closes its
 * socket before the refusal can be sent. `abandon()` stops the stream and, while part of a Node
 * request's body is unread, makes whatever answer follows close the connection (`Connection: close`).
 * A web body (a `Request` made in process, another server) is cancelled.
 * @returns undefined when the request has no body
 */
export function requestBodyStream(req: Request): { stream: Readable; abandon(): void } | undefined {
  const node = unreadNodeRequest(req);
  if (node) return { stream: node.req, abandon: () => abandonNodeRequest(node) };
  if (!req.body) return undefined;
  const stream = Readable.fromWeb(req.body as WebReadableStream<Uint8Array>);
  return {
    stream,
    abandon: () => {
      stream.unpipe();
      stream.destroy();
    },
  };
}

/** A request of srvx's Node adapter: the Node request and its response. */
interface NodeExchange {
  req: IncomingMessage;
  res?: ServerResponse;
}

/**
 * The Node request (and response) under a request of srvx's Node adapter (`req.runtime.node`) while
 * its body is still to be read and nothing listens to it, else undefined (another server, a `Request`
 * made in process, a GET, a body already read, being read or abandoned: those go through `req.body`).
 */
function unreadNodeRequest(req: Request): NodeExchange | undefined {
  if (req.method === "GET" || req.method === "HEAD") return undefined;
  const node = (req as { runtime?: { node?: { req?: IncomingMessage; res?: ServerResponse } } }).runtime?.node;
  const incoming = node?.req;
  if (!incoming || typeof incoming.on !== "function" || incoming.readableEnded || incoming.destroyed || incoming.readableDidRead || incoming.listenerCount("data") > 0) return undefined;
  return { req: incoming, res: node.res };
}

/**
 * Stops reading a Node request's body for good: pauses it and, while part of it is unread, makes the
 * answer close the connection (Node writes `Connection: close` and closes after it): the connection's
 * parser is still inside this body, so a keep-alive client's next request on it would wait. Whatever
 * the answer (a 4xx, or a 500 from a failure after this), it reaches the client.
 */
function abandonNodeRequest({ req, res }: NodeExchange): void {
  req.unpipe();
  req.pause();
  if (!req.readableEnded && res) res.shouldKeepAlive = false;
}

/**
 * Reads a Node request's body from its `data` events: what `req.body` would give, without making it a
 * web `ReadableStream` first (srvx builds one with `Readable.toWeb`; for a small JSON body that cost
 * more than the rest of reading it). Over `limit` reading stops and the refusal (413) closes the connection.
 */
function readNodeRequest(node: NodeExchange, limit: number): Promise<Uint8Array> {
  const incoming = node.req;
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
        abandonNodeRequest(node);
        reject(tooLarge(limit));
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
 *   invalid_request (malformed JSON, or nested deeper than {@link MAX_JSON_DEPTH})
 */
export async function readJsonBody(req: Request): Promise<unknown> {
  const bytes = await readBodyBytes(req);
  if (bytes.byteLength === 0) return emptyJsonBody();
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json" && !type.endsWith("+json")) {
    throw new ApiError("unsupported_media_type", "The body must be JSON with Content-Type: application/json", { contentType: type || null });
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new ApiError("invalid_request", `The body is not valid JSON: ${(err as Error).message}`);
  }
  // nesting deeper than the limit takes more opening brackets than that: a shorter body (every action
  // run's, on the hot path) is not walked
  if (bytes.byteLength > MAX_JSON_DEPTH && nestedDeeperThan(value, MAX_JSON_DEPTH)) throw new ApiError("invalid_request", `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

/**
 * How deep a request body's arrays and objects may nest. Deeper values parse, but writing them back
 * (`JSON.stringify`, valibot's recursion) overflows the stack: a 500 for a 40 KB body.
 */
export const MAX_JSON_DEPTH = 256;

/** Whether `value` nests arrays and objects deeper than `max` levels (iterative: no recursion to overflow). */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}
