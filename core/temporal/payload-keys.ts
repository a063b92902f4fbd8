/**
 * The keys of the Temporal payload codec (./payload-codec.ts), kept in the data directory:
 *
 * - `temporal-payload.key` ({@link PAYLOAD_KEY_FILE}): the current key, 32 random bytes made at the
 *   first start. New payloads are encrypted with it.
 * - `temporal-payload-keys/*.key` ({@link RETIRED_PAYLOAD_KEYS_DIR}): retired keys, which only decrypt
 *   what they encrypted before a rotation. {@link rotatePayloadKey} (`npm run svc -- payload-keys
 *   rotate`) moves the current key there, named by its id, and makes a new one; a running service
 *   takes the new key at its next start (until then it goes on encrypting with the retired one, which
 *   stays readable). A key restored from a backup goes there too, under any name ending in `.key`, to
 *   read the runs it encrypted again.
 *
 * Every key file is written to a temporary file, flushed, then linked or renamed into place and the
 * directory flushed, so a crash never leaves a short or missing key (mode 0600: the service's user only).
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/** The current key's file in the data directory: 32 random bytes, readable by the service's user only. */
export const PAYLOAD_KEY_FILE = "temporal-payload.key";

/** The directory (in the data directory) of the retired keys: `*.key` files of 32 bytes, decrypting only. */
export const RETIRED_PAYLOAD_KEYS_DIR = "temporal-payload-keys";

const KEY_BYTES = 32;

/** The keys {@link openPayloadKeys} read: the one that encrypts, and the retired ones that still decrypt. */
export interface PayloadKeys {
  /** The current key (32 bytes). */
  current: Buffer;
  /** The retired keys (32 bytes each; none equal to `current`), in file-name order. */
  retired: Buffer[];
}

/** A key's id, kept with each payload it encrypts: the first 16 hex digits of its SHA-256. */
export function payloadKeyId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

/** Flushes a directory's entries (a new or renamed file in it survives a crash). */
function syncDir(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes `key` to `file` through a flushed temporary file: linked into place when `replace` is false
 * (answers false when `file` exists meanwhile, leaving it as it is), renamed over it when true.
 */
function writeKeyFile(file: string, key: Buffer, replace: boolean): boolean {
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(temporary, "w", 0o600);
  try {
    fs.writeSync(fd, key);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    if (replace) fs.renameSync(temporary, file);
    else fs.linkSync(temporary, file);
    syncDir(path.dirname(file));
    return true;
  } catch (err) {
    if (!replace && (err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    fs.rmSync(temporary, { force: true });
  }
}

/**
 * Reads a key file, refusing one that is not 32 bytes.
 * @throws Error naming the file and what to do, when it is not 32 bytes; the read's own error otherwise
 */
function readKeyFile(file: string): Buffer {
  const key = fs.readFileSync(file);
  if (key.length !== KEY_BYTES) throw new Error(`${file} must hold a 32-byte key of the Temporal payloads svc encrypts (it holds ${key.length} bytes); restore it from a backup of the data directory`);
  return key;
}

/**
 * Reads the current key from `<dataDir>/temporal-payload.key`, making it when it is missing.
 * @param onCreated told the key file's path when this call made it (the start logs it: back it up)
 * @throws Error when the file exists but is not 32 bytes (naming it), or cannot be read or written
 */
export function openPayloadKey(dataDir: string, onCreated?: (file: string) => void): Buffer {
  const file = path.join(dataDir, PAYLOAD_KEY_FILE);
  // another process may make it meanwhile: then its key is the one
  if (!fs.existsSync(file) && writeKeyFile(file, randomBytes(KEY_BYTES), false)) onCreated?.(file);
  return readKeyFile(file);
}

/**
 * Reads the current key (made when missing, as {@link openPayloadKey}) and the retired ones in
 * `<dataDir>/temporal-payload-keys/` (files ending in `.key`; others are ignored).
 * @throws Error naming the file, for a key file that is not 32 bytes or cannot be read
 */
export function openPayloadKeys(dataDir: string, onCreated?: (file: string) => void): PayloadKeys {
  const current = openPayloadKey(dataDir, onCreated);
  const dir = path.join(dataDir, RETIRED_PAYLOAD_KEYS_DIR);
  const names = fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n.endsWith(".key")).sort() : [];
  const retired = names.map((n) => readKeyFile(path.join(dir, n))).filter((k) => !k.equals(current));
  return { current, retired };
}

/** What {@link rotatePayloadKey} did: the ids of the key it retired and of the new current key. */
export interface PayloadKeyRotation {
  /** The id of the key now in `temporal-payload-keys/` (`<id>.key`). */
  retired: string;
  /** The id of the new `temporal-payload.key`. */
  current: string;
}

/**
 * Retires the current key (copied to `temporal-payload-keys/<id>.key` first, flushed) and makes a new
 * current key (renamed over `temporal-payload.key`). A crash between the two leaves the old key current
 * and retired, which reads as before. The service takes the new key at its next start.
 * @throws Error when the data directory has no current key yet (the service never started on it), or a
 *   key file is not 32 bytes
 */
export function rotatePayloadKey(dataDir: string): PayloadKeyRotation {
  const file = path.join(dataDir, PAYLOAD_KEY_FILE);
  if (!fs.existsSync(file)) throw new Error(`${dataDir} has no ${PAYLOAD_KEY_FILE} to rotate: the service writes it at its first start there`);
  const old = readKeyFile(file);
  const retired = payloadKeyId(old);
  const dir = path.join(dataDir, RETIRED_PAYLOAD_KEYS_DIR);
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir, { mode: 0o700 });
    syncDir(dataDir);
  }
  const copy = path.join(dir, `${retired}.key`);
  // retired before (a rotation that crashed after this step): the copy is already there
  if (!writeKeyFile(copy, old, false) && !readKeyFile(copy).equals(old)) throw new Error(`${copy} holds another key than its name says; move it aside and rotate again`);
  const fresh = randomBytes(KEY_BYTES);
  writeKeyFile(file, fresh, true);
  return { retired, current: payloadKeyId(fresh) };
}
