/**
 * Keeps download URLs' secrets (spec 2.6, 4.3) out of Temporal's histories. A download URL made by
 * workflow code (`ctx.blobs.createDownloadUrl`) is an activity's result, so Temporal records it in the
 * run's history, and whatever the run hands it to (an activity's input, the run's result) records it
 * again: anyone who reads the history (the Temporal UI, `temporal workflow show`, an export) could
 * read the file until the URL expires.
 *
 * {@link DownloadUrlCodec} is a Temporal `PayloadCodec` (the SDK's hook between the data converter and
 * the server, run by the worker and the client outside workflow code, so it changes no command and
 * replays the same): a payload whose bytes hold a download URL's path (`/api/download/`, or its
 * percent-encoded form inside another URL) is stored encrypted (AES-256-GCM over the whole payload,
 * metadata `encoding: binary/encrypted` and the key's id), every other payload as it was. The history
 * stays readable but for those values, which the Temporal UI shows as `binary/encrypted`. The key is
 * {@link PAYLOAD_KEY_FILE} in the data directory, made at the first start: losing it makes the runs
 * holding such payloads unreadable (as losing the data directory loses the rest of their state).
 *
 * A failure's message and stack are not payloads: Temporal keeps them as plain text, out of a codec's
 * reach. So the secrets are taken out of them instead ({@link withoutSecretsInError} for activities'
 * errors, the workflow engine for what workflow code throws): `…/api/download/[secret]`. What the codec
 * cannot see is a secret written some other way (cut out of its URL, base64-encoded): hand URLs on as
 * `DownloadUrl` values.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Payload, PayloadCodec } from "@temporalio/common";
import { DOWNLOAD_URL_MARKS, withoutDownloadSecrets } from "../sdk/download-url-secrets";
import { temporalProto } from "./sdk";

/** The key's file in the data directory: 32 random bytes, readable by the service's user only. */
export const PAYLOAD_KEY_FILE = "temporal-payload.key";

/** The bytes that mark a payload holding a download URL: its path, plain or percent-encoded. */
const MARKS = DOWNLOAD_URL_MARKS.map((m) => Buffer.from(m));
const ENCODING = "binary/encrypted";
const KEY_ID = "encryption-key-id";
const IV_BYTES = 12;
const TAG_BYTES = 16;

const text = (s: string) => new TextEncoder().encode(s);
/** A payload's bytes as a Buffer, without a copy when they are a typed array (the worker hands an empty payload's over as a plain array). */
const bytesOf = (b: Uint8Array): Buffer => (ArrayBuffer.isView(b) && b.buffer ? Buffer.from(b.buffer, b.byteOffset, b.byteLength) : Buffer.from(b as ArrayLike<number>));
const textOf = (b: Uint8Array | null | undefined) => (b ? bytesOf(b).toString("utf8") : undefined);
const holdsMark = (bytes: Buffer) => MARKS.some((m) => bytes.includes(m));

/**
 * `err` (and its causes) with every download URL's secret taken out of its message and stack
 * ({@link withoutDownloadSecrets}): a failure's message and stack are plain text in a run's history, out
 * of any codec's reach. Changes the error in place; answers it.
 */
export function withoutSecretsInError(err: unknown): unknown {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    e.message = withoutDownloadSecrets(e.message);
    if (e.stack) e.stack = withoutDownloadSecrets(e.stack);
  }
  return err;
}

/**
 * Reads the codec's key from `<dataDir>/temporal-payload.key`, making it when it is missing: written
 * to a temporary file, flushed, and linked into place, so a crash never leaves a short key behind
 * (mode 0600: the service's user only).
 * @param onCreated told the key file's path when this call made it (the start logs it: back it up)
 * @throws Error when the file exists but is not 32 bytes (naming it), or cannot be read or written
 */
export function openPayloadKey(dataDir: string, onCreated?: (file: string) => void): Buffer {
  const file = path.join(dataDir, PAYLOAD_KEY_FILE);
  if (!fs.existsSync(file)) {
    const temporary = `${file}.${process.pid}.tmp`;
    const fd = fs.openSync(temporary, "w", 0o600);
    try {
      fs.writeSync(fd, randomBytes(32));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    try {
      fs.linkSync(temporary, file);
      const dir = fs.openSync(dataDir, "r");
      try {
        fs.fsyncSync(dir);
      } finally {
        fs.closeSync(dir);
      }
      onCreated?.(file);
    } catch (err) {
      // another process made it meanwhile: its key is the one
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      fs.rmSync(temporary, { force: true });
    }
  }
  const key = fs.readFileSync(file);
  if (key.length !== 32) throw new Error(`${file} must hold the 32-byte key of the Temporal payloads svc encrypts (it holds ${key.length} bytes); restore it from a backup of the data directory`);
  return key;
}

/**
 * Whether `err` says a payload could not be decoded here: encrypted with another key than this data
 * directory's (the key file lost or replaced), or read by a converter without the codec.
 */
export function isUnreadablePayload(err: unknown): boolean {
  const message = (err as Error | undefined)?.message ?? "";
  return message.includes(`this data directory's ${PAYLOAD_KEY_FILE}`) || message.includes("Unknown encoding: binary/encrypted");
}

/** The Temporal `PayloadCodec` of the module comment. */
export class DownloadUrlCodec implements PayloadCodec {
  /** The key's id, kept with each encrypted payload: the first 16 hex digits of its SHA-256. */
  readonly keyId: string;

  /** The key (a private field: no log or JSON dump of the codec shows it). */
  readonly #key: Buffer;

  /** @param key 32 bytes ({@link openPayloadKey}) */
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error("the payload key must be 32 bytes");
    this.#key = key;
    this.keyId = createHash("sha256").update(key).digest("hex").slice(0, 16);
  }

  /** Encrypts the payloads holding a download URL; answers the others as they are. */
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (p.data && holdsMark(bytesOf(p.data)) ? this.encrypt(p) : p));
  }

  /**
   * Decrypts the payloads {@link DownloadUrlCodec.encode} encrypted; answers the others as they are.
   * @throws Error for a payload encrypted with another key (naming both key ids) or altered
   */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (textOf(p.metadata?.encoding) === ENCODING ? this.decrypt(p) : p));
  }

  private encrypt(payload: Payload): Payload {
    const Message = temporalProto().temporal.api.common.v1.Payload;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const body = Buffer.concat([cipher.update(Message.encode(payload).finish()), cipher.final()]);
    return { metadata: { encoding: text(ENCODING), [KEY_ID]: text(this.keyId) }, data: Buffer.concat([iv, body, cipher.getAuthTag()]) };
  }

  private decrypt(payload: Payload): Payload {
    const keyId = textOf(payload.metadata?.[KEY_ID]);
    if (keyId !== this.keyId) throw new Error(`a Temporal payload is encrypted with key ${keyId ?? "(none named)"}, not this data directory's ${PAYLOAD_KEY_FILE} (${this.keyId})`);
    const data = bytesOf(payload.data ?? new Uint8Array());
    const decipher = createDecipheriv("aes-256-gcm", this.#key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    return temporalProto().temporal.api.common.v1.Payload.decode(plain) as Payload;
  }
}
