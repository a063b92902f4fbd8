import sqlite3 from "sqlite3";
import fs from "node:fs";
import path from "node:path";
import { MIGRATIONS_TABLE, migrations } from "./schema-migrations";
import { WalCheckpointer, type WalCheckpointStats } from "./checkpointer";
import { openConnection, TransactionLost, type Connection, type GroupStatement, type SqlParams, type SqlReader, type SqlWriter } from "./sql";

export { batchOfParameter, batchOfRows, insertRows, literalRows, rowsStatement, statementsInOrder, sqlText, TransactionLost, type GroupStatement, type SqlParams, type SqlReader, type SqlStatements, type SqlValue, type SqlWriter } from "./sql";

/** Counters of the store's work since it opened (for benchmarks and `statements per request`). */
export interface DatabaseStats extends WalCheckpointStats {
  /**
   * Calls to SQLite on the writer connection (each `run`/`get`/`all`/`exec` is one round trip to
   * SQLite's thread; BEGIN/SAVEPOINT/RELEASE/COMMIT included, an `exec` of two statements counts one).
   */
  writerStatements: number;
  /** Calls to SQLite on the read connection. */
  readerStatements: number;
  /** {@link Database.transaction} callers that ran (committed or not). */
  transactions: number;
  /** `COMMIT`s attempted: each is one group of callers (see {@link Database.transaction}). */
  commits: number;
  /** Groups whose deferred statements' one call failed and ran them one by one (see `Database.commitGroup`). */
  deferredFallbacks: number;
}

/** A caller of a group commit whose callback succeeded: its value, commit hooks and deferred writes. */
interface Done {
  waiter: Waiter;
  value: unknown;
  hooks: Array<() => void> | undefined;
  queued: Array<[GroupStatement<unknown>, readonly unknown[]]> | undefined;
}

/**
 * The items a group's successful callers deferred ({@link SqlWriter.defer}), by statement in the order
 * of first use, each statement's items in caller order.
 */
function deferredItems(done: readonly Done[]): Map<GroupStatement<unknown>, unknown[]> {
  const byStatement = new Map<GroupStatement<unknown>, unknown[]>();
  for (const { queued } of done) {
    for (const [statement, items] of queued ?? []) {
      const list = byStatement.get(statement);
      if (list) list.push(...items);
      else byStatement.set(statement, [...items]);
    }
  }
  return byStatement;
}

/** One caller of {@link Database.transaction} waiting for its turn. */
interface Waiter {
  fn: (tx: SqlWriter) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** When it queued (`performance.now()`, ms). */
  queuedAt: number;
}

/**
 * The SQLite store: one file in WAL mode with two connections.
 *
 * - The **writer** runs every write, always inside {@link Database.transaction}, which is the one place
 *   that owns transactions. Callers queue; the queue is run as **group commit**: the callers waiting
 *   when a group starts (and those that arrive while it runs, up to {@link Database.GROUP_MAX}
 *   callers or {@link Database.GROUP_MS} ms) run one after another in ONE `BEGIN IMMEDIATE` … `COMMIT`,
 *   each that runs a statement inside its own `SAVEPOINT svc_group_<n>`. A caller whose callback throws
 *   is rolled back alone (`ROLLBACK TO` + `RELEASE`) and gets its error at once; every other caller's
 *   promise resolves only after the shared `COMMIT` (so "resolved" still means "committed"); a failed
 *   `COMMIT` rejects every caller of the group. Callbacks never interleave. Writes a caller queues
 *   with {@link SqlWriter.defer} run once for the whole group, after its last caller and before the
 *   `COMMIT`, and when they offer their SQL text ({@link GroupStatement.sql}) in the same call to
 *   SQLite as the `COMMIT`: a group of action runs, whose callers only defer, is one call to SQLite
 *   (`BEGIN IMMEDIATE` … `COMMIT`) however many callers it has. A group that wrote nothing costs none.
 * - The **reader** answers reads outside transactions. In WAL mode it sees only committed data and
 *   never waits for the writer.
 * - The **checkpointer** ({@link WalCheckpointer}, on a connection of its own) copies the WAL back into
 *   the database file, instead of SQLite's automatic checkpoint inside a COMMIT, and has the writer
 *   rewind the WAL between two groups once it is long.
 *
 * Numbered migrations (`core/store/migrations/NNN_name.sql`) run at {@link Database.open}.
 */
export class Database implements SqlReader {
  /** At most this many callers share one COMMIT. */
  static readonly GROUP_MAX = 64;
  /** No caller joins a group whose transaction began more than this many ms ago. */
  static readonly GROUP_MS = 5;
  private readonly waiting: Waiter[] = [];
  /** The running group loop, while there is one. */
  private running: Promise<void> | undefined;
  private closed = false;
  private transactions = 0;
  private commits = 0;
  private deferredFallbacks = 0;
  /** The WAL's checkpoints (none for a store opened without a checkpointer connection). */
  private readonly wal: WalCheckpointer | undefined;

  constructor(
    readonly file: string,
    private readonly writer: Connection,
    private readonly reader: Connection,
    checkpointer?: Connection,
    busyTimeoutMs = 5000,
    private readonly groupMs = Database.GROUP_MS,
  ) {
    if (checkpointer) {
      const run = () => {
        if (!this.closed) this.running ??= this.runGroups();
      };
      this.wal = new WalCheckpointer(checkpointer, () => this.commits, run, busyTimeoutMs);
    }
  }

  /**
   * Opens (creating if needed) the database file and applies pending migrations.
   *
   * @param file path of the SQLite file; its directory is created
   * @param opts.busyTimeoutMs how long a connection waits on a lock held by another process (ms, default 5,000)
   * @param opts.groupMs how long a group commit takes joiners after its transaction began (ms, default
   *   {@link Database.GROUP_MS}; tests that need callers in one group on a loaded machine widen it)
   * @throws when the file cannot be opened or a migration fails (the failing migration is rolled back)
   */
  static async open(file: string, { busyTimeoutMs = 5000, groupMs = Database.GROUP_MS }: { busyTimeoutMs?: number; groupMs?: number } = {}): Promise<Database> {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const writer = await openConnection(file, sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE);
    // no automatic checkpoint in the writer's COMMITs: the checkpointer connection does it (see the class);
    // a WAL that grew under a long burst is cut back to 64 MiB when it is reset
    await writer.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = ${busyTimeoutMs}; PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = ${64 * 1024 * 1024};`);
    const db = new Database(file, writer, writer);
    await db.migrate();
    const reader = await openConnection(file, sqlite3.OPEN_READONLY);
    await reader.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}; PRAGMA query_only = ON;`);
    const checkpointer = await openConnection(file, sqlite3.OPEN_READWRITE);
    await checkpointer.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}; PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = ${64 * 1024 * 1024};`);
    return new Database(file, writer, reader, checkpointer, busyTimeoutMs, groupMs);
  }

  /** Applies pending migrations, each in its own transaction on the writer (before anyone else uses it). */
  private async migrate(): Promise<void> {
    const w = this.writer;
    await w.exec(MIGRATIONS_TABLE);
    const applied = new Set((await w.all<{ version: number }>("SELECT version FROM schema_migrations")).map((r) => r.version));
    for (const { version, name, path: file } of migrations()) {
      if (applied.has(version)) continue;
      const sql = fs.readFileSync(file, "utf8");
      await w.exec("BEGIN IMMEDIATE");
      try {
        await w.exec(sql);
        await w.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [version, name, new Date().toISOString()]);
        await w.exec("COMMIT");
      } catch (err) {
        await w.exec("ROLLBACK").catch(() => undefined);
        throw err;
      }
    }
  }

  /**
   * Runs `fn` in a write transaction and answers its result once that transaction has committed.
   * Callers are serialized and grouped (see {@link Database}): `fn` sees the writes of the callers
   * before it in its group (they commit with it), so it must do all its writes through `tx`, should
   * not wait on slow outside work (the whole group waits), and must not await another
   * `transaction` call (that call queues behind it: a deadlock, as it always was).
   *
   * @throws whatever `fn` throws, right away, after rolling back `fn`'s writes (only its own); or the
   *   SQLite error of the shared `COMMIT` (nothing of the group was written); or "database is closed"
   */
  transaction<T>(fn: (tx: SqlWriter) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error("database is closed"));
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ fn, resolve: resolve as (v: unknown) => void, reject, queuedAt: performance.now() });
      this.running ??= this.runGroups();
    });
  }

  /** Runs groups until nobody waits. Never throws: every outcome goes to its caller. */
  private async runGroups(): Promise<void> {
    // start on a later tick, so that callers queued in the same tick join the first group
    await Promise.resolve();
    while (this.waiting.length > 0 || this.wal?.restartWanted) {
      if (this.wal?.restartWanted) await this.wal.restartWal(this.writer);
      else {
        await this.runGroup(); // never throws
        this.groupBegan = undefined;
      }
    }
    // cleared in the same synchronous step as the check above: a caller queued after it starts a new loop
    this.running = undefined;
  }

  /**
   * One `BEGIN IMMEDIATE` … `COMMIT` over the callers waiting now (and joining while it runs). The
   * transaction begins with the first statement a caller runs: every caller that runs a statement runs
   * it inside its own `SAVEPOINT svc_group_<n>`, opened before its first statement in one call to SQLite
   * with the `RELEASE` of the savepoint before it (or with `BEGIN IMMEDIATE`, for the group's first). A
   * caller that only defers writes ({@link SqlWriter.defer}) opens none and costs the group no call of
   * its own: what it deferred is dropped if it throws. The group ends in {@link Database.commitGroup}.
   * A `RELEASE` or `ROLLBACK TO` that finds its savepoint gone means SQLite rolled the whole
   * transaction back itself (SQLITE_FULL, RAISE(ROLLBACK), ...): the group's earlier callers are
   * rejected then, as at a failed `COMMIT`; likewise when `BEGIN IMMEDIATE` fails (SQLITE_BUSY past
   * the busy timeout: another process holds the write lock).
   */
  private async runGroup(): Promise<void> {
    const w = this.writer;
    const began = (this.groupBegan = performance.now());
    /** The callers that succeeded, with their commit hooks and the writes they deferred. */
    const done: Done[] = [];
    /** Whether `BEGIN IMMEDIATE` has run (with the first caller statement's savepoint). */
    let begun = false;
    /** The savepoint open now: the last caller's that ran a statement (undefined after a failed caller's was rolled back and released). */
    let open: string | undefined;
    const lose = async (cause: unknown, beginning: boolean) => {
      await w.run("ROLLBACK").catch(() => undefined);
      const reason = cause instanceof Error ? cause.message : String(cause);
      const lost = new Error(beginning ? `the transaction could not begin (${reason}); nothing was written` : `the transaction was rolled back by SQLite while running another caller (${reason}); nothing was written`);
      for (const d of done) d.waiter.reject(lost);
    };
    for (let n = 1; ; n++) {
      const waiter = this.waiting.shift()!;
      this.transactions++;
      const name = `svc_group_${n}`;
      // the caller's savepoint, opened before its first statement (with the RELEASE of the one before,
      // or with the BEGIN): a caller that only defers writes costs no call to SQLite of its own
      let savepoint: Promise<void> | undefined;
      /** Set when opening the savepoint failed: SQLite rolled the transaction back, or it could not begin. */
      let lost: { cause: unknown; beginning: boolean } | undefined;
      const begin = () => {
        const beginning = !begun;
        return (savepoint ??= w.exec(`${open ? `RELEASE ${open}; ` : beginning ? "BEGIN IMMEDIATE; " : ""}SAVEPOINT ${name}`).then(
          () => {
            begun = true;
            open = name;
          },
          (err: unknown) => {
            lost = { cause: err, beginning };
            throw err;
          },
        ));
      };
      const inSavepoint = <T>(statement: () => Promise<T>): Promise<T> => (lost ? Promise.reject(lost.cause) : open === name ? statement() : begin().then(statement));
      // the caller's own view of the transaction: the writer's statements plus its commit hooks
      let hooks: Array<() => void> | undefined;
      let queued: Done["queued"];
      let nested = 0;
      const tx: SqlWriter = {
        run: (sql, params) => inSavepoint(() => w.run(sql, params)),
        get: (sql, params) => inSavepoint(() => w.get(sql, params)),
        all: (sql, params) => inSavepoint(() => w.all(sql, params)),
        afterCommit: (fn) => void (hooks ??= []).push(fn),
        defer: (statement, items) => void (queued ??= []).push([statement as GroupStatement<unknown>, items]),
        savepoint: async (fn) => {
          const inner = `${name}_${++nested}`;
          const marks = [queued?.length ?? 0, hooks?.length ?? 0] as const;
          await tx.run(`SAVEPOINT ${inner}`);
          try {
            const value = await fn();
            await tx.run(`RELEASE ${inner}`);
            return value;
          } catch (err) {
            if (lost) throw lost.cause;
            try {
              await w.exec(`ROLLBACK TO ${inner}; RELEASE ${inner}`);
            } catch {
              // SQLite rolled the whole transaction back (what `fn` ran made it): nothing more may run in
              // it (it would autocommit)
              lost = { cause: new TransactionLost(err), beginning: false };
              throw lost.cause;
            }
            queued?.splice(marks[0]);
            hooks?.splice(marks[1]);
            throw err;
          }
        },
      };
      try {
        const value = await waiter.fn(tx);
        if (lost) throw lost.cause;
        done.push({ waiter, value, hooks, queued });
      } catch (err) {
        if (lost) {
          waiter.reject(err);
          return lose(lost.cause, lost.beginning);
        }
        if (savepoint) {
          try {
            await savepoint;
            await w.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
          } catch {
            waiter.reject(err);
            return lose(err, false);
          }
          open = undefined;
        }
        waiter.reject(err);
      }
      if (this.waiting.length === 0 || n >= Database.GROUP_MAX || performance.now() - began >= this.groupMs) break;
    }
    const deferred = deferredItems(done);
    // nothing was written (no caller ran a statement or deferred one): there is no transaction to commit
    if (begun || deferred.size > 0) {
      this.commits++;
      try {
        await this.commitGroup(deferred, begun, open);
      } catch (err) {
        await w.run("ROLLBACK").catch(() => undefined);
        for (const d of done) d.waiter.reject(err);
        return;
      }
    }
    for (const d of done) {
      if (!d.hooks) continue;
      for (const fn of d.hooks) {
        try {
          fn();
        } catch {
          // committed either way; a hook must not throw (see SqlWriter.afterCommit)
        }
      }
    }
    for (const d of done) d.waiter.resolve(d.value);
  }

  /**
   * Ends a group: runs its deferred statements and commits. When every one of them offers its text
   * ({@link GroupStatement.sql}), that is one call to SQLite: `BEGIN IMMEDIATE; <texts>; COMMIT` when
   * no caller ran a statement, else `RELEASE <open>; SAVEPOINT svc_deferred; <texts>; RELEASE svc_deferred; COMMIT`.
   * If that call fails inside the texts, `ROLLBACK TO svc_deferred` undoes them and each statement's
   * {@link GroupStatement.run} runs instead (counted in {@link DatabaseStats.deferredFallbacks}); in
   * the first form, `ROLLBACK` undoes the call (whose `COMMIT` may have failed too) and they run in a
   * new transaction. When the statements do not all offer their text, one call per statement between
   * the `BEGIN` (when none ran yet) and the `COMMIT`.
   * @throws the SQLite error that fails the group (the caller rolls back and rejects every caller)
   */
  private async commitGroup(deferred: ReadonlyMap<GroupStatement<unknown>, unknown[]>, begun: boolean, open: string | undefined): Promise<void> {
    const w = this.writer;
    const release = open ? `RELEASE ${open}; ` : "";
    const texts: string[] = [];
    for (const [statement, items] of deferred) {
      const text = statement.sql?.(items);
      if (text === undefined) break;
      texts.push(text);
    }
    if (deferred.size > 0 && texts.length === deferred.size) {
      // when no caller ran a statement, the call is the whole transaction: nothing before the texts to
      // keep, so no savepoint around them (inside one, SQLite first copies each page it changes to a sub-journal)
      const body = texts.join(";\n");
      try {
        await w.exec(begun ? `${release}SAVEPOINT svc_deferred;\n${body};\nRELEASE svc_deferred; COMMIT` : `BEGIN IMMEDIATE;\n${body};\nCOMMIT`);
        return;
      } catch (err) {
        // undone when a text (or the COMMIT) failed in the open transaction; when BEGIN failed, or SQLite
        // rolled the whole transaction back, the savepoint or the transaction is gone: the group fails
        await w.exec(begun ? "ROLLBACK TO svc_deferred" : "ROLLBACK").catch(() => Promise.reject(err));
        this.deferredFallbacks++;
      }
      if (!begun) await w.exec("BEGIN IMMEDIATE");
      for (const [statement, items] of deferred) await statement.run(w, items);
      await w.exec(`${begun ? "RELEASE svc_deferred; " : ""}COMMIT`);
      return;
    }
    if (!begun) await w.exec("BEGIN IMMEDIATE");
    for (const [statement, items] of deferred) await statement.run(w, items);
    await w.exec(`${release}COMMIT`);
  }

  /**
   * How long the writer has kept a caller waiting (ms): the oldest caller still queued, or the group
   * running now since it began; 0 when the writer is idle. `GET /api/status` reports the store
   * unhealthy past a few seconds (a statement holding the writer holds every write of the service).
   */
  writerWaitMs(): number {
    const now = performance.now();
    const queued = this.waiting.length > 0 ? now - this.waiting[0]!.queuedAt : 0;
    const running = this.groupBegan !== undefined ? now - this.groupBegan : 0;
    return Math.round(Math.max(queued, running));
  }

  /** When the group running now began (`performance.now()`), while one runs. */
  private groupBegan: number | undefined;

  /** What the store has done since it opened: statements per connection, callers and commits. */
  stats(): DatabaseStats {
    return { writerStatements: this.writer.statements(), readerStatements: this.writer === this.reader ? 0 : this.reader.statements(), transactions: this.transactions, commits: this.commits, ...(this.wal?.stats() ?? WalCheckpointer.NONE), deferredFallbacks: this.deferredFallbacks };
  }

  /** Reads one row from committed data. */
  get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    return this.reader.get<T>(sql, params);
  }

  /** Reads all rows from committed data. */
  all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.reader.all<T>(sql, params);
  }

  /**
   * Waits for queued transactions and a checkpoint in progress, then closes the connections (the last one
   * to close checkpoints the WAL).
   * @param opts.interruptAfterMs when the writer is still busy after this long, the statement it runs is
   *   interrupted (`SQLITE_INTERRUPT`: its caller gets the error, and a write's transaction is rolled
   *   back), and so is any statement running at the 50 ms checks after it until the queue is empty (a
   *   queued caller whose statements fall between two checks may still commit), so a statement that
   *   would run for minutes does not hold the process's exit; `onInterrupt` is called first. Default:
   *   wait as long as it takes.
   */
  async close(opts: { interruptAfterMs?: number; onInterrupt?: () => void } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const walClosed = this.wal?.close();
    let timer: NodeJS.Timeout | undefined;
    let again: NodeJS.Timeout | undefined;
    if (opts.interruptAfterMs !== undefined && this.running) {
      timer = setTimeout(() => {
        opts.onInterrupt?.();
        this.writer.interrupt();
        // what the writer runs next (the rest of the queue) is interrupted too, until the queue is empty
        again = setInterval(() => this.writer.interrupt(), 50);
      }, opts.interruptAfterMs);
    }
    while (this.running) await this.running;
    clearTimeout(timer);
    clearInterval(again);
    await walClosed;
    await this.reader.close();
    if (this.writer !== this.reader) await this.writer.close();
  }
}
