/**
 * File storage configuration (spec 8), read from the environment and validated with valibot like
 * `core/config.ts`; a bad value stops startup with a {@link ConfigError} naming the variable.
 *
 * | Variable | Default | Meaning |
 * |---|---|---|
 * | `SVC_FILE_STORAGE` | local | `local` (blobs under `<dataDir>/blobs`) or `s3` (an S3-compatible bucket) |
 * | `SVC_S3_BUCKET` | none; required with `s3` | the bucket (it must exist) |
 * | `SVC_S3_REGION` | us-east-1 | the region |
 * | `SVC_S3_ENDPOINT` | unset: AWS | URL of an S3-compatible server, e.g. `http://127.0.0.1:7070` |
 * | `SVC_S3_ACCESS_KEY_ID`, `SVC_S3_SECRET_ACCESS_KEY` | unset: the AWS SDK's default chain | static credentials; set both or neither |
 * | `SVC_S3_FORCE_PATH_STYLE` | true when `SVC_S3_ENDPOINT` is set, else false | path-style bucket addressing |
 * | `SVC_S3_CONNECT_TIMEOUT_MS` | 5000 | how long a request to the bucket may wait for a connection |
 * | `SVC_S3_IDLE_TIMEOUT_MS` | 30000 | how long the bucket may stay silent before answering a request |
 *
 * The S3 variables are read (and checked) only when `SVC_FILE_STORAGE=s3`.
 */
import path from "node:path";
import * as v from "valibot";
import { ConfigError, intIn } from "../config";
import { isMissingKey } from "../http/validation";
import type { BlobStore } from "./blob-store";
import { LocalBlobStore } from "./local-blob-store";
// the S3 blob store (and with it the AWS SDK: ~280 ms to load on its own; 11 MB of heap in the running
// sandbox) is imported only for SVC_FILE_STORAGE=s3, by blobStoreFromEnv
import type { S3BlobStoreConfig } from "./s3-blob-store";
import { s3RequestHandler } from "./s3-timeouts";

/** Where blobs are stored, as {@link fileStorageConfigFromEnv} reads it. */
export type FileStorageConfig = { kind: "local"; dir: string } | ({ kind: "s3" } & S3BlobStoreConfig);

const nonEmpty = v.pipe(v.string(), v.trim(), v.minLength(1, "must not be empty"));
const bool = v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(["true", "false", "1", "0", "yes", "no"], "must be true or false"), v.transform((s) => ["true", "1", "yes"].includes(s)));

const KindSchema = v.object({
  SVC_FILE_STORAGE: v.optional(v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(["local", "s3"], "must be local or s3")), "local"),
});

const S3Schema = v.object({
  // required: its absence is the object's issue, which `parse` words (`whenMissing`)
  SVC_S3_BUCKET: v.pipe(
    v.string(),
    v.trim(),
    v.regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "must be a bucket name: 3 to 63 lowercase letters, digits, dots or hyphens"),
  ),
  SVC_S3_REGION: v.optional(v.pipe(nonEmpty, v.regex(/^[A-Za-z0-9-]+$/, "must be a region name such as us-east-1")), "us-east-1"),
  SVC_S3_ENDPOINT: v.optional(v.pipe(v.string(), v.trim(), v.url("must be a URL such as http://127.0.0.1:9000"), v.regex(/^https?:\/\//i, "must be an http:// or https:// URL"))),
  SVC_S3_ACCESS_KEY_ID: v.optional(nonEmpty),
  SVC_S3_SECRET_ACCESS_KEY: v.optional(nonEmpty),
  SVC_S3_FORCE_PATH_STYLE: v.optional(bool),
  SVC_S3_CONNECT_TIMEOUT_MS: v.optional(intIn(100, 600_000)),
  SVC_S3_IDLE_TIMEOUT_MS: v.optional(intIn(100, 3_600_000)),
});

const SECRET_VARIABLES = new Set(["SVC_S3_SECRET_ACCESS_KEY"]);

/**
 * `input` parsed with `schema`, or the {@link ConfigError} of its first issue; a required variable that
 * is unset reads `whenMissing` (valibot's own words would be `Invalid key: Expected "…" but received undefined`).
 */
function parse<S extends v.GenericSchema>(schema: S, input: Record<string, string>, whenMissing = "must be set"): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (!result.success) {
    const issue = result.issues[0]!;
    const variable = v.getDotPath(issue) ?? "environment";
    const got = input[variable];
    // never echo a secret back
    const shown = got === undefined || SECRET_VARIABLES.has(variable) ? "" : ` (got ${JSON.stringify(got)})`;
    throw new ConfigError(variable, `${isMissingKey(issue) ? whenMissing : issue.message}${shown}`);
  }
  return result.output;
}

function present(env: Record<string, string | undefined>, keys: string[]): Record<string, string> {
  const input: Record<string, string> = {};
  for (const key of keys) {
    const value = env[key];
    if (value !== undefined && value !== "") input[key] = value;
  }
  return input;
}

/**
 * Reads and validates the file storage settings (the table in the module comment). Empty strings count
 * as unset. The secret key never appears in an error message.
 *
 * @param env the environment, e.g. `process.env`
 * @param dataDir the runtime's data directory; local blobs go to `<dataDir>/blobs`
 * @throws {ConfigError} naming the first invalid variable (a missing `SVC_S3_BUCKET` with `s3`, only one
 *   of the two credential variables, a bad URL or boolean)
 */
export function fileStorageConfigFromEnv(env: Record<string, string | undefined>, dataDir: string): FileStorageConfig {
  const { SVC_FILE_STORAGE: kind } = parse(KindSchema, present(env, ["SVC_FILE_STORAGE"]));
  if (kind === "local") return { kind: "local", dir: path.resolve(dataDir, "blobs") };
  const raw = present(env, Object.keys(S3Schema.entries));
  const e = parse(S3Schema, raw, "must be set when SVC_FILE_STORAGE=s3");
  if ((e.SVC_S3_ACCESS_KEY_ID === undefined) !== (e.SVC_S3_SECRET_ACCESS_KEY === undefined)) {
    const missing = e.SVC_S3_ACCESS_KEY_ID === undefined ? "SVC_S3_ACCESS_KEY_ID" : "SVC_S3_SECRET_ACCESS_KEY";
    throw new ConfigError(missing, "must be set together with the other S3 credential variable (or leave both unset to use the AWS SDK's default credentials)");
  }
  return {
    kind: "s3",
    bucket: e.SVC_S3_BUCKET,
    region: e.SVC_S3_REGION,
    endpoint: e.SVC_S3_ENDPOINT?.replace(/\/+$/, ""),
    forcePathStyle: e.SVC_S3_FORCE_PATH_STYLE ?? e.SVC_S3_ENDPOINT !== undefined,
    credentials: e.SVC_S3_ACCESS_KEY_ID && e.SVC_S3_SECRET_ACCESS_KEY ? { accessKeyId: e.SVC_S3_ACCESS_KEY_ID, secretAccessKey: e.SVC_S3_SECRET_ACCESS_KEY } : undefined,
    timeouts: e.SVC_S3_CONNECT_TIMEOUT_MS !== undefined || e.SVC_S3_IDLE_TIMEOUT_MS !== undefined ? { connectMs: e.SVC_S3_CONNECT_TIMEOUT_MS, idleMs: e.SVC_S3_IDLE_TIMEOUT_MS } : undefined,
  };
}

/**
 * Opens the blob store the environment selects: {@link LocalBlobStore} under `<dataDir>/blobs`
 * (sweeping temporary files a crash left), or {@link S3BlobStore} (checking the bucket is reachable
 * and sweeping stale staging keys).
 *
 * @throws {ConfigError} for a bad setting (see {@link fileStorageConfigFromEnv})
 * @throws Error when the directory cannot be created, or the bucket cannot be reached (names bucket and endpoint)
 */
export async function blobStoreFromEnv(env: Record<string, string | undefined>, dataDir: string): Promise<BlobStore> {
  const config = fileStorageConfigFromEnv(env, dataDir);
  if (config.kind === "local") return LocalBlobStore.open(config.dir);
  const { kind: _kind, ...s3 } = config;
  const { S3BlobStore } = await import("./s3-blob-store");
  const store = await S3BlobStore.open(s3);
  s3Stores.set(store, store.config);
  return store;
}

/** The settings of each S3 blob store {@link blobStoreFromEnv} opened (no `instanceof`: the class is imported only then). */
const s3Stores = new WeakMap<BlobStore, S3BlobStoreConfig>();

/**
 * Where upload sessions (tus, `/api/files/uploads`) write when files live in object storage (spec 8:
 * with object storage, large uploads go straight to storage): the bucket, the key prefix
 * (`<blob prefix>uploads/`) and the S3 client settings of `blobs` when it is the {@link S3BlobStore}
 * that {@link blobStoreFromEnv} opened from `SVC_FILE_STORAGE=s3` and `SVC_S3_*` (so both use the same
 * bucket, endpoint, region, credentials and addressing); `undefined` for any other blob store (local).
 */
export function s3UploadTargetOf(blobs: BlobStore): S3UploadTarget | undefined {
  const c = s3Stores.get(blobs);
  if (!c) return undefined;
  return {
    bucket: c.bucket,
    prefix: `${c.prefix ?? ""}uploads/`,
    client: { region: c.region, ...(c.endpoint ? { endpoint: c.endpoint } : {}), forcePathStyle: c.forcePathStyle ?? false, ...(c.credentials ? { credentials: { ...c.credentials } } : {}), requestHandler: s3RequestHandler(c.timeouts) },
  };
}

/** What {@link s3UploadTargetOf} answers. */
export interface S3UploadTarget {
  /** The bucket (it exists: the blob store checked it when it opened). */
  bucket: string;
  /** Key prefix of the upload sessions' objects, e.g. `uploads/`. */
  prefix: string;
  /** Settings for an `@aws-sdk/client-s3` client (`S3ClientConfig`). */
  client: { region: string; endpoint?: string; forcePathStyle: boolean; credentials?: { accessKeyId: string; secretAccessKey: string }; requestHandler: { connectionTimeout: number; socketTimeout: number } };
}
