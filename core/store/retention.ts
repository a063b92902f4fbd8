import type { SqlWriter } from "./db";

/**
 * Retention for an append-only table keyed by `seq` with an `appended_at` (epoch ms) column: deletes
 * every row up to the newest one older than `cutoffMs` and records that position under `metaKey`, so
 * cursors at or before it can be answered `cursor_expired`. Runs inside the caller's transaction; the
 * caller moves its in-memory mark only after the commit.
 *
 * @param table a fixed table name of ours (never input)
 * @returns the pruned position and the rows deleted, or undefined when nothing was old enough
 */
export async function pruneBefore(tx: SqlWriter, table: "events" | "logs", metaKey: string, cutoffMs: number): Promise<{ through: number; changes: number } | undefined> {
  const row = await tx.get<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM ${table} WHERE appended_at < ?`, [cutoffMs]);
  if (!row?.seq) return undefined;
  const { changes } = await tx.run(`DELETE FROM ${table} WHERE seq <= ?`, [row.seq]);
  await tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [metaKey, String(row.seq)]);
  return { through: row.seq, changes };
}
