import type { SqlWriter } from "./db";

/**
 * Retention for an append-only table keyed by `seq` with an `appended_at` (epoch ms) column (the event
 * log, spec 2.7, and handler logs, spec 2.5): deletes the rows before the oldest one appended at or
 * after `cutoffMs`, in `seq` order, and records the last deleted `seq` under `metaKey`, so cursors at
 * or before it can be answered `cursor_expired`. Runs inside the caller's transaction; the caller moves
 * its in-memory mark only after the commit.
 *
 * Rows are appended in `seq` order with the clock's time, so `appended_at` grows with `seq` and the
 * boundary is found by reading from the oldest row on (no index on `appended_at`: it cost every
 * append a page write). If the clock ever stepped back, a row stamped earlier than one before it is
 * kept until the rows before it go: retention never deletes a row younger than `cutoffMs`.
 *
 * @param table a fixed table name of ours (never input)
 * @returns the pruned position and the rows deleted, or undefined when nothing was old enough
 */
export async function pruneBefore(tx: SqlWriter, table: "events" | "logs", metaKey: string, cutoffMs: number): Promise<{ through: number; changes: number } | undefined> {
  // the scan in seq (rowid) order stops at the first young row; MAX below it is a rowid lookup
  const row = await tx.get<{ seq: number | null }>(
    `SELECT MAX(seq) AS seq FROM ${table} WHERE seq < COALESCE((SELECT seq FROM ${table} WHERE appended_at >= ? ORDER BY seq LIMIT 1), 9223372036854775807)`,
    [cutoffMs],
  );
  if (!row?.seq) return undefined;
  const { changes } = await tx.run(`DELETE FROM ${table} WHERE seq <= ?`, [row.seq]);
  await tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [metaKey, String(row.seq)]);
  return { through: row.seq, changes };
}
