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
