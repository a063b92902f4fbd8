import type { SqlWriter } from "./db";

/** How far past now a row's `appended_at` may be and still count as its time (ms); see {@link pruneBefore}. */
export const CLOCK_SLACK_MS = 60_000;

/**
 * The query {@link pruneBefore} finds its boundary with: the newest `seq` below the first row, in `seq`
 * order, appended at or after the cutoff (`?1`) and not after `?2` (now plus {@link CLOCK_SLACK_MS}). The
 * inner scan goes in rowid order from the oldest row and stops at that row; the outer MAX is a rowid
 * lookup. Exported for its query-plan test.
 */
export function pruneBoundarySql(table: "events" | "logs"): string {
  return `SELECT MAX(seq) AS seq FROM ${table} WHERE seq < COALESCE((SELECT seq FROM ${table} WHERE appended_at >= ?1 AND appended_at <= ?2 ORDER BY seq LIMIT 1), 9223372036854775807)`;
}

/**
 * Retention for an append-only table keyed by `seq` with an `appended_at` (epoch ms) column (the event
 * stream, spec 6.2, and handler logs, spec 2.5): deletes the rows before the oldest one appended at or
 * after `cutoffMs`, in `seq` order, and records the last deleted `seq` under `metaKey`, so cursors at
 * or before it can be answered `cursor_expired`. Runs inside the caller's transaction; the caller moves
 * its in-memory mark only after the commit.
 *
 * Rows are appended in `seq` order with the clock's time, so `appended_at` grows with `seq` and the
 * boundary is found by reading from the oldest row on (no index on `appended_at`: it cost every
 * append a page write). Where the clock jumped:
 * - back: a row stamped earlier than one before it is kept until the rows before it go (retention never
 *   deletes a row younger than `cutoffMs`);
 * - forward, then was set right: a row stamped more than {@link CLOCK_SLACK_MS} after `nowMs` does not
 *   hold retention up (else nothing after it would go until the clock caught up with its stamp); it
 *   goes with the rows around it.
 *
 * @param table a fixed table name of ours (never input)
 * @param cutoffMs epoch ms: rows appended before it go
 * @param nowMs epoch ms, the clock now (tests pass their own)
 * @returns the pruned position and the rows deleted, or undefined when nothing was old enough
 */
export async function pruneBefore(tx: SqlWriter, table: "events" | "logs", metaKey: string, cutoffMs: number, nowMs = Date.now()): Promise<{ through: number; changes: number } | undefined> {
  const row = await tx.get<{ seq: number | null }>(pruneBoundarySql(table), [cutoffMs, nowMs + CLOCK_SLACK_MS]);
  if (!row?.seq) return undefined;
  const { changes } = await tx.run(`DELETE FROM ${table} WHERE seq <= ?`, [row.seq]);
  await tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [metaKey, String(row.seq)]);
  return { through: row.seq, changes };
}
