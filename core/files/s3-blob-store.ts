/**
 * The S3-compatible blob backend (spec 8: object storage for deployments that outgrow one machine),
 * on `@aws-sdk/client-s3`. Keys, under an optional prefix:
 *
 * ```
 * <prefix>staging/<uuid>     a body being written (multipart upload, then one object); swept after an hour
 * <prefix>blobs/<sha256>     committed blobs, named by their SHA-256
 * ```
 *
 * A body is streamed in parts of `partSizeBytes` (5 MiB by default), hashing as it goes. Each write has
 * one part buffer, reused, and stops reading while a part is on the wire, so memory stays at about one
 * part per concurrent write whatever the body's size. A body smaller than one part never leaves memory
 * until it is committed, and is then put straight at its address (a PutObject is atomic). A larger
 * body becomes a multipart upload at a staging key; committing copies it server side to its address
 * (unless a blob with that address exists) and deletes the staging key. Over the limit, on a source
 * error or an abort, the multipart upload is aborted: nothing is left in the bucket.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  paginateListObjectsV2,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
  type MultipartUpload,
  type _Object,
} from "@aws-sdk/client-s3";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { ApiError } from "../errors";
import { s3RequestHandler } from "./s3-timeouts";
import { assertBlobAddress, assertRange, healthCheck, meter, newMeterState, STALE_TEMP_MS, type BlobInfo, type BlobStore, type BlobWriteOptions, type ByteRange, type StagedBlob } from "./blob-store";

const MiB = 1024 * 1024;
/** S3's smallest part (all parts but the last). */
const MIN_PART = 5 * MiB;
/** S3's largest number of parts in one multipart upload. */
const MAX_PARTS = 10_000;
/** S3's largest single CopyObject (5 GiB); larger objects are copied part by part. */
const MAX_SINGLE_COPY = 5 * 1024 * MiB;

/** Connection and layout of an {@link S3BlobStore}. */
export interface S3BlobStoreConfig {
  /** The bucket; it must exist. */
  bucket: string;
  /** The region (S3-compatible servers usually accept `us-east-1`). */
  region: string;
  /** The endpoint URL of an S3-compatible server (MinIO, versitygw, R2, …); unset means AWS. */
  endpoint?: string;
  /** Address buckets as `<endpoint>/<bucket>` instead of `<bucket>.<endpoint>` (most self-hosted servers need it). */
  forcePathStyle?: boolean;
  /** Static credentials; unset means the SDK's default chain (environment, profile, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** A key prefix such as `svc/` to share a bucket; default none. */
  prefix?: string;
  /** Size of the parts a large body is sent in, in bytes (at least 5 MiB, the default). */
  partSizeBytes?: number;
  /** Objects above this many bytes are copied with UploadPartCopy instead of CopyObject (default and maximum 5 GiB). */
  multipartCopyThresholdBytes?: number;
  /**
   * How long a request may wait for a connection, and a connection may stay silent mid-request, before
   * it fails (ms; defaults `S3_TIMEOUTS` of ./s3-timeouts.ts): a server that stops answering fails the request with
   * 503 `unavailable` instead of holding it (and its client) for ever.
   */
  timeouts?: { connectMs?: number; idleMs?: number };
}

/** Network failures of a request (no answer in time, no connection): the storage is away, not the request wrong. */
const AWAY = new Set(["TimeoutError", "ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EPIPE", "ETIMEDOUT"]);

/** How a bucket is named in errors: `S3 bucket "<bucket>" at <endpoint or AWS>`. */
export function bucketWhere(bucket: string, endpoint: string | undefined): string {
  return `S3 bucket "${bucket}" at ${endpoint ?? "AWS"}`;
}

/**
 * The 503 `unavailable` error (spec 7) for an S3 client's failure that means the storage did not answer
 * (a timeout of `S3BlobStoreConfig.timeouts`, a refused or reset connection, an unknown host), after
 * the SDK's own retries; undefined for any other failure (an S3 error answer, a bug), which stays what
 * it is. Used by the blob store's client and by the tus upload sessions' (plugins/files/s3-sessions.ts).
 * @param where the bucket as {@link bucketWhere} names it
 */
function storageAway(err: unknown, where: string): ApiError | undefined {
  const code = (err as { code?: string })?.code;
  if (!AWAY.has(errorName(err) ?? "") && !AWAY.has(code ?? "")) return undefined;
  return new ApiError("unavailable", `File storage did not answer (${where}): ${(err as Error)?.message ?? err}`);
}

/**
 * Makes `client` fail a request whose storage did not answer with {@link storageAway}'s 503 (after the
 * SDK's retries: the middleware sits before them), and every other failure as it was: the blob store's
 * client and the tus upload sessions' (plugins/files/s3-sessions.ts), so every path through either answers alike.
 * @param where the bucket as {@link bucketWhere} names it
 */
export function answerStorageAway(client: Pick<S3Client, "middlewareStack">, where: string): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (err) {
        throw storageAway(err, where) ?? err;
      }
    },
    { step: "initialize", name: "svcStorageAway" },
  );
}

function errorName(err: unknown): string | undefined {
  return (err as { name?: string })?.name;
}
/** Every object under `prefix`, across pages (the SDK's own paginator). */
export async function* listObjects(client: S3Client, bucket: string, prefix: string): AsyncGenerator<_Object> {
  for await (const page of paginateListObjectsV2({ client }, { Bucket: bucket, Prefix: prefix })) yield* page.Contents ?? [];
}

/** Every unfinished multipart upload under `prefix`, across pages (the SDK has no paginator for these). */
export async function* listMultipartUploads(client: S3Client, bucket: string, prefix: string): AsyncGenerator<MultipartUpload> {
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  for (;;) {
    const page = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
    yield* page.Uploads ?? [];
    if (!page.IsTruncated) return;
    keyMarker = page.NextKeyMarker;
    uploadIdMarker = page.NextUploadIdMarker;
  }
}

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}
/** True for the S3 errors that mean "no such key, upload or object" (also for S3-compatible servers). */
export function isMissing(err: unknown): boolean {
  const name = errorName(err);
  return name === "NotFound" || name === "NoSuchKey" || name === "NoSuchUpload" || httpStatus(err) === 404;
}

/**
 * Content-addressed blobs in an S3-compatible bucket. See the module comment for the keys, the memory
 * bound and the cleanup guarantees; see {@link BlobStore} for the contract of each method.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3" as const;
  /** {@link BlobStore.health}: the bucket's server answers a HeadBucket (with any HTTP status). */
  readonly health = healthCheck("s3", (abortSignal) =>
    // any HTTP answer is the storage answering (credentials limited to objects get 403 for a bucket's HEAD)
    this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal }).catch((err: unknown) => {
      if (httpStatus(err) === undefined) throw err;
    }),
  );
  /** The client (the tus upload store builds its own from the same settings, see `s3UploadTargetOf`). */
  readonly client: S3Client;
  readonly bucket: string;
  readonly prefix: string;
  private readonly partSize: number;
  private readonly copyThreshold: number;

  /**
   * Creates the store without touching the network (see {@link S3BlobStore.open} for a checked start).
   * @throws Error when `partSizeBytes` is under 5 MiB or `multipartCopyThresholdBytes` over 5 GiB
   */
  constructor(readonly config: S3BlobStoreConfig) {
    this.bucket = config.bucket;
    this.prefix = config.prefix ?? "";
    this.partSize = config.partSizeBytes ?? MIN_PART;
    this.copyThreshold = config.multipartCopyThresholdBytes ?? MAX_SINGLE_COPY;
    if (this.partSize < MIN_PART) throw new Error(`partSizeBytes must be at least ${MIN_PART} (S3's smallest part)`);
    if (this.copyThreshold > MAX_SINGLE_COPY || this.copyThreshold < MIN_PART) throw new Error(`multipartCopyThresholdBytes must be between ${MIN_PART} and ${MAX_SINGLE_COPY}`);
    this.client = new S3Client({
      region: config.region,
      endpoint: config.endpoint,
      forcePathStyle: config.forcePathStyle ?? false,
      credentials: config.credentials,
      // S3-compatible servers differ in their support of the newer flexible checksums; SigV4 already
      // covers the payload, and the blob's SHA-256 is checked by its address
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      requestHandler: s3RequestHandler(config.timeouts),
    });
    // after the SDK's retries: a storage that does not answer is 503 `unavailable`, naming the bucket
    answerStorageAway(this.client, bucketWhere(config.bucket, config.endpoint));
  }

  /**
   * Creates the store, checks that the bucket is reachable with these credentials, and deletes staging
   * objects and multipart uploads older than `staleTempMs` (1 hour by default) left over by a crash.
   *
   * @throws Error naming the bucket and endpoint when the bucket cannot be reached (with the S3 error as `cause`)
   */
  static async open(config: S3BlobStoreConfig, options: { staleTempMs?: number; now?: () => number } = {}): Promise<S3BlobStore> {
    const store = new S3BlobStore(config);
    try {
      await store.client.send(new HeadBucketCommand({ Bucket: config.bucket }));
    } catch (err) {
      store.client.destroy();
      throw new Error(`S3 bucket "${config.bucket}" at ${config.endpoint ?? "AWS"} (${config.region}) is not reachable: ${errorName(err) ?? ""} ${(err as Error)?.message ?? err}`.trim(), { cause: err });
    }
    await store.sweepStaging(options.staleTempMs ?? STALE_TEMP_MS, (options.now ?? Date.now)());
    return store;
  }

  /** The key of the blob `sha256`: `<prefix>blobs/<sha256>`. */
  keyOf(sha256: string): string {
    assertBlobAddress(sha256);
    return `${this.prefix}blobs/${sha256}`;
  }

  /** The prefix of staging keys: `<prefix>staging/`. */
  get stagingPrefix(): string {
    return `${this.prefix}staging/`;
  }

  /**
   * Deletes staging objects and aborts multipart uploads under the staging prefix that are older than
   * `olderThanMs` before `now`.
   * @returns how many objects and uploads were removed
   */
  async sweepStaging(olderThanMs: number, now = Date.now()): Promise<number> {
    const cutoff = now - olderThanMs;
    let removed = 0;
    for await (const obj of listObjects(this.client, this.bucket, this.stagingPrefix)) {
      if (obj.Key && obj.LastModified && obj.LastModified.getTime() < cutoff) {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: obj.Key }));
        removed++;
      }
    }
    for await (const up of listMultipartUploads(this.client, this.bucket, this.stagingPrefix)) {
      if (up.Key && up.UploadId && up.Initiated && up.Initiated.getTime() < cutoff) {
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: up.Key, UploadId: up.UploadId })).catch((err) => {
          if (!isMissing(err)) throw err;
        });
        removed++;
      }
    }
    return removed;
  }

  async write(body: Readable | AsyncIterable<Uint8Array>, options: BlobWriteOptions): Promise<BlobInfo> {
    const staged = await this.stage(body, options);
    await staged.commit();
    return { sha256: staged.sha256, size: staged.size };
  }

  async stage(body: Readable | AsyncIterable<Uint8Array>, options: BlobWriteOptions): Promise<StagedBlob> {
    const { signal } = options;
    const send = { abortSignal: signal };
    // parts may not exceed 10,000: grow them for very large limits
    const partSize = Math.max(this.partSize, Math.ceil(options.maxBytes / MAX_PARTS));
    const stagingKey = `${this.stagingPrefix}${randomUUID()}`;
    const state = newMeterState();
    let uploadId: string | undefined;
    const parts: CompletedPart[] = [];
    // one part buffer per write, reused: bytes are copied in as they come and the part is sent when full;
    // reading waits while a part is on the wire, so memory stays at one part whatever the body's size
    let part: Buffer | undefined;
    let filled = 0;

    const sendPart = async (data: Buffer) => {
      uploadId ??= (await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: stagingKey, ContentType: "application/octet-stream" }), send)).UploadId;
      if (!uploadId) throw new Error("S3 CreateMultipartUpload answered no UploadId");
      const partNumber = parts.length + 1;
      const res = await this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key: stagingKey, UploadId: uploadId, PartNumber: partNumber, Body: data, ContentLength: data.length }), send);
      parts.push({ PartNumber: partNumber, ETag: res.ETag });
    };

    try {
      for await (const chunk of meter(body, options.maxBytes, state, signal)) {
        let offset = 0;
        while (offset < chunk.length) {
          if (!part || (filled === part.length && part.length < partSize)) {
            // grow by doubling up to one part, so a small body never holds a whole part's memory
            const grown = Buffer.allocUnsafe(Math.min(partSize, Math.max(64 * 1024, (part?.length ?? 0) * 2, chunk.length - offset)));
            part?.copy(grown, 0, 0, filled);
            part = grown;
          }
          const n = chunk.copy(part, filled, offset);
          filled += n;
          offset += n;
          if (filled === partSize) {
            await sendPart(part);
            filled = 0;
          }
        }
      }
      if (uploadId !== undefined) {
        if (filled > 0) await sendPart(part!.subarray(0, filled));
        filled = 0;
        await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: stagingKey, UploadId: uploadId, MultipartUpload: { Parts: parts } }), send);
      }
    } catch (err) {
      part = undefined;
      if (uploadId !== undefined) {
        const id = uploadId;
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: stagingKey, UploadId: id })).catch(() => undefined);
        // a Complete that reached the server before the failure left an object
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: stagingKey })).catch(() => undefined);
      }
      throw err;
    }

    const sha256 = state.hash.digest("hex");
    const size = state.size;
    const key = this.keyOf(sha256);
    let settled = false;
    const settle = () => {
      if (settled) throw new Error("This staged blob was already committed or discarded");
      settled = true;
    };

    if (uploadId === undefined) {
      // smaller than one part: still in memory, put at its address in one atomic request
      let data: Buffer | undefined = Buffer.from(part ? part.subarray(0, filled) : Buffer.alloc(0));
      part = undefined;
      return {
        sha256,
        size,
        commit: async () => {
          settle();
          try {
            if (!(await this.exists(sha256))) {
              await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: data, ContentLength: size, ContentType: "application/octet-stream" }));
            }
          } finally {
            data = undefined;
          }
        },
        discard: async () => {
          settled = true;
          data = undefined;
        },
      };
    }

    const dropStaging = () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: stagingKey })).then(() => undefined, () => undefined);
    return {
      sha256,
      size,
      commit: async () => {
        settle();
        try {
          if (!(await this.exists(sha256))) await this.copy(stagingKey, key, size);
        } finally {
          await dropStaging();
        }
      },
      discard: async () => {
        settled = true;
        await dropStaging();
      },
    };
  }

  /** Server-side copy of `from` to `to` (`size` bytes): one CopyObject, or UploadPartCopy parts above the threshold. */
  private async copy(from: string, to: string, size: number): Promise<void> {
    const source = `${this.bucket}/${from.split("/").map(encodeURIComponent).join("/")}`;
    if (size <= this.copyThreshold) {
      await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: to, CopySource: source, ContentType: "application/octet-stream", MetadataDirective: "REPLACE" }));
      return;
    }
    const partSize = Math.max(this.partSize, Math.ceil(size / MAX_PARTS));
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: to, ContentType: "application/octet-stream" }));
    if (!UploadId) throw new Error("S3 CreateMultipartUpload answered no UploadId");
    try {
      const parts: CompletedPart[] = [];
      for (let start = 0, n = 1; start < size; start += partSize, n++) {
        const end = Math.min(start + partSize, size) - 1;
        const res = await this.client.send(new UploadPartCopyCommand({ Bucket: this.bucket, Key: to, UploadId, PartNumber: n, CopySource: source, CopySourceRange: `bytes=${start}-${end}` }));
        parts.push({ PartNumber: n, ETag: res.CopyPartResult?.ETag });
      }
      await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: to, UploadId, MultipartUpload: { Parts: parts } }));
    } catch (err) {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: to, UploadId })).catch(() => undefined);
      throw err;
    }
  }

  async read(sha256: string, range?: ByteRange): Promise<Readable> {
    const key = this.keyOf(sha256);
    if (range && (!Number.isSafeInteger(range.start) || !Number.isSafeInteger(range.end) || range.start < 0 || range.start > range.end)) {
      const info = await this.stat(sha256);
      if (!info) throw new ApiError("not_found", "No such blob");
      assertRange(range, info.size);
    }
    let res;
    try {
      res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }));
    } catch (err) {
      if (isMissing(err)) throw new ApiError("not_found", "No such blob");
      if (errorName(err) === "InvalidRange" || httpStatus(err) === 416) {
        const info = await this.stat(sha256);
        if (!info) throw new ApiError("not_found", "No such blob");
        assertRange(range!, info.size);
      }
      throw err;
    }
    const stream = res.Body as (Readable & { socket?: { setTimeout(ms: number): unknown } }) | undefined;
    if (!stream) throw new Error(`S3 GetObject ${key} answered no body`);
    // the idle timeout guards the wait for an answer; once the body flows, a reader that is slow to take
    // it (backpressure: the socket then reads nothing) must not cut the download short
    stream.socket?.setTimeout(0);
    if (range) {
      // S3 clamps an end past the object; the contract is a range within the blob
      const total = /\/(\d+)\s*$/.exec(res.ContentRange ?? "")?.[1];
      if (total !== undefined && range.end >= Number(total)) {
        stream.destroy();
        assertRange(range, Number(total));
      }
    }
    return stream;
  }

  async stat(sha256: string): Promise<BlobInfo | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.keyOf(sha256) }));
      return { sha256, size: res.ContentLength ?? 0 };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async exists(sha256: string): Promise<boolean> {
    return (await this.stat(sha256)) !== undefined;
  }

  async delete(sha256: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyOf(sha256) }));
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
