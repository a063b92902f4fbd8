import { create as contentDisposition } from "content-disposition";
import { ApiError } from "../errors";
import { parseRangeHeader } from "../files/blob-store";
import type { FileStore } from "../files/file-store";
import { FastResponse } from "./response";

/** Media types a browser would run or render as a page: always served as attachments. */
const ACTIVE_CONTENT = /^(text\/html|application\/xhtml\+xml|image\/svg\+xml|text\/xml|application\/xml|application\/javascript|text\/javascript)$/i;

/**
 * Answers a file's bytes as HTTP (spec 4.1 file content, 2.6 download URLs): `Range` (one range, 206
 * with `Content-Range`, for HEAD too; 416 outside the file), `ETag` = the SHA-256 (`If-None-Match`,
 * weak comparison → 304),
 * `Content-Type`, `Content-Disposition` with a safe filename (RFC 6266 via content-disposition:
 * `filename*` for unicode), `X-Content-Type-Options: nosniff`, `Content-Security-Policy: sandbox` (never
 * a page of this origin) and `Cache-Control: private`. HTML, SVG, XML and scripts (with or without
 * parameters such as `; charset=utf-8`) are always attachments.
 *
 * The bytes go out as the store's Node stream, piped to the socket by srvx with backpressure (a 25 MiB
 * download ran at 0.48 of a bare `node:http` handler through `Readable.toWeb`, at 0.84–1.05 piped:
 * `BENCH_SCRIPTS=files npm run bench`); the stream is destroyed when the client goes away.
 *
 * The caller checks access to the owner first (spec 4.3). A caller that answers with other headers
 * passes `editHeaders` rather than wrapping the answer in a new `Response`: the body is a Node stream
 * that only srvx's `FastResponse` may carry (a `Response` made from its `body` closed the web stream
 * twice and the uncaught error ended the process).
 * @param disposition `attachment` (default) or `inline`
 * @param editHeaders changes the answer's headers (every answer: 200, 206, 304 and HEAD's), given them
 *   with the status, in place
 * @throws {ApiError} not_found (no such file), range_not_satisfiable (416)
 */
export async function serveFile(req: Request, files: FileStore, fileId: string, disposition: "attachment" | "inline" = "attachment", editHeaders?: (headers: Record<string, string>, status: number) => void): Promise<Response> {
  const reference = await files.get(fileId);
  if (!reference) throw new ApiError("not_found", `No file "${fileId}"`);
  const etag = `"${reference.sha256}"`;
  const common: Record<string, string> = {
    etag,
    "accept-ranges": "bytes",
    "content-type": reference.contentType,
    "content-disposition": contentDisposition(reference.name, { type: ACTIVE_CONTENT.test(reference.contentType.split(";")[0]!.trim()) ? "attachment" : disposition }),
    "x-content-type-options": "nosniff",
    // whatever the bytes are, they never run as a page of this origin
    "content-security-policy": "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'",
    "cache-control": "private, no-cache",
  };
  const noneMatch = req.headers.get("if-none-match");
  // weak comparison (RFC 9110 13.1.2): `W/"<sha256>"` matches too
  const edited = (headers: Record<string, string>, status: number) => (editHeaders?.(headers, status), headers);
  if (noneMatch && noneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag || t.trim() === "*")) return new Response(null, { status: 304, headers: edited({ etag }, 304) });
  const ifRange = req.headers.get("if-range");
  const range = !ifRange || ifRange === etag ? parseRangeHeader(req.headers.get("range"), reference.size) : undefined;
  if (range === "unsatisfiable") throw new ApiError("range_not_satisfiable", `The range is outside the file's ${reference.size} bytes`, { size: reference.size }, { "content-range": `bytes */${reference.size}` });
  const opened = await files.open(fileId, range);
  // a 206 always names its range (RFC 9110 15.3.7), a HEAD's too
  const headers = { ...common, "content-length": String(opened.contentLength), ...(opened.range ? { "content-range": `bytes ${opened.range.start}-${opened.range.end}/${opened.size}` } : {}) };
  const status = opened.range ? 206 : 200;
  edited(headers, status);
  if (req.method === "HEAD") {
    opened.stream.destroy();
    return new Response(null, { status, headers });
  }
  // the Node stream as it is: srvx pipes it to the socket with backpressure (no web-stream conversion),
  // answers 500 if it fails before its first byte, and destroys it when the client goes away
  const body = opened.stream as unknown as ReadableStream<Uint8Array>;
  return new FastResponse(body, { status, headers });
}
