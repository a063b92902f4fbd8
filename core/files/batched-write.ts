/**
 * Writing a stream of chunks to an open file a MiB at a time (issue 15: files). A body arrives in
 * chunks of 16–64 KiB (a socket's reads, a file's reads); writing each with its own awaited
 * `FileHandle.write` costs a hop to libuv's thread pool per chunk. Copying them into one buffer and
 * writing it when full costs one copy in memory and one hop per MiB.
 */
import type { FileHandle } from "node:fs/promises";

/** Bytes collected before each write, at most. */
export const WRITE_BATCH_BYTES = 1024 * 1024;
/** The first batch's size: each full batch doubles the next, up to {@link WRITE_BATCH_BYTES} (a small body costs no MiB). */
const FIRST_BATCH_BYTES = 64 * 1024;

/**
 * Writes every chunk of `chunks` to `file`, in order, from `position` (bytes; null: the file's current
 * position, as `write` without a position), copying them into one buffer that is written whenever it
 * is full (64 KiB, doubling after each full one up to {@link WRITE_BATCH_BYTES}): the source may reuse a
 * chunk's memory once it is asked for the next one. When the source throws, what it yielded before is
 * written first, then its error rethrown; when a write fails, nothing more is written (the bytes on
 * disk are always a prefix of what the source yielded).
 *
 * @returns the number of bytes written
 * @throws the source's error, or the filesystem's (then some of the bytes may not have been written)
 */
export async function writeInBatches(file: FileHandle, chunks: AsyncIterable<Uint8Array>, position: number | null = null): Promise<number> {
  let batch = Buffer.allocUnsafe(FIRST_BATCH_BYTES);
  let used = 0;
  // bytes of the batch already on disk (a write may write part of what it was given)
  let flushed = 0;
  let written = 0;
  let diskFailed = false;
  const flush = async () => {
    try {
      while (flushed < used) {
        const { bytesWritten } = await file.write(batch, flushed, used - flushed, position === null ? null : position + written);
        flushed += bytesWritten;
        written += bytesWritten;
      }
    } catch (err) {
      diskFailed = true;
      throw err;
    }
    if (used === batch.length && batch.length < WRITE_BATCH_BYTES) batch = Buffer.allocUnsafe(Math.min(2 * batch.length, WRITE_BATCH_BYTES));
    used = 0;
    flushed = 0;
  };
  try {
    for await (const chunk of chunks) {
      for (let at = 0; at < chunk.length; ) {
        const n = Math.min(chunk.length - at, batch.length - used);
        batch.set(chunk.subarray(at, at + n), used);
        used += n;
        at += n;
        if (used === batch.length) await flush();
      }
    }
  } catch (err) {
    // the source's error is the one to report; after the disk's own, nothing more is written
    if (!diskFailed) await flush().catch(() => undefined);
    throw err;
  }
  await flush();
  return written;
}
