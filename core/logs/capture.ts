import { EventEmitter } from "node:events";
import * as v from "valibot";
import { insertRows, type Database, type SqlParams } from "../store/db";
import type { Logger } from "../logger";
import type { HandlerLogger } from "../sdk/context";
import { decodeCursor, encodeCursor } from "../events/cursor";
import { ApiError } from "../errors";
import { pruneBefore } from "../store/retention";

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The kinds of run whose code writes log lines: an action's effect logs under its action run, workflow
 * code under its workflow run, the project's seed under `{ kind: "seed", id: "seed" }`.
 */
export const LOG_RUN_KINDS = ["action", "webhook", "schedule", "sync", "pipeline", "workflow", "seed"] as const;

/** A run reference (spec 2.5): `{ kind, id }`, e.g. `{ kind: "action", id: <runId> }`. */
export const RunRefSchema = v.object({ kind: v.string(), id: v.string() });
export type RunRef = v.InferOutput<typeof RunRefSchema>;

/** A captured log line (spec 2.5): message, level, fields, run context, time (ISO) and cursor. */
export const LogLineSchema = v.object({ message: v.string(), level: v.picklist(LOG_LEVELS), fields: v.record(v.string(), v.unknown()), run: RunRefSchema, at: v.string(), cursor: v.string() });
export type LogLine = v.InferOutput<typeof LogLineSchema>;

/** A read of captured logs, oldest first. */
export interface LogQuery {
  run?: RunRef;
  kinds?: readonly string[];
  levels?: readonly LogLevel[];
  afterCursor?: string;
  limit: number;
}

/**
 * The INSERT of a flush's lines: one statement over all of them (see
 * {@link insertRows}), seqs in the lines' order. An item is `[at, appendedAt, level, message,
 * fields (JSON text), runKind, runId]`.
 */
const insertLines = insertRows<[at: string, appendedAt: number, level: LogLevel, message: string, fields: string, runKind: string, runId: string]>("logs", ["at", "appended_at", "level", "message", "fields", "run_kind", "run_id"]);

/**
 * The statement of a page of {@link LogCapture.readPage}: lines up to `newest`, after `afterSeq`, with
 * the query's filters, oldest first. A reader that follows (`afterSeq` given) by kinds alone reads the
 * range of seqs after its position (the primary key: `+run_kind` keeps SQLite off `logs_by_run`, which
 * would read every retained line of those kinds and sort them on each poll); a read from the start by
 * kinds, or by run, goes along `logs_by_run`.
 */
export function logsPageQuery(q: Omit<LogQuery, "afterCursor">, newest: number, afterSeq: number | undefined): { sql: string; params: SqlParams } {
  const where: string[] = ["seq <= ?"];
  const params: SqlParams = [newest];
  if (afterSeq !== undefined) {
    where.push("seq > ?");
    params.push(afterSeq);
  }
  if (q.run) {
    where.push("run_kind = ? AND run_id = ?");
    params.push(q.run.kind, q.run.id);
  }
  if (q.kinds?.length) {
    where.push(`${afterSeq !== undefined && !q.run ? "+" : ""}run_kind IN (${q.kinds.map(() => "?").join(",")})`);
    params.push(...q.kinds);
  }
  if (q.levels?.length) {
    where.push(`level IN (${q.levels.map(() => "?").join(",")})`);
    params.push(...q.levels);
  }
  return { sql: `SELECT * FROM logs WHERE ${where.join(" AND ")} ORDER BY seq LIMIT ?`, params: [...params, q.limit] };
}

/**
 * Handler log capture (spec 2.5). {@link LogCapture.logger} gives a handler a logger that writes to the
 * process log (pino, with the run context bound) and to the `logs` table, batched (flushed every
 * 100 ms or 500 lines, one transaction and one statement per batch). Lines get opaque cursors of their own (not
 * interchangeable with event cursors) and the same retention as events; pruned cursors answer
 * `cursor_expired`.
 */
export class LogCapture {
  readonly notifier = new EventEmitter();
  private buffer: Array<Omit<LogLine, "cursor">> = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private prunedThrough = 0;
  /**
   * The newest seq this capture answers: `sqlite_sequence`'s at open (the last seq the table gave, also
   * when retention deleted every line), then moved on by each flush's line count once it commits: this
   * capture is the `logs` table's one writer and a flush one multi-row INSERT, so AUTOINCREMENT gives its
   * lines the next seqs in order (a rolled-back flush gives none and moves nothing). Reads stop there and
   * a cursor past it is refused, so a cursor never issued (one that would skip the lines written up to
   * it) is not taken in silence.
   */
  private newest = 0;

  constructor(
    private readonly db: Database,
    private readonly epoch: string,
  ) {
    this.notifier.setMaxListeners(0);
  }

  /** Opens the capture over the database (reads its stream epoch and prune mark). */
  static async open(db: Database): Promise<LogCapture> {
    const rows = await db.all<{ key: string; value: string }>("SELECT key, value FROM meta WHERE key IN ('stream_epoch', 'logs_pruned_through')");
    const meta = Object.fromEntries(rows.map((r) => [r.key, r.value]));
    const capture = new LogCapture(db, `${meta.stream_epoch}-logs`);
    capture.prunedThrough = Number(meta.logs_pruned_through ?? 0);
    const sequence = await db.get<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'logs'");
    capture.newest = Math.max(sequence?.seq ?? 0, capture.prunedThrough);
    return capture;
  }

  /**
   * A handler's logger: pino child with the run bound, plus capture. The child is made at the first
   * line the service's logger writes (at or above its level): pino serializes a child's bindings when
   * it is made, and most runs log nothing, or only below the level (the children were ~1 % of the main
   * thread's busy time in a `--cpu-prof` of `BENCH_ONLY=writes`, issue 15). Every line is captured
   * (spec 2.5), whatever the level.
   */
  logger(base: Logger, run: RunRef, bindings: Record<string, unknown> = {}): HandlerLogger {
    let child: Logger | undefined;
    const write = (level: LogLevel) => (obj: object | string, msg?: string) => {
      // no child for a line the service's logger drops (below its level): the capture below keeps it
      if (base.isLevelEnabled(level)) {
        child ??= base.child({ run, ...bindings });
        if (typeof obj === "string") child[level](obj);
        else child[level](obj, msg);
      }
      const fields = serializable(obj);
      // Object.assign, not `{ ...bindings, ...fields }`: on Node 20 each property after a spread takes
      // V8's slow path (1.2-1.4 µs against 0.12-0.15 µs for a webhook's five fields, per line)
      this.push({ level, message: typeof obj === "string" ? obj : typeof msg === "string" ? msg : "", fields: Object.assign({}, bindings, fields), run, at: new Date().toISOString() });
    };
    return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
  }

  private push(line: Omit<LogLine, "cursor">): void {
    this.buffer.push(line);
    if (this.buffer.length >= 500) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), 100);
  }

  /** Writes buffered lines now. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const lines = this.buffer.splice(0);
    if (lines.length === 0) return this.flushing;
    this.flushing = this.flushing
      .then(async () => {
        const now = Date.now();
        await this.db.transaction(async (tx) => {
          tx.defer(insertLines, lines.map((l) => [l.at, now, l.level, l.message, JSON.stringify(l.fields), l.run.kind, l.run.id]));
          tx.afterCommit(() => void (this.newest += lines.length));
        });
        this.notifier.emit("appended");
      })
      .catch(() => undefined);
    return this.flushing;
  }

  /**
   * Checks that `cursor` is a cursor of this log (not whether it is still retained) and answers its seq.
   * @throws {ApiError} invalid_request when it is not one, or is past the newest line (never issued)
   */
  checkCursor(cursor: string): number {
    const seq = decodeCursor(this.epoch, cursor, "log");
    if (seq > this.newest) throw new ApiError("invalid_request", "afterCursor is not a cursor of this log (it is past the newest line)", { afterCursor: cursor });
    return seq;
  }

  /**
   * Reads lines oldest first, up to the newest line this capture has read back (see `newest`).
   * @throws {ApiError} invalid_request (a foreign cursor, or one past the newest line), cursor_expired
   */
  async read(q: LogQuery): Promise<LogLine[]> {
    return (await this.readPage(q)).lines;
  }

  /**
   * {@link LogCapture.read}, with where to continue: `nextCursor` is the last line's cursor on a full
   * page; on a shorter one (caught up) the newest position the read covered, past the lines the filters
   * skipped, so a reader whose filter matched nothing for a while still holds a cursor inside the
   * retained window; the `afterCursor` sent when the log has no line yet, null when none was sent.
   * @throws {ApiError} as {@link LogCapture.read}
   */
  async readPage(q: LogQuery): Promise<{ lines: LogLine[]; nextCursor: string | null }> {
    const newest = this.newest;
    let afterSeq: number | undefined;
    if (q.afterCursor !== undefined) {
      afterSeq = this.checkCursor(q.afterCursor);
      if (afterSeq < this.prunedThrough) throw new ApiError("cursor_expired", "The cursor points before the retained logs", { afterCursor: q.afterCursor });
    }
    const { sql, params } = logsPageQuery(q, newest, afterSeq);
    const rows = await this.db.all<{ seq: number; at: string; level: LogLevel; message: string; fields: string; run_kind: string; run_id: string }>(sql, params);
    const lines = rows.map((r) => ({ message: r.message, level: r.level, fields: JSON.parse(r.fields), run: { kind: r.run_kind, id: r.run_id }, at: r.at, cursor: encodeCursor(this.epoch, r.seq) }));
    const nextCursor = lines.length === q.limit ? lines.at(-1)!.cursor : newest > 0 ? encodeCursor(this.epoch, newest) : (q.afterCursor ?? null);
    return { lines, nextCursor };
  }

  /** The newest position's cursor (the newest line's, or the prune mark's when retention deleted every line), or undefined when the log has none. */
  async latestCursor(): Promise<string | undefined> {
    return this.newest > 0 ? encodeCursor(this.epoch, this.newest) : undefined;
  }

  /** Drops lines older than `retentionMs` (the events' retention). */
  async prune(retentionMs: number): Promise<number> {
    const cutoff = Date.now() - retentionMs;
    const pruned = await this.db.transaction((tx) => pruneBefore(tx, "logs", "logs_pruned_through", cutoff));
    if (!pruned) return 0;
    this.prunedThrough = pruned.through;
    return pruned.changes;
  }
}

/**
 * A line's fields as JSON can carry them, never throwing (logging must not fail a handler): an Error, at
 * any depth, becomes `{ type, message }` (with its `cause` the same way); a BigInt its decimal text; an
 * object met again on its own path `"[Circular]"`; functions and symbols are left out, as JSON leaves them.
 * A value that is not an object (`ctx.log.info(undefined, …)`) gives no fields.
 */
export function serializable(obj: unknown): Record<string, unknown> {
  if (typeof obj !== "object" || obj === null) return {};
  const path: unknown[] = [];
  const convert = (value: unknown): unknown => {
    if (typeof value === "bigint") return value.toString();
    if (typeof value !== "object" || value === null) return value;
    if (path.includes(value)) return "[Circular]";
    if (value instanceof Error) {
      const cause = (value as { cause?: unknown }).cause;
      path.push(value);
      const out = { type: value.name, message: value.message, ...(cause !== undefined ? { cause: convert(cause) } : {}) };
      path.pop();
      return out;
    }
    const json = (value as { toJSON?: unknown }).toJSON;
    if (typeof json === "function") {
      try {
        return convert(json.call(value));
      } catch {
        return String(value);
      }
    }
    path.push(value);
    let out: unknown;
    if (Array.isArray(value)) out = value.map((item) => (typeof item === "function" || typeof item === "symbol" ? null : convert(item)));
    else {
      const fields: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) if (typeof v !== "function" && typeof v !== "symbol" && v !== undefined) fields[k] = convert(v);
      out = fields;
    }
    path.pop();
    return out;
  };
  const converted = convert(obj);
  // what JSON keeps of the rest (NaN → null, …), as the stored text will
  return JSON.parse(JSON.stringify(converted)) as Record<string, unknown>;
}
