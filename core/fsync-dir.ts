/**
 * Flushing a directory's entries to disk, so a file created, linked or renamed in it survives a crash
 * (the local blob store's writes, core/files/local-blob-store.ts; the Temporal payload keys,
 * core/temporal/payload-keys.ts; backups and restores, core/store/backup.ts and restore.ts). Some
 * filesystems refuse fsync on a directory: that is ignored, since the rename or link itself is still
 * atomic there.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";

/** Flushes `dir`'s entries; a refusal to fsync a directory is ignored (see the module comment). */
export async function fsyncDir(dir: string): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(dir, "r");
    await fh.sync();
  } catch {
    // some filesystems refuse fsync on a directory; the rename itself is still atomic
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** {@link fsyncDir}, synchronously (for code that runs before anything is served, such as the start's key files). */
export function fsyncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // as fsyncDir
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Flushes every file and directory under `dir`, then `dir` itself (a backup or a restore must survive
 * a crash right after it says it is done).
 * @throws Error when a file cannot be opened or flushed
 */
export async function syncTree(dir: string): Promise<void> {
  for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await syncTree(p);
    else {
      const fh = await fsp.open(p, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    }
  }
  await fsyncDir(dir);
}
