/** The store's numbered schema migrations, applied by {@link Database.open} (core/store/db.ts). */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

/** The table that records which migrations a database file has had. */
export const MIGRATIONS_TABLE = "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)";

/**
 * The numbered migrations (`core/store/migrations/NNN_name.sql`) in order: `version` is NNN, `name` the
 * file name, `path` where to read its SQL. {@link Database.open} applies those a file has not had.
 */
export function migrations(): Array<{ version: number; name: string; path: string }> {
  return fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((name) => ({ version: Number.parseInt(name, 10), name, path: path.join(MIGRATIONS_DIR, name) }));
}
