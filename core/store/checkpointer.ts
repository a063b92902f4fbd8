import type { Connection } from "./sql";

/** What a `PRAGMA wal_checkpoint` answers: whether it was blocked, the WAL's frames, and how many are copied back. */
interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** The checkpointer's counters since the store opened (part of `DatabaseStats`). */
export interface WalCheckpointStats {
  /** WAL checkpoints started by the checkpointer connection. */
  checkpoints: number;
  /** Passes the writer ran between groups to copy back the WAL's last frames (see {@link WalCheckpointer.restartWal}). */
  walRestarts: number;
  /** Time the writer spent on those passes, all together (ms): no group ran meanwhile. */
  walRestartMs: number;
  /** The longest of them (ms). */
  walRestartMaxMs: number;
  /** Times a checkpoint pass found the WAL shorter than the pass before: SQLite rewound it. */
  walRewinds: number;
  /** `wal_checkpoint(RESTART)`s the writer fell back to (readers kept its passes from copying everything). */
  walRestartFallbacks: number;
}

/**
 * WAL checkpoints for the store (`Database`, core/store/db.ts; issue 15). SQLite's automatic checkpoint
 * (off on the writer) runs inside the COMMIT that crosses 1,000 WAL pages, so every few hundred requests
 * one of them, and every caller queued behind it, waited for a checkpoint and its fsync (the half-load
 * p99 of action runs went from ~30 ms to ~13 ms without it). Instead:
 *
 * - Every {@link WalCheckpointer.INTERVAL_MS} ms after commits, this class's own connection copies the
 *   WAL back into the database file (`PRAGMA wal_checkpoint(PASSIVE)`: as far as no reader needs, never
 *   waiting on a lock, so it blocks neither the writer nor the readers).
 * - Under a steady load the WAL is never all copied back at the moment a transaction begins (commits
 *   land while the passive checkpoint runs), so SQLite never rewinds it and it grows without end (430 MB
 *   in 25 s of webhook deliveries, and every read searches its whole index). So once it holds
 *   {@link WalCheckpointer.RESTART_FRAMES} frames, up to {@link WalCheckpointer.CATCH_UP_PASSES} more
 *   passes copy what was committed meanwhile, and then {@link WalCheckpointer.restartWanted} asks the
 *   writer for {@link WalCheckpointer.restartWal} between two groups: see there.
 *
 * Durability is unchanged: commits are in the WAL either way.
 */
export class WalCheckpointer {
  /** How often the checkpointer looks for commits to copy back (ms). */
  static readonly INTERVAL_MS = 500;
  /** WAL frames (pages of 4 KiB) past which the writer rewinds the WAL (16 MiB). */
  static readonly RESTART_FRAMES = 4096;
  /** Catch-up passes of the checkpointer before it asks the writer for a rewind. */
  static readonly CATCH_UP_PASSES = 3;
  /** A catch-up pass that copied at most this many frames is the last one. */
  static readonly CATCH_UP_FRAMES = 256;
  /** Writer passes in a row that could not copy everything back (a reader on an older snapshot). */
  static readonly RESTART_FALLBACK_AFTER = 3;
  /** The fallback `RESTART` waits at most this long (ms) for readers on older frames, then is tried later. */
  static readonly RESTART_WAIT_MS = 20;

  /** The counters of a store without a checkpointer connection. */
  static readonly NONE: Readonly<WalCheckpointStats> = { checkpoints: 0, walRestarts: 0, walRestartMs: 0, walRestartMaxMs: 0, walRewinds: 0, walRestartFallbacks: 0 };

  /** Whether the writer should run {@link WalCheckpointer.restartWal} before its next group. */
  restartWanted = false;
  private readonly timer: NodeJS.Timeout;
  /** The pass in progress, while there is one. */
  private checkpointing: Promise<void> | undefined;
  /** The commit count when the last pass started. */
  private checkpointedAt = 0;
  private closed = false;
  private checkpoints = 0;
  private restarts = 0;
  private restartMs = 0;
  private restartMaxMs = 0;
  private incompleteRestarts = 0;
  private fallbacks = 0;
  /** The WAL's length (frames) at the last checkpoint pass, to see SQLite rewind it. */
  private walFrames = 0;
  private rewinds = 0;

  /**
   * Starts the timer (unref'd: it keeps no process alive).
   * @param connection a connection of its own to the store's file (busy timeout set, no autocheckpoint)
   * @param commits how many COMMITs the writer has attempted so far (no pass runs without new ones)
   * @param wantRestart called when {@link WalCheckpointer.restartWanted} becomes true: the writer's group
   *   loop must run (it may be idle)
   * @param busyTimeoutMs the writer's busy timeout (ms), restored after the fallback's shorter one
   */
  constructor(
    private readonly connection: Connection,
    private readonly commits: () => number,
    private readonly wantRestart: () => void,
    private readonly busyTimeoutMs: number,
  ) {
    this.timer = setInterval(() => void this.checkpoint(), WalCheckpointer.INTERVAL_MS).unref();
  }

  /**
   * Copies committed WAL frames back into the database file when there were commits since the last
   * time. Once the WAL holds {@link WalCheckpointer.RESTART_FRAMES} frames, it runs up to
   * {@link WalCheckpointer.CATCH_UP_PASSES} more passes over the frames committed while the previous one
   * ran (each pass is shorter), then asks the writer to rewind the WAL. Never throws: a failed
   * checkpoint is retried at the next tick (the WAL only grows meanwhile).
   */
  private checkpoint(): Promise<void> {
    const commits = this.commits();
    if (this.checkpointing || this.closed || commits === this.checkpointedAt) return this.checkpointing ?? Promise.resolve();
    this.checkpointedAt = commits;
    this.checkpoints++;
    const pass = () => this.connection.get<CheckpointResult>("PRAGMA wal_checkpoint(PASSIVE)");
    this.checkpointing = (async () => {
      let r = this.noteLength(await pass());
      for (let i = 0; r && r.log >= WalCheckpointer.RESTART_FRAMES && i < WalCheckpointer.CATCH_UP_PASSES && !this.closed; i++) {
        const next = this.noteLength(await pass());
        // the frames this pass copied back (a reader on an older snapshot may have held the one before back)
        const copied = next && next.log >= r.log ? next.checkpointed - r.checkpointed : 0;
        r = next;
        if (copied <= WalCheckpointer.CATCH_UP_FRAMES) break;
      }
      if (r && r.log >= WalCheckpointer.RESTART_FRAMES && !this.closed) {
        this.restartWanted = true;
        this.wantRestart();
      }
    })()
      .catch(() => undefined)
      .finally(() => (this.checkpointing = undefined));
    return this.checkpointing;
  }

  /** Notes the WAL's length a checkpoint pass reported, counting a rewind when it shrank; answers the result. */
  private noteLength<T extends { log: number } | undefined>(r: T): T {
    if (r && r.log >= 0) {
      if (r.log < this.walFrames) this.rewinds++;
      this.walFrames = r.log;
    }
    return r;
  }

  /**
   * Run by the writer between two groups when {@link WalCheckpointer.restartWanted}: it copies back the
   * few frames the checkpointer's passes have not (`wal_checkpoint(PASSIVE)`: no commit can land
   * meanwhile, so it copies them all unless a reader is still on an older snapshot). Its next
   * transaction then starts with the WAL all copied back, and SQLite rewinds the WAL at that
   * transaction's first write (when no reader is on a WAL frame then; else at a later rewind). No group
   * runs while the writer copies (2-6 ms at half load, measured with `BENCH_ONLY=writes`). A reader on an
   * older snapshot can keep a pass from copying everything; after
   * {@link WalCheckpointer.RESTART_FALLBACK_AFTER} such passes in a row the writer runs
   * `wal_checkpoint(RESTART)`, which waits up to {@link WalCheckpointer.RESTART_WAIT_MS} ms for readers
   * in SQLite's busy handler (sleeps of 1, 2, 5, 10 ms). That was the only way before: it paused the
   * writer 7-20 ms (median 13.8 ms) per rewind. Never throws: busy, or an I/O error, and the
   * checkpointer asks again after its next pass.
   * @param writer the store's writer connection, idle (between groups)
   */
  async restartWal(writer: Connection): Promise<void> {
    this.restartWanted = false;
    this.restarts++;
    const started = performance.now();
    try {
      const r = await writer.get<CheckpointResult>("PRAGMA wal_checkpoint(PASSIVE)");
      if (r && !r.busy && r.checkpointed === r.log) this.incompleteRestarts = 0;
      else if (++this.incompleteRestarts >= WalCheckpointer.RESTART_FALLBACK_AFTER) {
        this.incompleteRestarts = 0;
        this.fallbacks++;
        try {
          await writer.exec(`PRAGMA busy_timeout = ${WalCheckpointer.RESTART_WAIT_MS}`);
          await writer.get("PRAGMA wal_checkpoint(RESTART)");
        } finally {
          await writer.exec(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
        }
      }
    } catch {
      // busy, or an I/O error: the checkpointer asks again after its next pass
    }
    const ms = performance.now() - started;
    this.restartMs += ms;
    this.restartMaxMs = Math.max(this.restartMaxMs, ms);
  }

  /** The counters since the store opened. */
  stats(): WalCheckpointStats {
    return { checkpoints: this.checkpoints, walRestarts: this.restarts, walRestartMs: Number(this.restartMs.toFixed(1)), walRestartMaxMs: Number(this.restartMaxMs.toFixed(1)), walRewinds: this.rewinds, walRestartFallbacks: this.fallbacks };
  }

  /** Stops the timer, waits for a pass in progress and closes the connection. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.checkpointing;
    await this.connection.close();
  }
}
