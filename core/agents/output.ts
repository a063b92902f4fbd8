import { EventEmitter } from "node:events";
import { inject, injectable } from "../di";
import { Database, type SqlReader, type SqlWriter } from "../store/db";
import { CONFIG, type Config } from "../config";
import { LOGGER, type Logger } from "../logger";
import { Lifecycle } from "../lifecycle";
import { ApiError } from "../errors";
import { nowIso } from "../ids";
import type { Principal } from "../auth/permissions";

/** How often retention runs (spec 6.5 rule 3: what it removes is answered with a null cursor). */
export const AGENT_OUTPUT_PRUNE_EVERY_MS = 60_000;

/** The record kinds a reply run writes (see {@link AgentOutput}); `activity` ones also reach activity subscriptions. */
export const AGENT_OUTPUT_KINDS = ["text", "text.reset", "tool.call", "tool.result", "artifact.published", "artifact.withdrawn", "error", "run.started", "run.finished"] as const;
export type AgentOutputKind = (typeof AGENT_OUTPUT_KINDS)[number];

/**
 * One record to append (spec 6.5).
 *
 * - `runId`: the reply run it belongs to; `owner`: the identity id owning the run's conversation
 *   (activity subscriptions are scoped by it).
 * - `kind` and `data`: see {@link AgentOutput}; `data` is stored as JSON (`undefined` becomes `null`).
 * - `key`: an idempotency key; appending a key that already exists writes nothing and answers the
 *   stored record (a retried activity never streams twice).
 * - `activity`: also an activity record (`run.started`, `run.finished`, `artifact.published`).
 */
export interface OutputRecordInput {
  runId: string;
  owner: string;
  kind: string;
  data: unknown;
  key?: string;
  activity?: boolean;
}

/**
 * A retained record as readers get it: `cursor` is opaque ({@link encodeOutputCursor}), `at` the ISO
 * time it was appended. `/ws/agents` frames it as `{ type: "record", runId, cursor, record: { kind, data, at } }`.
 */
export interface OutputRecord {
  cursor: string;
  runId: string;
  kind: string;
  data: unknown;
  at: string;
}

/** What a read covers: one run's output, or the activity records of the runs `activityOf` (an identity id) owns. */
export type OutputScope = { runId: string } | { activityOf: string };

/**
 * A reply run's state as `/ws/agents` sends it in `run.snapshot` frames (spec 4.3, 6.5): status,
 * the versions it published (withdrawn ones flagged), model usage, the error of a failed run, and the
 * retry links between a failed run and the run retrying it.
 */
export interface AgentRunState {
  runId: string;
  conversationId: string;
  agentId: string;
  status: "queued" | "running" | "completed" | "failed" | "cancelled";
  retryOf?: string;
  retriedBy?: string;
  published: Array<{ artifactId: string; version: number; title: string; kind: string; address: string; withdrawn: boolean }>;
  usage: { inputTokens: number; outputTokens: number; modelCalls: number };
  error?: { code: string; message: string };
  createdAt: string;
  updatedAt: string;
}

/**
 * What `/ws/agents` needs of the reply runs (implemented by the agent runs service): the access
 * check and state of one run, and a notifier of state changes.
 */
export interface AgentRunAccess {
  /** The run's state for `principal` (its conversation's owner only, while they may use its agent). @throws ApiError not_found (no such run, or not yours); forbidden (its agent's use was taken from you) */
  state(principal: Principal, runId: string): Promise<AgentRunState>;
  /** Emits ("changed", runId) whenever a run's state changes. */
  changes: EventEmitter;
  /**
   * Refuses a principal that may use no agent of the project (spec 5: agent streams need access to an
   * agent): the activity subscription's check. @throws ApiError forbidden
   */
  requireSomeAgent(principal: Principal): void;
}

const CURSOR_PREFIX = "ao2";
/** The first cursors (before they carried the database's epoch): still read, never issued. */
const LEGACY_PREFIX = "ao1";

/**
 * Encodes a position of the agent output as an opaque cursor: base64url of `ao2:<epoch>:<seq>`, where
 * `epoch` is the database's (its `stream_epoch`, made when it was created), so a cursor of another
 * database (one deleted and made again) is refused instead of silently skipping records. Not
 * interchangeable with `/ws/events` cursors.
 */
export function encodeOutputCursor(epoch: string, seq: number): string {
  return Buffer.from(`${CURSOR_PREFIX}:${epoch}:${seq}`).toString("base64url");
}

/**
 * Decodes an agent output cursor of this database (`epoch`) into its position. A cursor of the first
 * form (`ao1:<seq>`, issued before cursors carried the epoch) is still read.
 * @throws {ApiError} invalid_request when the string is not a cursor of this agent output
 */
export function decodeOutputCursor(epoch: string, cursor: string): number {
  const parts = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8").split(":") : [];
  const ours = (parts.length === 3 && parts[0] === CURSOR_PREFIX && parts[1] === epoch) || (parts.length === 2 && parts[0] === LEGACY_PREFIX);
  const digits = parts.at(-1) ?? "";
  const seq = Number(digits);
  if (!ours || !/^\d+$/.test(digits) || !Number.isSafeInteger(seq)) {
    throw new ApiError("invalid_request", "afterCursor is not a cursor of this agent output", { afterCursor: cursor });
  }
  return seq;
}

interface OutputRow {
  seq: number;
  run_id: string;
  kind: string;
  data: string;
  created_at: string;
}

const COLUMNS = "seq, run_id, kind, data, created_at";
const toRecord = (epoch: string, r: OutputRow): OutputRecord => ({ cursor: encodeOutputCursor(epoch, r.seq), runId: r.run_id, kind: r.kind, data: JSON.parse(r.data), at: r.created_at });

/** The WHERE clause of a scope (the activity one matches the partial index `agent_output_activity`). */
function scopeWhere(scope: OutputScope): { sql: string; params: string[] } {
  if ("runId" in scope) return { sql: "run_id = ?", params: [scope.runId] };
  return { sql: "owner = ? AND activity = 1", params: [scope.activityOf] };
}

/**
 * Retained output of agent reply runs (spec 6.5, `/ws/agents`), in the `agent_output` table: one
 * sequence (`seq`) orders every record; readers page it with opaque cursors; `notifier` emits
 * "appended" after every commit that added records (live subscriptions read again then, see
 * `cursorPump`).
 *
 * Record kinds and their `data`:
 *
 * | kind | data | activity |
 * |---|---|---|
 * | `text` | `{ step, delta }` (a piece of the reply's text) | no |
 * | `text.reset` | `{ step, attempt }` (the step's model call was retried: drop the text it streamed before) | no |
 * | `tool.call` | `{ step, id, name, input }` | no |
 * | `tool.result` | `{ step, id, name, result, isError }` | no |
 * | `artifact.published` | `{ artifactId, version, title, kind, address }` | yes |
 * | `artifact.withdrawn` | `{ artifactId, version }` (a retried failed reply withdrew it) | yes |
 * | `error` | `{ code, message }` (the run's error, README "Run errors"; `{ message }` in runs that failed before codes) | no |
 * | `run.started` | `{ runId, agentId, conversationId }` | yes |
 * | `run.finished` | `{ runId, status, error? }` (`error`: the message alone, as it always was; its code is in the `error` record and the run) | yes |
 *
 * Retention (`SVC_AGENT_OUTPUT_RETENTION_MS`, default 7 days): once a minute {@link AgentOutput.prune}
 * deletes older records and raises `agent_output_pruned.through_seq` in the same transaction; a read
 * from a cursor below that mark answers `reset: true` (rule 3: resume from the earliest available).
 */
/** The most recent records kept in memory for live readers (all scopes). */
export const AGENT_OUTPUT_TAIL = 20_000;

interface TailEntry {
  seq: number;
  runId: string;
  owner: string;
  activity: boolean;
  record: OutputRecord;
}

@injectable()
export class AgentOutput {
  /** Emits "appended" after a commit that added records. */
  readonly notifier = new EventEmitter();
  /**
   * The records appended by this process, newest last: every record with a position above `tailFloor`
   * is here, so a live reader (its cursor at or above the floor) is answered from memory instead of
   * SQLite's one read connection (a hundred subscribers of streaming replies would otherwise queue a
   * hundred reads per record). Undefined until the first append; reads below the floor go to SQLite.
   */
  private tail: TailEntry[] = [];
  private tailFloor: number | undefined;
  private prunedCache: number | undefined;
  /** The database's epoch, read once (see {@link encodeOutputCursor}). */
  private epochRead: Promise<string> | undefined;
  /** A position every issued cursor is at or below (the newest record's, or the prune mark), raised as records are appended. */
  private newestKnown = 0;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(CONFIG) private readonly config: Config,
    @inject(Lifecycle) lifecycle: Lifecycle,
    @inject(LOGGER) private readonly log: Logger,
  ) {
    this.notifier.setMaxListeners(0);
    lifecycle.every(AGENT_OUTPUT_PRUNE_EVERY_MS, () =>
      this.prune().then(
        ({ deleted }) => deleted && this.log.info({ deleted }, "pruned agent output"),
        (err) => this.log.warn({ err }, "agent output retention failed"),
      ),
    );
  }

  /**
   * Appends records in one transaction, in order, then emits "appended". A record whose `key` is
   * already stored is not written again: the stored record is answered in its place.
   *
   * @returns the records as stored, in the input's order
   * @throws the SQLite error (nothing is written)
   */
  async append(records: OutputRecordInput[]): Promise<OutputRecord[]> {
    if (records.length === 0) return [];
    const { stored, added, floor, seqs } = await this.db.transaction(async (tx) => {
      // the first append of this process: every record above today's newest will pass through here
      const floor = this.tailFloor ?? (await tx.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM agent_output"))?.seq ?? 0;
      return { ...(await this.insert(tx, records)), floor };
    });
    if (this.tailFloor === undefined) this.tailFloor = floor;
    stored.forEach((record, i) => {
      const seq = seqs[i];
      if (seq !== undefined && seq > this.newestKnown) this.newestKnown = seq;
      if (seq === undefined || seq <= this.tailFloor!) return;
      const entry = { seq, runId: records[i]!.runId, owner: records[i]!.owner, activity: !!records[i]!.activity, record };
      // commits are serialized but their continuations may run out of order: keep the tail sorted
      let at = this.tail.length;
      while (at > 0 && this.tail[at - 1]!.seq > seq) at--;
      this.tail.splice(at, 0, entry);
    });
    if (this.tail.length > AGENT_OUTPUT_TAIL) {
      const dropped = this.tail.splice(0, this.tail.length - AGENT_OUTPUT_TAIL / 2);
      this.tailFloor = dropped.at(-1)!.seq;
    }
    if (added) this.notifyAppended();
    return stored;
  }

  /**
   * {@link AgentOutput.append} inside the caller's transaction: the caller calls
   * {@link AgentOutput.notifyAppended} after its commit (readers see the records only then).
   */
  async appendInTx(tx: SqlWriter, records: OutputRecordInput[]): Promise<OutputRecord[]> {
    // the caller's transaction may still roll back: these records are read from SQLite, never from the tail
    this.tail = [];
    this.tailFloor = undefined;
    return (await this.insert(tx, records)).stored;
  }

  /** Wakes live readers: call after committing a transaction that used {@link AgentOutput.appendInTx}. */
  notifyAppended(): void {
    this.notifier.emit("appended");
  }

  /** The database's `stream_epoch` (meta), read once. */
  private epoch(): Promise<string> {
    return (this.epochRead ??= this.db.get<{ value: string }>("SELECT value FROM meta WHERE key = 'stream_epoch'").then((row) => {
      if (!row) throw new Error("the database has no stream_epoch (meta)");
      return row.value;
    }));
  }

  private async insert(tx: SqlWriter, records: OutputRecordInput[]): Promise<{ stored: OutputRecord[]; added: boolean; seqs: Array<number | undefined> }> {
    const epoch = await this.epoch();
    const stored: OutputRecord[] = [];
    const seqs: Array<number | undefined> = [];
    let added = false;
    for (const r of records) {
      const at = nowIso();
      const { changes, lastID } = await tx.run("INSERT OR IGNORE INTO agent_output (run_id, owner, kind, data, key, activity, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [
        r.runId,
        r.owner,
        r.kind,
        JSON.stringify(r.data ?? null),
        r.key ?? null,
        r.activity ? 1 : 0,
        at,
      ]);
      if (changes > 0) {
        added = true;
        stored.push({ cursor: encodeOutputCursor(epoch, lastID), runId: r.runId, kind: r.kind, data: JSON.parse(JSON.stringify(r.data ?? null)), at });
        seqs.push(lastID);
      } else {
        seqs.push(undefined);
        const existing = await tx.get<OutputRow>(`SELECT ${COLUMNS} FROM agent_output WHERE key = ?`, [r.key ?? null]);
        if (!existing) throw new Error(`agent output record was neither written nor found (key ${JSON.stringify(r.key)})`);
        stored.push(toRecord(epoch, existing));
      }
    }
    return { stored, added, seqs };
  }

  /**
   * Reads the scope's records after `afterCursor` (from its first retained record without one), in
   * `seq` order, at most `limit`. `reset` is true when retention removed records after the cursor
   * (the cursor is below `agent_output_pruned.through_seq`): the records then start at the earliest
   * retained one of the scope (spec 6.5 rule 3).
   *
   * @param limit 0 answers only `reset` (no records)
   * @throws {ApiError} invalid_request when `afterCursor` is not a cursor of the agent output
   */
  async read(scope: OutputScope, afterCursor: string | undefined, limit: number): Promise<{ records: OutputRecord[]; reset: boolean }> {
    const epoch = await this.epoch();
    const after = afterCursor === undefined ? 0 : decodeOutputCursor(epoch, afterCursor);
    if (after > this.newestKnown) {
      // past every position known here: read the newest from the store, and refuse a cursor past it (never
      // issued: following it would skip records in silence)
      const row = await this.db.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM agent_output");
      this.newestKnown = Math.max(this.newestKnown, row?.seq ?? 0, await this.prunedThrough(this.db));
      if (after > this.newestKnown) throw new ApiError("invalid_request", "afterCursor is not a cursor of this agent output (it is past the newest record)", { afterCursor });
    }
    if (afterCursor !== undefined && after > 0) await this.checkCursorScope(scope, after, afterCursor);
    if (afterCursor !== undefined && this.tailFloor !== undefined && after >= this.tailFloor) {
      // a live reader: everything after its cursor is in the tail
      const records: OutputRecord[] = [];
      for (let i = this.tailIndex(after + 1); i < this.tail.length && records.length < limit; i++) {
        const e = this.tail[i]!;
        if ("runId" in scope ? e.runId === scope.runId : e.owner === scope.activityOf && e.activity) records.push(e.record);
      }
      return { records, reset: after < (await this.prunedThroughCached()) };
    }
    const where = scopeWhere(scope);
    // records first, the prune mark second: a prune committed in between can only make `reset`
    // true for records that were all still there (never a silent gap)
    const rows = limit > 0 ? await this.db.all<OutputRow>(`SELECT ${COLUMNS} FROM agent_output WHERE ${where.sql} AND seq > ? ORDER BY seq LIMIT ?`, [...where.params, after, limit]) : [];
    const reset = afterCursor !== undefined && after < (await this.prunedThrough(this.db));
    return { records: rows.map((r) => toRecord(epoch, r)), reset };
  }

  /**
   * Refuses a cursor of another scope's output (another run's record, or a record outside the caller's
   * activity): it is a position in the whole output, and following it skipped this scope's records
   * before it in silence. A position whose record retention removed is taken as it is.
   * @throws {ApiError} invalid_request
   */
  private async checkCursorScope(scope: OutputScope, seq: number, afterCursor: string): Promise<void> {
    const row = this.tailEntry(seq) ?? (await this.db.get<{ run_id: string; owner: string; activity: number }>("SELECT run_id, owner, activity FROM agent_output WHERE seq = ?", [seq]).then((r) => (r ? { seq, runId: r.run_id, owner: r.owner, activity: r.activity === 1 } : undefined)));
    if (!row) return;
    const ours = "runId" in scope ? row.runId === scope.runId : row.owner === scope.activityOf && row.activity;
    if (!ours) throw new ApiError("invalid_request", `afterCursor is a cursor of ${"runId" in scope ? "another run's output" : "output outside your activity"}: use a cursor this subscription's records gave`, { afterCursor });
  }

  /** The index of the tail's first entry at or after `seq` (binary search: the tail is in seq order). */
  private tailIndex(seq: number): number {
    let lo = 0;
    let hi = this.tail.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.tail[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The tail's entry of `seq`, or undefined. */
  private tailEntry(seq: number): TailEntry | undefined {
    const entry = this.tail[this.tailIndex(seq)];
    return entry?.seq === seq ? entry : undefined;
  }

  /** The cursor of the scope's newest record, or undefined when it has none (a live-only subscription starts after it). */
  async latestCursor(scope: OutputScope): Promise<string | undefined> {
    const where = scopeWhere(scope);
    const row = await this.db.get<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM agent_output WHERE ${where.sql}`, where.params);
    return row?.seq ? encodeOutputCursor(await this.epoch(), row.seq) : undefined;
  }

  /**
   * Retention: in one transaction, deletes the oldest records up to (not including) the first one
   * appended less than `agentOutputRetentionMs` before `now`, and raises `through_seq` to the last
   * deleted position (it never goes down).
   *
   * @param now epoch milliseconds (default: the current time)
   * @returns how many records were deleted and the prune mark after the pass
   */
  async prune(now: number = Date.now()): Promise<{ deleted: number; throughSeq: number }> {
    const cutoff = new Date(now - this.config.agentOutputRetentionMs).toISOString();
    return this.db.transaction(async (tx) => {
      const through = await this.prunedThrough(tx);
      // output is appended in time order: delete the prefix that is older than the cutoff
      const young = await tx.get<{ seq: number }>("SELECT seq FROM agent_output WHERE created_at >= ? ORDER BY seq LIMIT 1", [cutoff]);
      const last = young
        ? await tx.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM agent_output WHERE seq < ?", [young.seq])
        : await tx.get<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM agent_output");
      const upTo = last?.seq ?? 0;
      if (upTo <= through) return { deleted: 0, throughSeq: through };
      const { changes } = await tx.run("DELETE FROM agent_output WHERE seq <= ?", [upTo]);
      await tx.run("INSERT INTO agent_output_pruned (id, through_seq) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET through_seq = MAX(through_seq, excluded.through_seq)", [upTo]);
      this.prunedCache = upTo;
      this.tail = this.tail.filter((e) => e.seq > upTo);
      if (this.tailFloor !== undefined) this.tailFloor = Math.max(this.tailFloor, upTo);
      return { deleted: changes, throughSeq: upTo };
    });
  }

  private async prunedThroughCached(): Promise<number> {
    this.prunedCache ??= await this.prunedThrough(this.db);
    return this.prunedCache;
  }

  private async prunedThrough(reader: SqlReader): Promise<number> {
    return (await reader.get<{ through_seq: number }>("SELECT through_seq FROM agent_output_pruned WHERE id = 1"))?.through_seq ?? 0;
  }
}
