import fs from "node:fs";
import path from "node:path";
import sqlite3 from "sqlite3";
import { ConfigError, dataDirError } from "../config";
import { errorCode } from "../errors";
import { openConnection, type Connection } from "./sql";

/** The staging directory of a restore (core/store/restore.ts): `.restoring` inside an existing data directory, `.<name>.restoring` beside a new one. */
export const RESTORING_DIR = ".restoring";

/**
 * One service process per data directory (README, "Data"): two processes over one `svc.db` would each
 * run what the other runs (an action resent to both ran twice, each with its own `action.requested`),
 * and each would take the other's Temporal dev server for a leftover to stop. A process holds this lock
 * from before its Temporal dev server starts until it has stopped.
 *
 * The lock is SQLite's own: a connection to `<dataDir>/svc.lock` in `locking_mode = EXCLUSIVE` that has
 * written once keeps its exclusive file lock until it is closed, and the operating system drops it when
 * the process ends however it ends (kill -9 included), so there is no stale lock to clean up. The
 * holder's pid is written beside it (`svc.lock.pid`) for the refusal's message. The CLI (`npm run svc`)
 * takes no lock: it is meant to run beside the service.
 */
export class DataDirLock {
  private constructor(private readonly connection: Connection, private readonly pidFile: string) {}

  /**
   * Takes the lock of `dataDir` (created if needed).
   * @throws {ConfigError} `SVC_DATA_DIR` when another process (or another app of this one) holds it,
   *   when the directory cannot be used (a file in its place, no permission: {@link dataDirError}), or
   *   when it holds a restore cut short (`.restoring`: core/store/restore.ts)
   */
  static async acquire(dataDir: string): Promise<DataDirLock> {
    // a restore into it was cut short while it moved the backup's files in: it holds part of a backup
    if (fs.existsSync(path.join(dataDir, RESTORING_DIR))) {
      throw new ConfigError("SVC_DATA_DIR", `${dataDir} holds ${RESTORING_DIR}: a restore into it (npm run svc -- restore) was cut short, so it holds part of a backup; empty it and restore again`);
    }
    const file = path.join(dataDir, "svc.lock");
    const pidFile = `${file}.pid`;
    let connection: Connection;
    try {
      fs.mkdirSync(dataDir, { recursive: true });
      connection = await openConnection(file, sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE);
    } catch (err) {
      throw dataDirError(err, dataDir);
    }
    try {
      await connection.exec("PRAGMA busy_timeout = 0; PRAGMA locking_mode = EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER); DELETE FROM holder; INSERT INTO holder (pid) VALUES (" + process.pid + ");");
    } catch (err) {
      await connection.close().catch(() => undefined);
      if (errorCode(err) !== "SQLITE_BUSY") throw dataDirError(err, dataDir);
      let holder = "";
      try {
        holder = ` (pid ${fs.readFileSync(pidFile, "utf8").trim()})`;
      } catch {
        // no pid written yet
      }
      throw new ConfigError("SVC_DATA_DIR", `${dataDir} is in use by another svc process${holder}: one service process per data directory; stop that one, or give this one its own SVC_DATA_DIR`);
    }
    fs.writeFileSync(pidFile, String(process.pid));
    return new DataDirLock(connection, pidFile);
  }

  /** Gives the lock up (idempotent in effect: a second call finds the connection closed and does nothing more). */
  async release(): Promise<void> {
    try {
      if (fs.readFileSync(this.pidFile, "utf8") === String(process.pid)) fs.rmSync(this.pidFile, { force: true });
    } catch {
      // already gone
    }
    await this.connection.close().catch(() => undefined);
  }
}
