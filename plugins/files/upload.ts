import type { Readable } from "node:stream";
import busboy from "busboy";
import { ApiError, requestBodyStream, type FileReference, type FileStore } from "../../core/plugin-api";

/** Room for the multipart framing (boundaries, part headers, the `name` field) around the file itself. */
const MULTIPART_SLACK_BYTES = 64 * 1024;

/**
 * Streams the one file part (named `file`) of a `multipart/form-data` request into the file store (spec
 * 4.1 `POST /api/files`): memory stays flat whatever the size (busboy parses as the bytes arrive; the
 * file store hashes and writes them as they come). An optional `name` field (before or after the file
 * part, at most 255 characters; empty is absent) names the file; otherwise the part's filename does. Any
 * other part is refused, and a `file` part without a filename (multipart then calls it a field).
 *
 * Nothing is left in storage when the request is refused: over the limit the store stops and removes
 * what it wrote; a second file part or a malformed body discards the file already stored.
 *
 * @param maxBytes the largest file, in bytes (spec 8: 25 MiB)
 * @throws {ApiError} unsupported_media_type (415) when the body is not multipart/form-data;
 *   payload_too_large (413) over `maxBytes`, with or without Content-Length; invalid_request (400)
 *   with `details.reason` `no_file_part`, `no_filename`, `several_file_parts`, `unknown_field`, `name_too_long` or `malformed`
 */
export async function receiveFile(req: Request, files: FileStore, maxBytes: number, options: { signal?: AbortSignal; createdBy?: string } = {}): Promise<FileReference> {
  const contentType = req.headers.get("content-type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    throw new ApiError("unsupported_media_type", "Send the file as multipart/form-data with one file part (and an optional name field)", { contentType: contentType.split(";")[0] || null });
  }
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes + MULTIPART_SLACK_BYTES) {
    throw new ApiError("payload_too_large", `The file exceeds ${maxBytes} bytes; use an upload session (/api/files/uploads) for larger files`, { limitBytes: maxBytes });
  }
  const invalid = (reason: string, message: string) => new ApiError("invalid_request", message, { reason });
  const body = requestBodyStream(req);
  if (!body) throw invalid("no_file_part", "The body has no file part");
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { "content-type": contentType }, defParamCharset: "utf8", limits: { files: 1, fileSize: maxBytes + 1, fields: 8, fieldSize: 4096, parts: 16, headerPairs: 64 } });
  } catch (err) {
    throw invalid("malformed", `The multipart body cannot be read: ${(err as Error).message}`);
  }
  const source = body.stream;

  return new Promise<FileReference>((resolve, reject) => {
    let name: string | undefined;
    let lateName: string | undefined;
    let upload: Promise<FileReference> | undefined;
    let fileStream: Readable | undefined;
    let failure: unknown;
    let settled = false;
    const finish = async () => {
      if (settled) return;
      settled = true;
      let stored = upload ? await upload.catch((err: unknown) => ((failure ??= err), undefined)) : undefined;
      if (stored && lateName !== undefined && failure === undefined) stored = await files.rename(stored.id, lateName).catch((err: unknown) => ((failure ??= err), stored));
      if (failure !== undefined) {
        if (stored) await files.discard(stored.id).catch(() => undefined);
        // the body's own faults are 400 (below); anything else (disk, S3, SQLite) is a 500 whose details stay in the log
        reject(failure);
      } else if (!stored) reject(invalid("no_file_part", "The body has no file part: send the file as a form field with a filename"));
      else resolve(stored);
    };
    const fail = (err: unknown) => {
      failure ??= err;
      // an upload under way stops and removes what it wrote (the store cleans up on the stream's error)
      fileStream?.destroy(err instanceof Error ? err : new Error(String(err)));
      body.abandon(); // its answer closes the connection while part of the body is unread
      void finish();
    };
    parser.on("field", (field, value) => {
      // a part without a filename is a field to multipart: the file's own part, sent without one
      if (field === "file") return fail(invalid("no_filename", 'The "file" part has no filename: send it as a file (Content-Disposition: form-data; name="file"; filename="…")'));
      if (field !== "name") return fail(invalid("unknown_field", `Unexpected form field "${field}": send one file part named "file" and optionally a "name" field`));
      if ([...value].length > 255) return fail(invalid("name_too_long", "The name field has at most 255 characters"));
      if (value.trim() === "") return; // an empty name names nothing: the part's filename stays
      if (upload) lateName = value;
      else name = value;
    });
    parser.on("file", (field, stream, info) => {
      if (failure !== undefined || field !== "file") {
        stream.resume();
        return failure === undefined ? fail(invalid("unknown_field", `The file part is named "${field}": name it "file"`)) : undefined;
      }
      fileStream = stream;
      upload = files.upload(stream, { name: name ?? info.filename, declaredContentType: info.mimeType, maxBytes, ...options });
      upload.catch(fail);
    });
    parser.on("filesLimit", () => fail(invalid("several_file_parts", "Send exactly one file part per request")));
    parser.on("partsLimit", () => fail(invalid("malformed", "Too many parts: send one file part and at most a name field")));
    const unreadable = (err: unknown) => invalid("malformed", `The multipart body cannot be read: ${(err as Error)?.message ?? String(err)}`);
    parser.on("error", (err) => fail(unreadable(err)));
    parser.on("close", () => void finish());
    source.on("error", (err) => fail(unreadable(err)));
    source.pipe(parser);
  });
}
