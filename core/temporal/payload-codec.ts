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
 * stays readable but for those values, which the Temporal UI shows as `binary/encrypted`. The keys are
 * in the data directory (./payload-keys.ts: the current one, made at the first start, and the ones
 * retired by rotations, which still decrypt): losing them makes the runs holding such payloads
 * unreadable (as losing the data directory loses the rest of their state).
 *
 * A failure's message and stack are not payloads: Temporal keeps them as plain text, out of a codec's
 * reach. So the secrets are taken out of them instead ({@link withoutSecretsInError} for activities'
 * errors, the workflow engine for what workflow code throws): `…/api/download/[secret]`. What the codec
 * cannot see is a secret written some other way (cut out of its URL, base64-encoded): hand URLs on as
 * `DownloadUrl` values.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Payload, PayloadCodec } from "@temporalio/common";
import { DOWNLOAD_URL_MARKS, withoutDownloadSecrets } from "../sdk/download-url-secrets";
import { PAYLOAD_KEY_FILE, payloadKeyId, RETIRED_PAYLOAD_KEYS_DIR } from "./payload-keys";
import { temporalProto } from "./sdk";

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
 * Whether `err` says a payload could not be decoded here: encrypted with another key than this data
 * directory's (the key file lost or replaced), or read by a converter without the codec.
 */
export function isUnreadablePayload(err: unknown): boolean {
  const message = (err as Error | undefined)?.message ?? "";
  return message.includes(`this data directory's ${PAYLOAD_KEY_FILE}`) || message.includes("Unknown encoding: binary/encrypted");
}

/** The Temporal `PayloadCodec` of the module comment. */
export class DownloadUrlCodec implements PayloadCodec {
  /** The current key's id, kept with each payload it encrypts ({@link payloadKeyId}). */
  readonly keyId: string;

  /** The ids of the retired keys it also decrypts with. */
  readonly retiredKeyIds: readonly string[];

  /** Every key it decrypts with, by id: the current one (under {@link keyId}) and the retired ones (a private field: no log or JSON dump of the codec shows them). */
  readonly #keys: ReadonlyMap<string, Buffer>;

  /**
   * @param key the current key, 32 bytes (./payload-keys.ts `openPayloadKeys`)
   * @param retired keys retired by rotations (32 bytes each), which only decrypt
   * @throws Error when a key is not 32 bytes
   */
  constructor(key: Buffer, retired: readonly Buffer[] = []) {
    for (const k of [key, ...retired]) if (k.length !== 32) throw new Error("a payload key must be 32 bytes");
    this.keyId = payloadKeyId(key);
    this.#keys = new Map([...retired.map((k) => [payloadKeyId(k), k] as const), [this.keyId, key]]);
    this.retiredKeyIds = [...this.#keys.keys()].filter((id) => id !== this.keyId);
  }

  /** Encrypts the payloads holding a download URL with the current key; answers the others as they are. */
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (p.data && holdsMark(bytesOf(p.data)) ? this.encrypt(p) : p));
  }

  /**
   * Decrypts the payloads {@link DownloadUrlCodec.encode} encrypted, with the key they name (current or
   * retired); answers the others as they are.
   * @throws Error for a payload encrypted with a key it does not hold (naming the key ids it holds) or altered
   */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (textOf(p.metadata?.encoding) === ENCODING ? this.decrypt(p) : p));
  }

  private encrypt(payload: Payload): Payload {
    const Message = temporalProto().temporal.api.common.v1.Payload;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#keys.get(this.keyId)!, iv);
    const body = Buffer.concat([cipher.update(Message.encode(payload).finish()), cipher.final()]);
    return { metadata: { encoding: text(ENCODING), [KEY_ID]: text(this.keyId) }, data: Buffer.concat([iv, body, cipher.getAuthTag()]) };
  }

  private decrypt(payload: Payload): Payload {
    const keyId = textOf(payload.metadata?.[KEY_ID]);
    const key = keyId === undefined ? undefined : this.#keys.get(keyId);
    if (!key) {
      const retired = this.retiredKeyIds.length ? `: ${this.retiredKeyIds.join(", ")}` : ", none";
      throw new Error(`a Temporal payload is encrypted with key ${keyId ?? "(none named)"}, not this data directory's ${PAYLOAD_KEY_FILE} (${this.keyId}) nor a retired key in its ${RETIRED_PAYLOAD_KEYS_DIR}/${retired}`);
    }
    const data = bytesOf(payload.data ?? new Uint8Array());
    const decipher = createDecipheriv("aes-256-gcm", key, data.subarray(0, IV_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    return temporalProto().temporal.api.common.v1.Payload.decode(plain) as Payload;
  }
}
