/**
 * The payload codec's key files in the data directory (./payload-keys.ts): the current key made once,
 * retired keys read beside it, and a rotation that never leaves a directory without a readable key.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers-fs";
import { openPayloadKey, openPayloadKeys, PAYLOAD_KEY_FILE, payloadKeyId, RETIRED_PAYLOAD_KEYS_DIR, rotatePayloadKey } from "./payload-keys";

describe("openPayloadKey", () => {
  it("makes the key once (readable by its owner only) and reads the same key after", () => {
    const dir = tempDir("svc-keys-");
    const made: string[] = [];
    const key = openPayloadKey(dir, (file) => made.push(file));
    expect(made).toEqual([path.join(dir, PAYLOAD_KEY_FILE)]);
    expect(fs.readdirSync(dir)).toEqual([PAYLOAD_KEY_FILE]); // the temporary file is gone
    expect(key).toHaveLength(32);
    expect(fs.statSync(path.join(dir, PAYLOAD_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(openPayloadKey(dir, (file) => made.push(file)).equals(key)).toBe(true);
    expect(made).toHaveLength(1);
  });

  it("refuses a key file that is not 32 bytes, naming it", () => {
    const dir = tempDir("svc-keys-");
    fs.writeFileSync(path.join(dir, PAYLOAD_KEY_FILE), "short");
    expect(() => openPayloadKey(dir)).toThrow(new RegExp(`${PAYLOAD_KEY_FILE} must hold a 32-byte key .* \\(it holds 5 bytes\\)`));
  });
});

describe("rotatePayloadKey", () => {
  it("retires the current key under its id (owner-only) and makes a new one; the keys read back as current and retired", () => {
    const dir = tempDir("svc-keys-");
    const first = openPayloadKey(dir);
    const one = rotatePayloadKey(dir);
    expect(one.retired).toBe(payloadKeyId(first));
    const retiredFile = path.join(dir, RETIRED_PAYLOAD_KEYS_DIR, `${one.retired}.key`);
    expect(fs.readFileSync(retiredFile).equals(first)).toBe(true);
    expect(fs.statSync(retiredFile).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dir, RETIRED_PAYLOAD_KEYS_DIR)).mode & 0o777).toBe(0o700);
    const second = openPayloadKey(dir);
    expect(payloadKeyId(second)).toBe(one.current);
    expect(second.equals(first)).toBe(false);
    expect(fs.statSync(path.join(dir, PAYLOAD_KEY_FILE)).mode & 0o777).toBe(0o600);
    // a second rotation retires the second key beside the first; no temporary file is left anywhere
    const two = rotatePayloadKey(dir);
    const keys = openPayloadKeys(dir);
    expect(payloadKeyId(keys.current)).toBe(two.current);
    expect(keys.retired.map((r) => [payloadKeyId(r.key), r.file])).toEqual([one.retired, two.retired].sort().map((id) => [id, path.join(dir, RETIRED_PAYLOAD_KEYS_DIR, `${id}.key`)]));
    expect(fs.readdirSync(dir).sort()).toEqual([PAYLOAD_KEY_FILE, RETIRED_PAYLOAD_KEYS_DIR].sort());
    expect(fs.readdirSync(path.join(dir, RETIRED_PAYLOAD_KEYS_DIR)).sort()).toEqual([`${one.retired}.key`, `${two.retired}.key`].sort());
  });

  it("finishes a rotation that stopped after retiring the key (the copy is there, the old key still current)", () => {
    const dir = tempDir("svc-keys-");
    const key = openPayloadKey(dir);
    fs.mkdirSync(path.join(dir, RETIRED_PAYLOAD_KEYS_DIR));
    fs.writeFileSync(path.join(dir, RETIRED_PAYLOAD_KEYS_DIR, `${payloadKeyId(key)}.key`), key);
    const { retired, current } = rotatePayloadKey(dir);
    expect(retired).toBe(payloadKeyId(key));
    expect(payloadKeyId(openPayloadKey(dir))).toBe(current);
  });

  it("refuses a second rotation while one holds the lock, and a retired copy that holds another key than its name says; both leave the current key", () => {
    const dir = tempDir("svc-keys-");
    const key = openPayloadKey(dir);
    const lock = path.join(dir, `${PAYLOAD_KEY_FILE}.lock`);
    fs.writeFileSync(lock, "");
    expect(() => rotatePayloadKey(dir)).toThrow(`another rotation of ${path.join(dir, PAYLOAD_KEY_FILE)} is under way (${lock} exists); if none is, a rotation crashed: remove ${lock} and rotate again`);
    fs.rmSync(lock);
    const copy = path.join(dir, RETIRED_PAYLOAD_KEYS_DIR, `${payloadKeyId(key)}.key`);
    fs.mkdirSync(path.dirname(copy));
    fs.writeFileSync(copy, Buffer.alloc(32, 9));
    expect(() => rotatePayloadKey(dir)).toThrow(`${copy} holds another key than its name says; move it aside and rotate again`);
    expect(openPayloadKey(dir).equals(key)).toBe(true);
    expect(fs.existsSync(lock)).toBe(false); // released after a refusal too
  });

  it.runIf(process.getuid?.() === 0)("refuses to rotate a key that belongs to another user (the service could not read the new one)", () => {
    const dir = tempDir("svc-keys-");
    const key = openPayloadKey(dir);
    fs.chownSync(path.join(dir, PAYLOAD_KEY_FILE), 65534, 65534);
    expect(() => rotatePayloadKey(dir)).toThrow(`${path.join(dir, PAYLOAD_KEY_FILE)} belongs to uid 65534, not to this user (uid 0): run the rotation as the user the service runs as`);
    expect(openPayloadKey(dir).equals(key)).toBe(true);
    expect(fs.existsSync(path.join(dir, RETIRED_PAYLOAD_KEYS_DIR))).toBe(false);
  });

  it("refuses a data directory with no key yet, making none", () => {
    const dir = tempDir("svc-keys-");
    expect(() => rotatePayloadKey(dir)).toThrow(`${dir} has no ${PAYLOAD_KEY_FILE} to rotate: the service writes it at its first start there`);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it("refuses a current key that is a symbolic or hard link to a key kept elsewhere, leaving the link and its key as they were", () => {
    const dir = tempDir("svc-keys-");
    const secrets = tempDir("svc-secrets-");
    const kept = path.join(secrets, "payload.key");
    fs.writeFileSync(kept, Buffer.alloc(32, 7), { mode: 0o600 });
    fs.symlinkSync(kept, path.join(dir, PAYLOAD_KEY_FILE));
    expect(() => rotatePayloadKey(dir)).toThrow(`${path.join(dir, PAYLOAD_KEY_FILE)} is a symbolic link to ${fs.realpathSync(kept)}: svc does not replace a key kept elsewhere`);
    expect(fs.lstatSync(path.join(dir, PAYLOAD_KEY_FILE)).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(kept)).toEqual(Buffer.alloc(32, 7));
    expect(fs.readdirSync(dir)).toEqual([PAYLOAD_KEY_FILE]);
    // the service reads the key through the link
    expect(openPayloadKeys(dir).current).toEqual(Buffer.alloc(32, 7));
    // a hard link likewise: the other name would keep the old key
    fs.rmSync(path.join(dir, PAYLOAD_KEY_FILE));
    fs.linkSync(kept, path.join(dir, PAYLOAD_KEY_FILE));
    expect(() => rotatePayloadKey(dir)).toThrow(`${path.join(dir, PAYLOAD_KEY_FILE)} has 2 names (hard links)`);
    expect(fs.readFileSync(path.join(dir, PAYLOAD_KEY_FILE))).toEqual(Buffer.alloc(32, 7));
    expect(fs.readdirSync(dir)).toEqual([PAYLOAD_KEY_FILE]);
  });
});

describe("openPayloadKeys", () => {
  it("reads a key restored from a backup under any .key name, ignores other files and a copy of the current key, and names a bad file", () => {
    const dir = tempDir("svc-keys-");
    const current = openPayloadKey(dir);
    const restored = Buffer.alloc(32, 7);
    const retiredDir = path.join(dir, RETIRED_PAYLOAD_KEYS_DIR);
    fs.mkdirSync(retiredDir);
    fs.writeFileSync(path.join(retiredDir, "from-backup-2026-10.key"), restored);
    fs.writeFileSync(path.join(retiredDir, "same-as-current.key"), current);
    fs.writeFileSync(path.join(retiredDir, "README.txt"), "not a key");
    const keys = openPayloadKeys(dir);
    expect(keys.current.equals(current)).toBe(true);
    expect(keys.retired).toEqual([{ key: restored, file: path.join(retiredDir, "from-backup-2026-10.key") }]);
    // files written with the umask's 0644 are named, a copy of the current key first of all; 0600 is not
    expect(openPayloadKeys(dir).laxFiles.sort()).toEqual([path.join(retiredDir, "from-backup-2026-10.key"), path.join(retiredDir, "same-as-current.key")].sort());
    for (const name of ["from-backup-2026-10.key", "same-as-current.key"]) fs.chmodSync(path.join(retiredDir, name), 0o600);
    expect(openPayloadKeys(dir).laxFiles).toEqual([]);
    // a directory named like a key, macOS metadata and a second copy of a key are passed over
    fs.mkdirSync(path.join(retiredDir, "folder.key"));
    fs.writeFileSync(path.join(retiredDir, "._from-backup-2026-10.key"), "mac");
    fs.writeFileSync(path.join(retiredDir, "zz-copy.key"), restored);
    expect(openPayloadKeys(dir).retired).toEqual([{ key: restored, file: path.join(retiredDir, "from-backup-2026-10.key") }]);
    fs.writeFileSync(path.join(retiredDir, "cut.key"), "short");
    expect(() => openPayloadKeys(dir)).toThrow(`${path.join(retiredDir, "cut.key")} must hold a 32-byte key`);
    // and a rotation refuses to add a key beside one that would stop the next start
    expect(() => rotatePayloadKey(dir)).toThrow(`${path.join(retiredDir, "cut.key")} must hold a 32-byte key`);
    expect(openPayloadKey(dir).equals(current)).toBe(true);
  });
});
