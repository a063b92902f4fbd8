/**
 * Upload sessions in S3 (`SVC_FILE_STORAGE=s3`, see `./uploads.ts`): `@tus/s3-store` in the same bucket
 * as the blobs, under `uploads/` (spec 8: large uploads go straight to storage): a multipart upload at
 * `uploads/<id>`, its record `uploads/<id>.info`, and `uploads/<id>.part` for a chunk smaller than an
 * S3 part. Imported only when files live in S3.
 */
import { Readable } from "node:stream";
import { Upload } from "@tus/server";
import { S3Store } from "@tus/s3-store";
import { loadS3Helpers, nowIso, type S3UploadTarget } from "../../core/plugin-api";
import { FILE_ID_KEY, isExpired, type SessionStore } from "./upload-sessions";

const { answerStorageAway, bucketWhere, isMissing, listMultipartUploads, listObjects } = await loadS3Helpers();

/** Upload sessions in the blob bucket (see the module comment). */
export class S3SessionStore extends S3Store implements SessionStore {
  readonly kind = "s3" as const;
  readonly keyPrefix: string;

  constructor(target: S3UploadTarget, private readonly ttlMs: number) {
    // tags mark completed uploads for bucket lifecycle rules; expiry here is the sweep's job
    super({ s3ClientConfig: { ...target.client, bucket: target.bucket }, expirationPeriodInMilliseconds: ttlMs, useTags: false });
    this.keyPrefix = target.prefix;
    // a bucket that does not answer fails every call with 503 `unavailable`, inside tus or not
    answerStorageAway(this.client, bucketWhere(target.bucket, target.client.endpoint));
  }

  /** Moves the upload's last activity (tus's `creation_date`) to now, in `<key>.info` and the cache. */
  private async touch(key: string): Promise<void> {
    const meta = await this.getMetadata(key);
    meta.file.creation_date = nowIso();
    await this.saveMetadata(meta.file, meta["upload-id"]);
    await this.cache.set(key, meta);
  }

  override async write(src: Readable, key: string, offset: number): Promise<number> {
    try {
      return await super.write(src, key, offset);
    } finally {
      await this.touch(key).catch(() => undefined);
    }
  }

  override async getUpload(key: string): Promise<Upload> {
    const rec = await this.record(key).catch(() => undefined);
    if (rec?.metadata?.[FILE_ID_KEY]) return new Upload({ ...rec, offset: rec.size ?? 0 });
    return super.getUpload(key);
  }

  async record(key: string): Promise<Upload | undefined> {
    try {
      return (await this.getMetadata(key)).file;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async open(key: string, size: number): Promise<Readable> {
    // a 0-byte upload never completes a multipart upload, so it has no object
    return size === 0 ? Readable.from([]) : this.read(key);
  }

  async markConverted(key: string, fileId: string): Promise<void> {
    const meta = await this.getMetadata(key);
    meta.file.metadata = { ...meta.file.metadata, [FILE_ID_KEY]: fileId };
    meta.file.creation_date = nowIso();
    meta.file.offset = meta.file.size ?? 0;
    await this.saveMetadata(meta.file, meta["upload-id"]);
    await this.cache.set(key, meta);
    await this.client.abortMultipartUpload({ Bucket: this.bucket, Key: key, UploadId: meta["upload-id"] }).catch(() => undefined);
    await this.client.deleteObjects({ Bucket: this.bucket, Delete: { Objects: [{ Key: key }, { Key: this.partKey(key, true) }] } });
  }

  async purge(key: string): Promise<void> {
    const meta = await this.getMetadata(key).catch(() => undefined);
    if (meta?.["upload-id"]) await this.client.abortMultipartUpload({ Bucket: this.bucket, Key: key, UploadId: meta["upload-id"] }).catch(() => undefined);
    await this.client.deleteObjects({ Bucket: this.bucket, Delete: { Objects: [{ Key: key }, { Key: this.infoKey(key) }, { Key: this.partKey(key, true) }] } });
    await this.clearCache(key);
  }

  override async deleteExpired(): Promise<number> {
    let removed = 0;
    const withRecord = new Set<string>();
    for await (const { Key } of listObjects(this.client, this.bucket, this.keyPrefix)) {
      if (!Key?.endsWith(".info")) continue;
      const key = Key.slice(0, -".info".length);
      withRecord.add(key);
      const rec = await this.record(key);
      if (rec && isExpired(rec, this.ttlMs)) {
        await this.purge(key);
        removed++;
      }
    }
    // multipart uploads whose record was never written (a crash right after creating them)
    for await (const u of listMultipartUploads(this.client, this.bucket, this.keyPrefix)) {
      if (u.Key && !withRecord.has(u.Key) && u.Initiated && Date.now() - u.Initiated.getTime() > this.ttlMs) {
        await this.client.abortMultipartUpload({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId }).catch(() => undefined);
      }
    }
    return removed;
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

