/**
 * Upgrades of existing data: a database file left at an older migration (built here by applying the
 * migration files up to it, as an older release did) is opened by the current `Database.open`.
 */
import fs from "node:fs";
import path from "node:path";
import sqlite3 from "sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { Database } from "./db";
import { MIGRATIONS_TABLE, migrations } from "./schema-migrations";
import { openConnection } from "./sql";
import { tempDir } from "../../test/helpers-fs";

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

/** A database file at migration `through` (inclusive), with `seed` run on it, as an older release left it. */
async function fileAt(through: number, seed: string): Promise<string> {
  const file = path.join(tempDir("svc-migrations-"), "svc.db");
  const conn = await openConnection(file, sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE);
  await conn.exec(MIGRATIONS_TABLE);
  for (const { version, name, path: sql } of migrations().filter((m) => m.version <= through)) {
    await conn.exec(`BEGIN; ${fs.readFileSync(sql, "utf8")}; INSERT INTO schema_migrations VALUES (${version}, '${name}', '2026-01-01T00:00:00.000Z'); COMMIT;`);
  }
  await conn.exec(seed);
  await conn.close();
  return file;
}

describe("migrations", () => {
  it("016 rebuilds webhook_runs without the UNIQUE index on execution_id, keeping every run and the key's uniqueness", async () => {
    const file = await fileAt(
      15,
      `INSERT INTO webhook_runs (id, execution_id, connector_id, webhook_id, idempotency_key, status, attempts, received_at, finished_at, content_type, headers, body, response, replay_of) VALUES
        ('whrun_1', 'exec_1', 'stripe', 'events', 'evt_a', 'completed', 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z', 'application/json', '{}', x'7b7d', '{"status":202,"headers":{}}', NULL),
        ('whrun_2', 'exec_2', 'stripe', 'events', NULL, 'running', 2, '2026-01-02T00:00:00.000Z', NULL, NULL, '{}', x'00ff', NULL, 'whrun_1');`,
    );
    const db = await Database.open(file);
    opened.push(db);
    const rows = await db.all<Record<string, unknown>>("SELECT * FROM webhook_runs ORDER BY id");
    expect(rows).toEqual([
      { id: "whrun_1", execution_id: "exec_1", connector_id: "stripe", webhook_id: "events", idempotency_key: "evt_a", status: "completed", attempts: 1, received_at: "2026-01-01T00:00:00.000Z", finished_at: "2026-01-01T00:00:01.000Z", content_type: "application/json", headers: "{}", body: Buffer.from("{}"), response: '{"status":202,"headers":{}}', replay_of: null, query: null },
      { id: "whrun_2", execution_id: "exec_2", connector_id: "stripe", webhook_id: "events", idempotency_key: null, status: "running", attempts: 2, received_at: "2026-01-02T00:00:00.000Z", finished_at: null, content_type: null, headers: "{}", body: Buffer.from([0, 255]), response: null, replay_of: "whrun_1", query: null },
    ]);
    const indexes = await db.all<{ name: string; unique: number }>("SELECT name, \"unique\" FROM pragma_index_list('webhook_runs') ORDER BY name");
    expect(indexes.map((i) => [i.name, i.unique])).toEqual([["sqlite_autoindex_webhook_runs_1", 1], ["webhook_runs_by_key", 1]]);
    const insert = (id: string, key: string) => db.transaction((tx) => tx.run("INSERT INTO webhook_runs (id, execution_id, connector_id, webhook_id, idempotency_key, status, attempts, received_at, headers, body) VALUES (?, 'exec_x', 'stripe', 'events', ?, 'running', 1, 'now', '{}', x'')", [id, key]));
    await insert("whrun_3", "evt_b");
    await expect(insert("whrun_4", "evt_a")).rejects.toThrow(/UNIQUE constraint failed/);
  });

  it("015 gives a dataset transaction open across the upgrade a full idle period from the upgrade; finished versions keep no touched_at", async () => {
    const file = await fileAt(
      14,
      `INSERT INTO dataset_versions (dataset_id, version, transaction_type, status, row_count, source, opened_at, committed_at, aborted_at) VALUES
        ('prices', 1, 'snapshot', 'committed', 2, '{"kind":"http"}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z', NULL),
        ('prices', 2, 'append', 'aborted', 0, '{"kind":"http"}', '2026-01-02T00:00:00.000Z', NULL, '2026-01-02T00:10:00.000Z'),
        ('prices', 3, 'append', 'open', 1, '{"kind":"http"}', '2026-01-03T00:00:00.000Z', NULL, NULL);`,
    );
    const before = Date.now();
    const db = await Database.open(file);
    opened.push(db);
    const after = Date.now();
    const rows = await db.all<{ version: number; opened_at: string; touched_at: string | null }>("SELECT version, opened_at, touched_at FROM dataset_versions ORDER BY version");
    expect(rows.map((r) => [r.version, r.touched_at === null])).toEqual([
      [1, true],
      [2, true],
      [3, false],
    ]);
    // the open one: the upgrade's time (ISO with milliseconds), not its long-past opened_at
    const open = rows[2]!;
    expect(open.touched_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(open.touched_at!)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(Date.parse(open.touched_at!)).toBeLessThanOrEqual(after);
    expect(open.opened_at).toBe("2026-01-03T00:00:00.000Z");
    expect((await db.all<{ version: number }>("SELECT version FROM schema_migrations WHERE version >= 14 ORDER BY version")).map((r) => r.version)).toContain(15);
  });
});
