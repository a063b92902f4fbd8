import path from "node:path";
import { Database } from "../core/store/db";
import { tempDir } from "./helpers-fs";

/** The databases {@link closedAfterTest} was given and {@link closeOpenedDatabases} has not closed yet. */
const opened: Database[] = [];

/** Answers `db`, which {@link closeOpenedDatabases} closes (in `afterEach`). */
export function closedAfterTest(db: Database): Database {
  opened.push(db);
  return db;
}

/**
 * A store (`Database.open` on a fresh file) with `ddl` applied. `oneGroup`: the group commit's window
 * widened from 5 ms to 10 s, for tests whose callers, queued in one tick, must share one group also on
 * a loaded machine (a caller that awaits a statement can take longer than 5 ms there, and the next
 * caller then starts a group). Close it with {@link closeOpenedDatabases} (in `afterEach`).
 */
export async function openWithTable(ddl: string[], { oneGroup = false } = {}): Promise<Database> {
  const db = closedAfterTest(await Database.open(path.join(tempDir("svc-db-"), "svc.db"), oneGroup ? { groupMs: 10_000 } : {}));
  await db.transaction(async (tx) => {
    for (const sql of ddl) await tx.run(sql);
  });
  return db;
}

/** Closes every store {@link openWithTable} opened or {@link closedAfterTest} was given. */
export async function closeOpenedDatabases(): Promise<void> {
  for (const db of opened.splice(0)) await db.close();
}
