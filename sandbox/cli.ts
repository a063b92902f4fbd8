/**
 * The sandbox's command line: `npm run svc -- <command>`.
 *
 *   tokens create --identity <id> [--name <name>] [--expires-in <n>d|<n>h]
 *                                                   create an API token (printed once), working until
 *                                                   revoked, or for that many days or hours
 *   tokens list                                     list tokens (never their secrets): expiry, last use
 *   tokens revoke <tokenId>                         revoke a token
 *   identities                                      list identities and their permissions
 *   payload-keys [list]                             the Temporal payload keys' ids: current and retired
 *   payload-keys rotate                             retire the current key, make a new one (next start)
 *   backup <dir>                                    back the data directory up into a new directory (running or not)
 *   restore <dir> [--check]                         restore a backup into the data directory (new or empty);
 *                                                   --check: only check the backup (read-only)
 *
 * Works on the same data directory as the server (SVC_DATA_DIR, default sandbox/.data: the same for
 * `npm start` and the compiled `npm run start:prod`), running or not. The tokens and payload-keys
 * commands refuse a data directory that holds no svc database (a misspelt SVC_DATA_DIR), rather than
 * make an empty one.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { databaseFile } from "../core/config";
import { Database } from "../core/store/db";
import { TokenService, tokenState, type TokenInfo } from "../core/auth/tokens";
import { ProjectRegistry } from "../core/project/registry";
import { openPayloadKeys, PAYLOAD_KEY_FILE, payloadKeyId, RETIRED_PAYLOAD_KEYS_DIR, rotatePayloadKey } from "../core/temporal/payload-keys";
import { backupDataDir } from "../core/store/backup";
import { BackupCheckFailed, checkBackup, restoreDataDir, type BackupCheck } from "../core/store/restore";
import { fileStorageConfigFromEnv } from "../core/files/config";
import { SANDBOX_DATA_DIR, sandboxProject } from "./project";

const USAGE = `usage: npm run svc -- tokens create --identity <id> [--name <name>] [--expires-in <n>d|<n>h]
       npm run svc -- tokens list
       npm run svc -- tokens revoke <tokenId>
       npm run svc -- identities
       npm run svc -- payload-keys [list | rotate]
       npm run svc -- backup <dir>
       npm run svc -- restore <dir> [--check]`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { identity: { type: "string" }, name: { type: "string" }, "expires-in": { type: "string" }, check: { type: "boolean" }, help: { type: "boolean", short: "h" } } });
  const [group, command, arg] = positionals;
  const registry = new ProjectRegistry(sandboxProject);
  if (values.help || !group) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  if (group === "identities") {
    for (const [id, identity] of Object.entries(sandboxProject.identities)) {
      console.log(`${id} (${identity.type}${identity.name ? `, ${identity.name}` : ""})\n  ${[...registry.identityPermissions(id)!].join("\n  ")}`);
    }
    return 0;
  }
  if (group === "restore") return restore(path.resolve(process.env.SVC_DATA_DIR || SANDBOX_DATA_DIR), command, positionals.length > 2, values.check === true);
  if (group !== "tokens" && group !== "payload-keys" && group !== "backup") {
    console.error(`unknown command "${group}"\n${USAGE}`);
    return 2;
  }
  const dataDir = path.resolve(process.env.SVC_DATA_DIR || SANDBOX_DATA_DIR);
  if (!fs.existsSync(databaseFile(dataDir))) {
    const which = process.env.SVC_DATA_DIR ? `SVC_DATA_DIR ${dataDir}` : `the default data dir ${dataDir} (SVC_DATA_DIR is unset)`;
    console.error(`${which} holds no svc database (${path.basename(databaseFile(dataDir))}): start the service on it once (npm start), or set SVC_DATA_DIR to the data dir the service uses`);
    return 2;
  }
  if (group === "payload-keys") return payloadKeys(dataDir, command, positionals.length > 2);
  if (group === "backup") return backup(dataDir, command, positionals.length > 2);
  const db = await Database.open(databaseFile(dataDir));
  const tokens = new TokenService(db, registry);
  try {
    switch (command) {
      case "create": {
        if (!values.identity) {
          console.error(`--identity is required; identities: ${Object.keys(sandboxProject.identities).join(", ")}`);
          return 2;
        }
        let expiresInMs: number | undefined;
        if (values["expires-in"] !== undefined) {
          const m = /^(\d+)([dh])$/.exec(values["expires-in"].trim());
          if (!m || Number(m[1]) < 1) {
            console.error(`--expires-in takes a number of days or hours, such as 90d or 12h (got ${JSON.stringify(values["expires-in"])})`);
            return 2;
          }
          expiresInMs = Number(m[1]) * (m[2] === "d" ? 86_400_000 : 3_600_000);
        }
        const { token, info } = await tokens.create(values.identity, values.name ?? values.identity, { expiresInMs });
        console.log(`Created token ${info.id} for identity "${info.identityId}", ${info.expiresAt ? `working until ${info.expiresAt}` : "working until revoked"}. It is shown only now:\n\n  ${token}\n`);
        return 0;
      }
      case "list":
        {
          const state = (t: TokenInfo) => ({ revoked: `revoked ${t.revokedAt}`, expired: `expired ${t.expiresAt}`, active: t.expiresAt ? `expires ${t.expiresAt}` : "active" })[tokenState(t)];
          console.log(`${"ID".padEnd(30)}  ${"IDENTITY".padEnd(10)} ${"NAME".padEnd(14)} ${"CREATED".padEnd(24)} ${"LAST USED (hour)".padEnd(24)} STATE`);
          // a name made over HTTP is the user's text: no control characters reach the terminal
          const shown = (name: string) => name.replace(/\p{Cc}/gu, "?");
          for (const t of await tokens.list()) console.log(`${t.id}  ${t.identityId.padEnd(10)} ${shown(t.name).padEnd(14)} ${t.createdAt.padEnd(24)} ${(t.lastUsedAt ?? "never").padEnd(24)} ${state(t)}`);
        }
        return 0;
      case "revoke":
        if (!arg) {
          console.error("usage: npm run svc -- tokens revoke <tokenId>");
          return 2;
        }
        if (!(await tokens.revoke(arg))) {
          console.error(`no active token ${arg}`);
          return 1;
        }
        console.log(`revoked ${arg} (running servers stop accepting it within 10 s)`);
        return 0;
      default:
        console.error(USAGE);
        return 2;
    }
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  } finally {
    await db.close();
  }
}

/**
 * `backup <dir>`: backs the data directory up into `dir` (core/store/backup.ts), printing each step
 * and what the backup holds. Exit 0: done; 1: it failed (the directory is no backup: no backup.json);
 * 2: usage; 3: done, with a warning (files deleted meanwhile, interventions answered meanwhile).
 */
async function backup(dataDir: string, dest: string | undefined, extra: boolean): Promise<number> {
  if (!dest || extra) {
    console.error("usage: npm run svc -- backup <dir>   (a new or empty directory outside the data directory)");
    return 2;
  }
  try {
    const storage = fileStorageConfigFromEnv(process.env, dataDir).kind;
    // `npm run` runs this in the package's directory: a relative <dir> is the caller's, where npm was run (INIT_CWD)
    const into = path.resolve(process.env.INIT_CWD ?? process.cwd(), dest);
    console.log(`backing up ${dataDir} into ${into}`);
    const r = await backupDataDir(dataDir, into, { blobStorage: storage, progress: (line) => console.log(`  ${line}`) });
    console.log(`done in ${took(r.tookMs)}: the backup's point in time is ${r.takenAt}`);
    console.log(`  temporal.db: ${r.temporal === "copied" ? "copied" : "none here (an external Temporal cluster keeps its own state: back it up there)"}`);
    if (r.runsToStartAgain) console.log(`  ${r.runsToStartAgain} run(s) requested around the Temporal snapshot: the restored service starts them again (or finds them started)`);
    if (r.interventionsResolvedBetweenSnapshots) console.error(`warning: ${r.interventionsResolvedBetweenSnapshots} intervention(s) were answered or cancelled while the snapshots were taken: the restored Temporal may still wait for them (take the backup again to be sure)`);
    if (r.blobs.storage === "s3") console.log("  file bytes: in the S3 bucket, not copied (back the bucket up with versioning or replication)");
    else console.log(`  file bytes: ${r.blobs.copied} blob(s), ${(r.blobs.bytes / 1048576).toFixed(1)} MiB`);
    console.log(`  payload keys: ${r.payloadKeys}`);
    console.log("  restore: npm run svc -- restore <dir> into a new or empty SVC_DATA_DIR, then start the service on it (README \"Backup and restore\")");
    if (r.blobs.storage === "local" && r.blobs.missing.length) {
      console.error(`warning: ${r.blobs.missing.length} file(s) were deleted while the backup ran; their bytes are not in it: ${r.blobs.missing.slice(0, 5).join(", ")}${r.blobs.missing.length > 5 ? ", …" : ""}`);
    }
    // 3: complete, with a warning above (1 is a backup that failed)
    return (r.blobs.storage === "local" && r.blobs.missing.length) || r.interventionsResolvedBetweenSnapshots ? 3 : 0;
  } catch (err) {
    console.error(`backup failed: ${(err as Error).message}`);
    return 1;
  }
}

/** A wall time for a person: ms under a second, else seconds with one decimal. */
function took(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * `restore <dir>`: restores the backup in `dir` into the data directory, which must not exist yet or be
 * empty (core/store/restore.ts); `restore <dir> --check` only checks the backup. Prints each step and
 * what was found. Exit 0: done (or the backup is whole); 1: it failed, or the backup has problems
 * (nothing was written); 2: usage; 3: done, with a warning (files whose bytes the backup lacks).
 */
async function restore(dataDir: string, backupDir: string | undefined, extra: boolean, checkOnly: boolean): Promise<number> {
  if (!backupDir || extra) {
    console.error("usage: npm run svc -- restore <dir> [--check]   (<dir>: a backup; it is restored into SVC_DATA_DIR, new or empty)");
    return 2;
  }
  try {
    const storage = fileStorageConfigFromEnv(process.env, dataDir).kind;
    const from = path.resolve(process.env.INIT_CWD ?? process.cwd(), backupDir);
    const step = (line: string) => console.log(`  ${line}`);
    let check: BackupCheck;
    if (checkOnly) {
      console.log(`checking the backup ${from}`);
      check = await checkBackup(from, { blobStorage: storage, progress: step });
      if (check.problems.length) throw new BackupCheckFailed(check);
    } else {
      console.log(`restoring ${from} into ${dataDir}`);
      const r = await restoreDataDir(from, dataDir, { blobStorage: storage, progress: step });
      check = r.check;
      console.log(`done in ${took(r.tookMs)}`);
    }
    const m = check.manifest;
    console.log(`the backup of ${m.from}, its point in time ${m.takenAt}${checkOnly ? ", is whole" : ""}:`);
    console.log(`  svc.db: ok`);
    console.log(`  temporal.db: ${check.temporal === "ok" ? "ok" : "none in the backup (the service's Temporal, TEMPORAL_ADDRESS, keeps the runs' state)"}`);
    if (check.blobs.storage === "s3") console.log("  file bytes: in the S3 bucket (not in the backup)");
    else console.log(`  file bytes: ${check.blobs.checked} blob(s), ${(check.blobs.bytes / 1048576).toFixed(1)} MiB, each matching its SHA-256`);
    console.log(`  payload keys: ${check.payloadKeys}`);
    if (!checkOnly) console.log(`  start the service on ${dataDir}: its first start gives the event stream a new epoch (cursors given out before are refused)`);
    for (const w of check.warnings) console.error(`warning: ${w}`);
    return check.warnings.length ? 3 : 0;
  } catch (err) {
    if (err instanceof BackupCheckFailed) {
      console.error(`the backup ${err.check.dir} cannot be restored${checkOnly ? "" : " (nothing was written)"}:`);
      for (const p of err.check.problems) console.error(`  ${p}`);
      return 1;
    }
    console.error(`restore failed: ${(err as Error).message}`);
    return 1;
  }
}

/**
 * `payload-keys`: prints the ids of the Temporal payload keys (core/temporal/payload-keys.ts);
 * `payload-keys rotate` retires the current one and makes a new one.
 */
function payloadKeys(dataDir: string, command: string | undefined, extra: boolean): number {
  if (extra || (command !== undefined && command !== "list" && command !== "rotate")) {
    console.error("usage: npm run svc -- payload-keys [list | rotate]");
    return 2;
  }
  try {
    if (command === "rotate") {
      const { retired, current } = rotatePayloadKey(dataDir);
      console.log(`Retired key ${retired} (kept in ${path.join(dataDir, RETIRED_PAYLOAD_KEYS_DIR)}, it still reads what it encrypted); new key ${current} in ${path.join(dataDir, PAYLOAD_KEY_FILE)}. A running service encrypts with the new key from its next start. Back up both with the data directory.`);
      return 0;
    }
    if (!fs.existsSync(path.join(dataDir, PAYLOAD_KEY_FILE))) {
      console.error(`${dataDir} has no ${PAYLOAD_KEY_FILE} yet: the service writes it at its first start with Temporal`);
      return 1;
    }
    const keys = openPayloadKeys(dataDir);
    console.log(`current  ${payloadKeyId(keys.current)}  ${path.join(dataDir, PAYLOAD_KEY_FILE)}`);
    for (const { key, file } of keys.retired) console.log(`retired  ${payloadKeyId(key)}  ${file}`);
    if (keys.laxFiles.length) console.error(`warning: other users than their owner may read or write ${keys.laxFiles.join(", ")}: chmod 600 them`);
    return 0;
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
