import type { Database, SqlWriter } from "../store/db";
import type { DomainEventEnvelope } from "./catalog";
import type { EventStream } from "./stream";
import type { Logger } from "../logger";
import { SerialPass } from "../serial-pass";

/** Health of the outbox, as reported by `/api/status` (spec 6.2). */
export interface OutboxStats {
  backlog: number;
  oldestAgeMs: number | null;
  consecutiveFailures: number;
  lastError?: string;
}

/**
 * The transactional outbox (spec 6.2) of a broker stream (NATS): envelopes are written in the same
 * SQLite transaction as the rows they describe ({@link Outbox.enqueue}), then the drainer appends them
 * to the stream right after commit ({@link Outbox.drain}) and deletes them. The built-in SQLite stream
 * needs none (`EventStream.writeInTx` stores the events in that transaction); its outbox only ever holds
 * what an older version left, drained at start. The app's recovery pass (every
 * `SVC_OUTBOX_RECOVERY_MS`, 60 s by default) drains anything left behind by a crash or a stream outage.
 *
 * Delivery is at-least-once in commit order: a crash between append and delete re-appends the same
 * ids, which the stream ignores. An envelope the stream rejects stays in the outbox with its attempt
 * count and error; after {@link DEGRADED_AFTER} consecutive failures the status is degraded.
 */
export class Outbox {
  static readonly DEGRADED_AFTER = 3;
  /** A stream append that takes longer than this counts as failed (the batch is retried; ids de-duplicate). */
  static readonly APPEND_TIMEOUT_MS = 5000;
  /** One drain at a time; a drain asked for while one runs gets one more pass (no lost wake-up). */
  private readonly pass = new SerialPass(() => this.drainAll(), {
    stopped: () => false,
    onError: (err) => this.log.warn({ err }, "outbox drain failed; envelopes stay durable and will be retried"),
  });
  private failures = 0;
  private lastError: string | undefined;

  constructor(
    private readonly db: Database,
    private readonly stream: EventStream,
    private readonly log: Logger,
    private readonly batchSize = 500,
  ) {}

  /** Rows per multi-row INSERT of {@link Outbox.enqueue} (3 parameters each, well under SQLite's 999). */
  static readonly INSERT_ROWS = 100;

  /** Writes envelopes into the outbox inside the caller's transaction, in order: one INSERT per {@link Outbox.INSERT_ROWS}. */
  async enqueue(tx: SqlWriter, envelopes: readonly DomainEventEnvelope[]): Promise<void> {
    const now = new Date().toISOString();
    for (let i = 0; i < envelopes.length; i += Outbox.INSERT_ROWS) {
      const chunk = envelopes.slice(i, i + Outbox.INSERT_ROWS);
      // rows of one INSERT take rowids (seq) in the order of its VALUES
      await tx.run(`INSERT INTO outbox (event_id, envelope, created_at) VALUES ${chunk.map(() => "(?, ?, ?)").join(", ")}`, chunk.flatMap((e) => [e.id, JSON.stringify(e), now]));
    }
  }

  /**
   * Appends everything in the outbox to the stream, in order, then removes it. Concurrent calls share
   * one drain; a call made while a drain runs schedules one more pass so nothing committed is left.
   * Never throws: failures are counted and logged, and the rows stay for the next pass.
   */
  drain(): Promise<void> {
    return this.pass.poke();
  }

  private async drainAll(): Promise<void> {
    for (;;) {
      const rows = await this.db.all<{ seq: number; envelope: string }>("SELECT seq, envelope FROM outbox ORDER BY seq LIMIT ?", [this.batchSize]);
      if (rows.length === 0) return;
      let deleted = false;
      try {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the event stream did not accept the batch within ${Outbox.APPEND_TIMEOUT_MS} ms`)), Outbox.APPEND_TIMEOUT_MS);
        });
        try {
          const envelopes = rows.map((r) => JSON.parse(r.envelope) as DomainEventEnvelope);
          const last = rows[rows.length - 1]!.seq;
          // a stream in this database takes the delete into its append's transaction (one commit per batch)
          const { writeInTx } = this.stream;
          const appended = writeInTx
            ? this.db
                .transaction(async (tx) => {
                  await writeInTx.call(this.stream, tx, envelopes);
                  await tx.run("DELETE FROM outbox WHERE seq <= ?", [last]);
                })
                .then(() => true)
            : this.stream.append(envelopes).then(() => false);
          appended.catch(() => undefined); // after the deadline its failure is this pass's, already counted
          deleted = await Promise.race([appended, deadline]);
        } finally {
          clearTimeout(timer);
        }
      } catch (err) {
        this.failures++;
        this.lastError = err instanceof Error ? err.message : String(err);
        this.log.warn({ err, failures: this.failures, backlog: rows.length }, "outbox drain failed; envelopes stay durable and will be retried");
        const first = rows[0]!.seq;
        await this.db.transaction((tx) => tx.run("UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE seq = ?", [this.lastError!, first])).catch(() => undefined);
        return;
      }
      this.failures = 0;
      this.lastError = undefined;
      if (!deleted) {
        const last = rows[rows.length - 1]!.seq;
        await this.db.transaction((tx) => tx.run("DELETE FROM outbox WHERE seq <= ?", [last]));
      }
      if (rows.length < this.batchSize) return;
    }
  }

  /** Backlog size, age of the oldest envelope and the failure streak. */
  async stats(): Promise<OutboxStats> {
    const row = await this.db.get<{ n: number; oldest: string | null }>("SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox");
    return {
      backlog: row?.n ?? 0,
      oldestAgeMs: row?.oldest ? Date.now() - Date.parse(row.oldest) : null,
      consecutiveFailures: this.failures,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
