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
 * Every key file is written to a new temporary file (a random name, created exclusively), flushed,
 * then linked or renamed into place and the directory flushed, so a crash never leaves a short or
 * missing key (mode 0600: the service's user only).
 *
 * A rotation does not re-encrypt what the retired key encrypted: a leaked key goes on decrypting those
 * histories until Temporal's retention removes them. A retired key can be deleted once no open run,
 * no history still kept, and no Temporal Schedule's arguments hold a payload it encrypted.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fsyncDirSync } from "../fsync-dir";

/** The current key's file in the data directory: 32 random bytes, readable by the service's user only. */
export const PAYLOAD_KEY_FILE = "temporal-payload.key";

/** The directory (in the data directory) of the retired keys: `*.key` files of 32 bytes, decrypting only. */
export const RETIRED_PAYLOAD_KEYS_DIR = "temporal-payload-keys";

const KEY_BYTES = 32;

/** The keys {@link openPayloadKeys} read: the one that encrypts, and the retired ones that still decrypt. */
export interface PayloadKeys {
  /** The current key (32 bytes). */
  current: Buffer;
  /** The retired keys (32 bytes each; each once, none equal to `current`) and their files, in file-name order. */
  retired: Array<{ key: Buffer; file: string }>;
  /** The key files read (current, retired, and second copies of either) that others than their owner may read or write (mode beyond 0600): `chmod 600` them. */
  laxFiles: string[];
}

/** A key's id, kept with each payload it encrypts: the first 16 hex digits of its SHA-256. */
export function payloadKeyId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

/**
 * Writes `key` to `file` through a flushed temporary file: linked into place when `replace` is false
 * (answers false when `file` exists meanwhile, leaving it as it is), renamed over it when true.
 */
function writeKeyFile(file: string, key: Buffer, replace: boolean): boolean {
  const temporary = `${file}.${randomUUID()}.tmp`;
  const fd = fs.openSync(temporary, "wx", 0o600);
  try {
    fs.writeSync(fd, key);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    if (replace) fs.renameSync(temporary, file);
    else fs.linkSync(temporary, file);
    fsyncDirSync(path.dirname(file));
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
  let key: Buffer;
  try {
    key = fs.readFileSync(file);
  } catch (err) {
    throw new Error(`${file} cannot be read as a key of the Temporal payloads svc encrypts (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); fix its permissions, or move it out of the data directory`);
  }
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
 * `<dataDir>/temporal-payload-keys/`: its regular files ending in `.key` (not macOS's `._` metadata
 * files); other entries are ignored, and a key found twice (or equal to the current one) counts once.
 * @throws Error naming the file or directory, for a key file that is not 32 bytes or cannot be read, or
 *   a retired-keys directory that cannot be listed
 */
export function openPayloadKeys(dataDir: string, onCreated?: (file: string) => void): PayloadKeys {
  const current = openPayloadKey(dataDir, onCreated);
  const seen = new Set([payloadKeyId(current)]);
  const retired: PayloadKeys["retired"] = [];
  const read = [path.join(dataDir, PAYLOAD_KEY_FILE)];
  for (const file of retiredKeyFiles(dataDir)) {
    const key = readKeyFile(file);
    read.push(file);
    const id = payloadKeyId(key);
    if (seen.has(id)) continue;
    seen.add(id);
    retired.push({ key, file });
  }
  // every file holding a key counts, a second copy of one included
  const laxFiles = read.filter((f) => (fs.statSync(f).mode & 0o077) !== 0);
  return { current, retired, laxFiles };
}

/**
 * The retired keys' files of a data directory (or of a backup of one): the regular files (or links)
 * in `<dataDir>/temporal-payload-keys/` whose names end in `.key`, not macOS's `._` metadata files, in
 * name order; none when the directory does not exist. Their contents are not read.
 * @throws Error naming the directory when it exists but cannot be listed
 */
export function retiredKeyFiles(dataDir: string): string[] {
  const dir = path.join(dataDir, RETIRED_PAYLOAD_KEYS_DIR);
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") throw new Error(`${dir} cannot be listed (${code ?? (err as Error).message}): it holds the retired keys of the Temporal payloads svc encrypts; fix its permissions, or move it out of the data directory`);
  }
  return entries
    .filter((e) => e.name.endsWith(".key") && !e.name.startsWith("._") && (e.isFile() || e.isSymbolicLink()))
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((e) => path.join(dir, e.name));
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
 * and retired, which reads as before. The service takes the new key at its next start. Two rotations at
 * once are refused (`temporal-payload.key.lock`, created exclusively and removed at the end; a rotation
 * that crashed leaves it behind, and the refusal says to remove it).
 * @throws Error when the data directory has no current key yet (the service never started on it), the
 *   key file is a symbolic or hard link (a key kept elsewhere is rotated there), the key belongs to another user than the caller (the service could not read the new key: run the
 *   rotation as the key's owner), another rotation holds the lock, the current key changed meanwhile,
 *   or a key file (current or retired) is not 32 bytes or cannot be read
 */
export function rotatePayloadKey(dataDir: string): PayloadKeyRotation {
  const file = path.join(dataDir, PAYLOAD_KEY_FILE);
  if (!fs.existsSync(file)) throw new Error(`${dataDir} has no ${PAYLOAD_KEY_FILE} to rotate: the service writes it at its first start there`);
  // a link to a key kept elsewhere (a secrets mount) would be replaced by a plain file here, and the
  // key where it points would stay the old one: that key is rotated where it is kept
  if (fs.lstatSync(file).isSymbolicLink()) {
    throw new Error(`${file} is a symbolic link to ${fs.realpathSync(file)}: svc does not replace a key kept elsewhere. Rotate it there: copy the current key into ${path.join(dataDir, RETIRED_PAYLOAD_KEYS_DIR)}/ under any .key name, then put a new 32-byte key where the link points`);
  }
  const stat = fs.statSync(file);
  // likewise a key with another name (a hard link): it would keep the old key under that name
  if (stat.nlink > 1) throw new Error(`${file} has ${stat.nlink} names (hard links): svc does not replace a key shared with another file. Rotate it where it is kept, or give temporal-payload.key its own copy first`);
  const owner = stat.uid;
  const me = process.getuid?.();
  if (me !== undefined && me !== owner) throw new Error(`${file} belongs to uid ${owner}, not to this user (uid ${me}): run the rotation as the user the service runs as, or it could not read the new key`);
  const lock = `${file}.lock`;
  let lockFd: number;
  try {
    lockFd = fs.openSync(lock, "wx", 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new Error(`another rotation of ${file} is under way (${lock} exists); if none is, a rotation crashed: remove ${lock} and rotate again`);
    throw err;
  }
  try {
    // every key must read before one is added: a rotation must not leave a start that fails
    const { current: old } = openPayloadKeys(dataDir);
    const retired = payloadKeyId(old);
    const dir = path.join(dataDir, RETIRED_PAYLOAD_KEYS_DIR);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const copy = path.join(dir, `${retired}.key`);
    // retired before (a rotation that crashed after this step): the copy is already there
    if (!writeKeyFile(copy, old, false) && !readKeyFile(copy).equals(old)) throw new Error(`${copy} holds another key than its name says; move it aside and rotate again`);
    // the copy's entry and the directory's are durable before the current key changes
    fsyncDirSync(dir);
    fsyncDirSync(dataDir);
    if (!readKeyFile(file).equals(old)) throw new Error(`${file} changed during the rotation; its key is kept as it is, and the old one is retired as ${copy}`);
    const fresh = randomBytes(KEY_BYTES);
    writeKeyFile(file, fresh, true);
    return { retired, current: payloadKeyId(fresh) };
  } finally {
    fs.closeSync(lockFd);
    fs.rmSync(lock, { force: true });
  }
}
