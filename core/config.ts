import * as v from "valibot";
import path from "node:path";
import type { InjectionToken } from "./di";
import { defaultChromiumPath } from "./artifacts/chromium";
import { errorCode } from "./errors";
import { asPublicOrigin, basePathOf } from "./files/download-urls";

/**
 * Runtime configuration, read from the environment once at startup and validated with valibot.
 * A bad value stops startup with a message naming the variable (see {@link ConfigError}).
 *
 * | Variable | Default | Meaning |
 * |---|---|---|
 * | `PORT` | 3002 | HTTP port (0 picks a free one) |
 * | `HOST` | 127.0.0.1 | interface to bind |
 * | `LOG_LEVEL` | info | pino level |
 * | `SVC_DATA_DIR` | the project's default (sandbox: `sandbox/.data`) | SQLite files, Temporal dev server DB, local blobs and upload sessions; one service process per directory: a second is refused at start (`core/store/data-dir-lock.ts`) |
 * | `SVC_DEV_TOKEN` | none (the sandbox sets `svc_dev_sandbox_token`) | development token with every permission (at least 16 characters); `none`: no development token, and one stored by an earlier start is revoked. A revoked development token stays revoked at later starts |
 * | `SVC_API_PUBLIC_ORIGIN` | `http://localhost:<PORT>` | public origin used in links and download URLs, with the path prefix when a proxy serves the service under one (`https://example.com/svc`: {@link Config.basePath}, before the pages' links and as the session cookie's Path); with PORT=0, a port 0 in it is the port bound |
 * | `TEMPORAL_ADDRESS` | unset: start the embedded dev server | `host:port` of an existing cluster |
 * | `TEMPORAL_NAMESPACE` | default | namespace on that cluster |
 * | `SVC_TEMPORAL_CLI` | fetched or built into the svc cache | path of an existing `temporal` binary |
 * | `SVC_CACHE_DIR` | `$XDG_CACHE_HOME/svc` (`~/.cache/svc`) | where the fetched or built Temporal CLI is cached (read by `core/temporal/go-install.ts`); an empty directory makes the next start fetch it again |
 * | `SVC_TEMPORAL_PORT` | 7233 | gRPC port of the embedded dev server (at most 64535 while `SVC_TEMPORAL_UI` is on) |
 * | `SVC_TEMPORAL_UI` | true | serve the Temporal UI (gRPC port + 1000) |
 * | `SVC_TEMPORAL_RETENTION_MS` | 2592000000 (30 days) | how long the embedded dev server's namespace keeps a finished run (its Retention Period: its record, history and result are readable that long); set at every start, in whole seconds, at least 1 h. A cluster's namespace keeps its own (`TEMPORAL_ADDRESS`: this is not used) |
 * | `SVC_TASK_QUEUE` | svc | Temporal task queue of this runtime's worker |
 * | `SVC_OUTBOX_RECOVERY_MS` | 60000 | outbox recovery pass interval (spec 8) |
 * | `SVC_RECORD_RUNNING_AFTER_MS` | 20 | an action run or webhook delivery whose handler ends sooner is recorded with its completion (one commit); one that runs longer is recorded `running` on its own commit at this point; 0 records every run as it starts (see `RunRecording`) |
 * | `SVC_EVENT_RETENTION_MS` | 172800000 (2 days) | built-in stream retention (spec 6.2), and how long events' idempotency keys de-duplicate, with any stream (`pruneEventKeys`) |
 * | `SVC_RUN_RETENTION_MS` | 2592000000 (30 days) | how long an ended action run (without an effect) and webhook delivery (with its raw body), an ended workflow, sync or pipeline run's row (at least a day past Temporal's retention) and an expired download URL are kept, and so how long `runId`s and delivery keys de-duplicate (`core/store/run-retention.ts`); at least 1 h, and at least `SVC_EVENT_RETENTION_MS` |
 * | `SVC_SHUTDOWN_TIMEOUT_MS` | 30000 | how long shutdown waits for in-flight work |
 * | `SVC_SESSION_TTL_MS` | 28800000 (8 h) | browser session lifetime, renewed on HTTP use |
 * | `SVC_ALLOWED_ORIGINS` | the public origin, http://localhost:<PORT>, http://127.0.0.1:<PORT> | comma-separated browser origins allowed to use sessions, and whose pages may call the API across origins (CORS with credentials, `core/http/cors.ts`) |
 * | `SVC_WS_MAX_BUFFERED_BYTES` | 4194304 (4 MiB) | a WebSocket whose unsent data passes this is closed (4008, slow consumer) |
 * | `SVC_WS_CHECKPOINT_MS` | 10000 | `/ws/events`: a `checkpoint` frame past skipped events comes at most this often after the socket's last frame |
 * | `SVC_ACCESS_LOG` | false | one info log line per HTTP request (method, path with secrets masked, status, ms, client address, identity) |
 * | `SVC_EVENT_STREAM` | sqlite | `sqlite` (built-in) or `nats` (NATS JetStream broker stream) |
 * | `NATS_URL` | nats://127.0.0.1:4222 | NATS server(s) for the broker stream |
 * | `SVC_NATS_STREAM` | SVC_<project id> | JetStream stream name |
 * | `SVC_SCHEDULES` | true | upsert the connectors' schedules on Temporal at startup (false: leave them as they are) |
 * | `SVC_UPLOAD_MAX_BYTES` | 5368709120 (5 GiB) | largest file an upload session (`/api/files/uploads`, tus) accepts |
 * | `SVC_UPLOAD_SESSION_TTL_MS` | 86400000 (24 h) | an unfinished upload session expires this long after its last chunk |
 * | `SVC_FILE_RETENTION_MS` | 86400000 (24 h) | a file never referenced is removed this long after its upload |
 * | `SVC_FILE_STORAGE`, `SVC_S3_*` | local | where file bytes go: see `core/files/config.ts` |
 * | `SVC_DECK_CHECKS` | true | lay out published decks in headless Chromium and warn per slide (spec 4.3); false: publish decks unchecked |
 * | `SVC_CHROMIUM_PATH` | /usr/lib/chromium/chromium-headless-shell when installed, else /usr/bin/chromium | the Chromium the deck checks launch (Debian's `chromium-headless-shell` or `chromium` package) |
 * | `SVC_DECK_CHECK_IDLE_MS` | 600000 (10 min) | the deck-check process and its Chromium exit after this long without a check (the next check starts them again, about a second); 0: they stay up |
 * | `SVC_AGENT_MODEL` | scripted | the agents' model: `scripted` (deterministic, no network), `openai-compatible:<model>` (with `SVC_AGENT_BASE_URL`, `SVC_AGENT_API_KEY`) or `anthropic:<model>` (with `ANTHROPIC_API_KEY`); a provider's model without its base URL or key is refused at start |
 * | `SVC_AGENT_BASE_URL` | unset | the OpenAI-compatible endpoint's base URL, e.g. `http://127.0.0.1:11434/v1`; required with `openai-compatible:<model>` |
 * | `SVC_AGENT_API_KEY` | unset | the key sent to the OpenAI-compatible endpoint; Anthropic's when `ANTHROPIC_API_KEY` is unset |
 * | `ANTHROPIC_API_KEY` | unset | Anthropic's key; `anthropic:<model>` needs it or `SVC_AGENT_API_KEY` |
 * | `SVC_FRAME_LINK_TTL_MS` | 1800000 (30 min) | how long a deck frame's short-lived link works (spec 2.10); reloading the page makes a new one |
 * | `SVC_EVENT_SCHEDULE_MAX_LAG_MS` | 60000 | `/api/status` reports the event schedules unhealthy when an unpaused one's oldest unfinished event is older than this |
 * | `SVC_RUN_START_MAX_AGE_MS` | 60000 | `/api/status` reports run starts unhealthy when a queued workflow, sync or pipeline run has waited longer than this to be started on Temporal |
 * | `SVC_HEAP_GROWING_PERCENT` | 100 | the service process's old-generation heap may grow to (1 + p/100) × what survived the last full GC before the next one (V8's `--heap-growing-percent`, set by the process's start: `sandbox/main.ts`); 0 leaves V8's own factor (up to 4×), which lets RSS climb under steady load; a smaller p keeps RSS lower and costs full GCs in allocation bursts (see `core/heap.ts`) |
 * | `SVC_PROJECTION_CHUNK_ROWS` | 500 | the most dataset rows one projection commit applies (one SQLite transaction each) |
 * | `SVC_DATASET_TRANSACTION_IDLE_MS` | 3600000 (1 h) | an open dataset transaction that received no rows for this long is aborted (when the dataset is next opened, and by a sweep every quarter of it, at most 15 min) |
 * | `SVC_AGENT_OUTPUT_RETENTION_MS` | 604800000 (7 days) | how long agent reply output is kept for `/ws/agents` (spec 6.5 rule 3: older cursors resume from the earliest kept record); at least 1000 |
 */
export interface Config {
  port: number;
  host: string;
  logLevel: string;
  dataDir: string;
  /** The development token (`SVC_DEV_TOKEN`, else the project's default); unset when there is none or it is disabled. */
  devToken?: string;
  /** `SVC_DEV_TOKEN=none`: no development token, and the one an earlier start stored is revoked. */
  devTokenDisabled: boolean;
  publicOrigin: string;
  /** `SVC_API_PUBLIC_ORIGIN` as configured, without trailing slashes (no default): download URLs need it (spec 4.3). */
  apiPublicOrigin?: string;
  /**
   * The path prefix a reverse proxy serves the service under: the path of `SVC_API_PUBLIC_ORIGIN`
   * without its trailing slash (`/svc` for `https://example.com/svc`), `""` when it has none. The proxy
   * strips it before forwarding; the pages put it before every link, script and redirect they make, and
   * the session cookie's `Path` is it.
   */
  basePath: string;
  temporal: {
    address?: string;
    namespace: string;
    cliPath?: string;
    devServerPort: number;
    ui: boolean;
    /** The embedded dev server's namespace retention (ms, whole seconds): how long it keeps a finished run. */
    retentionMs: number;
    taskQueue: string;
  };
  outboxRecoveryMs: number;
  /** ms a handler runs before its run is recorded on its own commit (see `RunRecording`); 0: at once. */
  recordRunningAfterMs: number;
  eventRetentionMs: number;
  /** `SVC_RUN_RETENTION_MS`: how long ended action runs, webhook deliveries, workflow, sync and pipeline runs' rows and spent download URLs are kept (ms; core/store/run-retention.ts). */
  runRetentionMs: number;
  shutdownTimeoutMs: number;
  syncSchedules: boolean;
  sessionTtlMs: number;
  allowedOrigins: string[];
  wsMaxBufferedBytes: number;
  /** `/ws/events`: least ms between a socket's last frame and a `checkpoint` frame (`SVC_WS_CHECKPOINT_MS`). */
  wsCheckpointMs: number;
  /** One info log line per HTTP request (`SVC_ACCESS_LOG`). */
  accessLog: boolean;
  eventStream: "sqlite" | "nats";
  natsUrl: string;
  natsStream?: string;
  /** Largest upload-session file, bytes. */
  uploadMaxBytes: number;
  /** Upload-session expiry after its last chunk, ms. */
  uploadSessionTtlMs: number;
  /** How long a never-referenced file is kept, ms. */
  fileRetentionMs: number;
  /** Whether published decks are laid out and checked in Chromium. */
  deckChecks: boolean;
  /** The Chromium executable of the deck checks. */
  chromiumPath: string;
  /** How long the deck-check process and its browser stay up without a check, ms (0: always). */
  deckCheckIdleMs: number;
  /** How long a deck frame's link works, ms. */
  frameLinkTtlMs: number;
  /** How long agent reply output is retained for `/ws/agents`, ms (spec 6.5 rule 3). */
  agentOutputRetentionMs: number;
  /** The agents' default model (`scripted`, `openai-compatible:<model>`, `anthropic:<model>`). */
  agentModel: string;
  /** The most dataset rows one projection commit applies. */
  projectionChunkRows: number;
  /** An open dataset transaction idle (no open, no rows written) this long is aborted, ms. */
  datasetTransactionIdleMs: number;
  /** Event schedules: lag (ms) above which `/api/status` reports them unhealthy. */
  eventScheduleMaxLagMs: number;
  /** Run starts: how long (ms) a queued run may wait for its Temporal start before `/api/status` reports it unhealthy. */
  runStartMaxAgeMs: number;
  /** V8's old-generation growing percent for the service process (0: V8's own; see `applyHeapGrowingPercent`). */
  heapGrowingPercent: number;
}

/** DI token of the runtime {@link Config}. */
export const CONFIG = Symbol("svc.Config") as InjectionToken<Config>;

/**
 * Thrown when an environment variable has a bad value, or one the service cannot start with (a data dir
 * it cannot use, a port in use, no server at `TEMPORAL_ADDRESS` or `NATS_URL`); `variable` names it.
 * Entry points report it as one line (the sandbox exits 2).
 */
export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`Invalid configuration: ${variable} ${withoutCredentials(message)}`);
    this.name = "ConfigError";
  }
}

/**
 * `text` with the passwords and tokens of the URLs in it masked: `scheme://user:secret@host` becomes
 * `scheme://user:***@host`, and `scheme://token@host` becomes `scheme://***@host` (RFC 3986 userinfo),
 * so a start-up error that names a setting (`NATS_URL=nats://svc:pass@host`) never writes its secret
 * to the log.
 */
export function withoutCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^\s/@"]*)@/gi, (_, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    return `${scheme}${colon >= 0 ? `${userinfo.slice(0, colon)}:***` : "***"}@`;
  });
}

/** How far above `SVC_TEMPORAL_PORT` the embedded dev server serves the Temporal UI (`SVC_TEMPORAL_UI`). */
const TEMPORAL_UI_PORT_OFFSET = 1000;

/** The `SVC_DEV_TOKEN` value that disables the development token (any case). */
export const DEV_TOKEN_NONE = "none";

/** A whole number from `min` to `max` given as an environment variable's text (the number it reads). */
export const intIn = (min: number, max: number) =>
  v.pipe(v.string(), v.trim(), v.regex(/^\d+$/, "must be a whole number"), v.transform(Number), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));
const bool = v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(["true", "false", "1", "0", "yes", "no"], "must be true or false"), v.transform((s) => ["true", "1", "yes"].includes(s)));
const nonEmpty = v.pipe(v.string(), v.trim(), v.minLength(1, "must not be empty"));

/** A path prefix the service accepts ({@link basePathOf}): segments of plain path characters, nothing else (no `;` or `,` for a cookie's Path, no quotes for HTML and JavaScript). */
const BASE_PATH = /^(\/[A-Za-z0-9._~%!*()+@:=-]+)*$/;

const EnvSchema = v.object({
  PORT: v.optional(intIn(0, 65535), "3002"),
  HOST: v.optional(nonEmpty, "127.0.0.1"),
  LOG_LEVEL: v.optional(v.picklist(["trace", "debug", "info", "warn", "error", "fatal", "silent"], "must be one of trace, debug, info, warn, error, fatal, silent"), "info"),
  SVC_DATA_DIR: v.optional(nonEmpty),
  SVC_DEV_TOKEN: v.optional(v.pipe(v.string(), v.trim(), v.check((s) => s.length >= 16 || s.toLowerCase() === DEV_TOKEN_NONE, `must be at least 16 characters (or ${DEV_TOKEN_NONE}: no development token)`))),
  SVC_API_PUBLIC_ORIGIN: v.optional(
    v.pipe(
      v.string(),
      v.url("must be a URL such as https://api.example.com"),
      // a value v.url refused is said once, by v.url
      v.check((s) => !URL.canParse(s) || asPublicOrigin(s) !== undefined, "must be an http(s) origin such as https://api.example.com, or one with the path prefix a proxy serves the API under (https://example.com/svc); no query, fragment or credentials"),
      // the prefix goes into the session cookie's Path and into HTML, JavaScript and CSP: plain path characters only
      v.check((s) => !URL.canParse(s) || asPublicOrigin(s) === undefined || BASE_PATH.test(basePathOf(s)), "its path (the prefix a proxy serves the service under) may hold only letters, digits and - . _ ~ % ! * ( ) + @ : = between slashes"),
      // the origin and its path prefix, without trailing slashes: what links and download URLs are built on
      v.transform((s) => asPublicOrigin(s)!),
    ),
  ),
  TEMPORAL_ADDRESS: v.optional(v.pipe(nonEmpty, v.regex(/^[^\s:]+:\d+$/, "must be host:port"))),
  TEMPORAL_NAMESPACE: v.optional(nonEmpty, "default"),
  SVC_TEMPORAL_CLI: v.optional(nonEmpty),
  SVC_TEMPORAL_PORT: v.optional(intIn(1, 65535), "7233"),
  SVC_TEMPORAL_UI: v.optional(bool, "true"),
  SVC_TEMPORAL_RETENTION_MS: v.optional(v.pipe(intIn(3_600_000, 3650 * 86_400_000), v.check((ms) => ms % 1000 === 0, "must be whole seconds (a multiple of 1000)")), String(30 * 86_400_000)),
  SVC_TASK_QUEUE: v.optional(nonEmpty, "svc"),
  SVC_OUTBOX_RECOVERY_MS: v.optional(intIn(100, 3_600_000), "60000"),
  SVC_RECORD_RUNNING_AFTER_MS: v.optional(intIn(0, 3_600_000), "20"),
  SVC_EVENT_RETENTION_MS: v.optional(intIn(1000, 365 * 86_400_000), String(2 * 86_400_000)),
  SVC_RUN_RETENTION_MS: v.optional(intIn(3_600_000, 3650 * 86_400_000), String(30 * 86_400_000)),
  SVC_SHUTDOWN_TIMEOUT_MS: v.optional(intIn(0, 600_000), "30000"),
  SVC_SCHEDULES: v.optional(bool, "true"),
  SVC_EVENT_STREAM: v.optional(v.picklist(["sqlite", "nats"], "must be sqlite or nats"), "sqlite"),
  NATS_URL: v.optional(v.pipe(v.string(), v.regex(/^nats:\/\/[^\s]+$/, "must be a nats:// URL")), "nats://127.0.0.1:4222"),
  SVC_NATS_STREAM: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]+$/, "must be letters, digits, _ or -"))),
  SVC_WS_MAX_BUFFERED_BYTES: v.optional(intIn(1024, 1024 * 1024 * 1024), String(4 * 1024 * 1024)),
  SVC_WS_CHECKPOINT_MS: v.optional(intIn(10, 3_600_000), "10000"),
  SVC_ACCESS_LOG: v.optional(bool, "false"),
  SVC_SESSION_TTL_MS: v.optional(intIn(60_000, 30 * 86_400_000), String(8 * 3_600_000)),
  SVC_UPLOAD_MAX_BYTES: v.optional(intIn(1, 1024 ** 4), String(5 * 1024 ** 3)),
  SVC_UPLOAD_SESSION_TTL_MS: v.optional(intIn(60_000, 30 * 86_400_000), String(86_400_000)),
  SVC_FILE_RETENTION_MS: v.optional(intIn(1000, 365 * 86_400_000), String(86_400_000)),
  SVC_DECK_CHECKS: v.optional(bool, "true"),
  SVC_CHROMIUM_PATH: v.optional(nonEmpty, () => defaultChromiumPath()),
  // setTimeout's largest delay (2^31 - 1 ms, ~24.8 days): a longer one would fire at once
  SVC_DECK_CHECK_IDLE_MS: v.optional(intIn(0, 2_147_483_647), "600000"),
  SVC_HEAP_GROWING_PERCENT: v.optional(intIn(0, 1000), "100"),
  SVC_AGENT_BASE_URL: v.optional(v.pipe(v.string(), v.trim(), v.url("must be a URL such as http://127.0.0.1:11434/v1"))),
  SVC_AGENT_MODEL: v.optional(v.pipe(v.string(), v.regex(/^(scripted|openai-compatible:\S+|anthropic:\S+)$/, "must be scripted, openai-compatible:<model> or anthropic:<model>")), "scripted"),
  SVC_FRAME_LINK_TTL_MS: v.optional(intIn(10_000, 86_400_000), String(30 * 60_000)),
  SVC_AGENT_OUTPUT_RETENTION_MS: v.optional(intIn(1000, 365 * 86_400_000), String(7 * 86_400_000)),
  SVC_PROJECTION_CHUNK_ROWS: v.optional(intIn(1, 100_000), "500"),
  SVC_DATASET_TRANSACTION_IDLE_MS: v.optional(intIn(1000, 30 * 86_400_000), String(3_600_000)),
  SVC_EVENT_SCHEDULE_MAX_LAG_MS: v.optional(intIn(100, 30 * 86_400_000), "60000"),
  SVC_RUN_START_MAX_AGE_MS: v.optional(intIn(100, 30 * 86_400_000), "60000"),
  SVC_ALLOWED_ORIGINS: v.optional(v.pipe(v.string(), v.transform((s) => s.split(",").map((o) => o.trim()).filter(Boolean)), v.check((list) => list.every((o) => /^https?:\/\/[^/\s]+$/.test(o)), "must be a comma-separated list of origins such as https://app.example.com"))),
});

/** What a failure to use the data dir means, by the error's code (see {@link dataDirError}). */
const DATA_DIR_FAILURES: Record<string, string> = {
  EEXIST: "is a file, not a directory",
  ENOTDIR: "is not a directory (a part of its path is a file)",
  EACCES: "cannot be written by this process (permission denied)",
  EPERM: "cannot be written by this process (operation not permitted)",
  EROFS: "is on a read-only file system",
  SQLITE_READONLY: "holds a database this process may only read: make the directory and its files writable by it",
  SQLITE_CANTOPEN: "holds a database SQLite cannot open: the directory or its files are not writable by this process, or one of them is not a file",
};

/**
 * `err`, met while making or opening the data dir (`<dataDir>` itself, its lock, its SQLite database),
 * as the {@link ConfigError} of `SVC_DATA_DIR` that says in one line why the directory cannot be used
 * (a file in its place, no permission, a read-only file system or database); any other error as it is.
 */
export function dataDirError(err: unknown, dataDir: string): unknown {
  const code = errorCode(err);
  const failure = code === undefined ? undefined : DATA_DIR_FAILURES[code];
  return failure ? new ConfigError("SVC_DATA_DIR", `${dataDir} ${failure} (${code})`) : err;
}

/**
 * `err`, met when the HTTP server began to listen on `host`:`port`, as the {@link ConfigError} of `PORT`
 * (in use, or privileged) or `HOST` (not resolving, not an address of this machine) that says so in one
 * line; any other error as it is.
 */
export function listenError(err: unknown, port: number, host: string): unknown {
  const code = errorCode(err);
  switch (code) {
    case "EADDRINUSE":
      return new ConfigError("PORT", `${port} is already in use on ${host} (EADDRINUSE): stop what listens there, or choose another PORT`);
    case "EACCES":
      return new ConfigError("PORT", `${port} may not be listened on by this process (EACCES): ports below 1024 need privileges; choose another PORT`);
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new ConfigError("HOST", `${host} does not resolve to an address (${code}): use an address of this machine, such as 127.0.0.1 or 0.0.0.0`);
    case "EADDRNOTAVAIL":
      return new ConfigError("HOST", `${host} is not an address of this machine (EADDRNOTAVAIL): use one of its addresses, such as 127.0.0.1 or 0.0.0.0`);
    default:
      return err;
  }
}

/** `SVC_DEV_TOKEN` (validated) over the project's default: `none` disables the development token. */
function devTokenOf(variable: string | undefined, fallback: string | undefined): Pick<Config, "devToken" | "devTokenDisabled"> {
  if (variable?.toLowerCase() === DEV_TOKEN_NONE) return { devTokenDisabled: true };
  const devToken = variable ?? fallback;
  return devToken ? { devToken, devTokenDisabled: false } : { devTokenDisabled: false };
}

/** The SQLite database file of a data dir (`<dataDir>/svc.db`): the store (`Database.open`) and what checks for it. */
export function databaseFile(dataDir: string): string {
  return path.join(dataDir, "svc.db");
}

/**
 * Reads and validates the configuration.
 *
 * @param env the environment (defaults to `process.env`); empty strings count as unset
 * @param defaults project defaults, e.g. the sandbox's data dir and dev token
 * @throws {ConfigError} naming the first invalid variable
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, defaults: { dataDir?: string; devToken?: string } = {}): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(EnvSchema.entries)) {
    const value = env[key];
    if (value !== undefined && value !== "") input[key] = value;
  }
  const result = v.safeParse(EnvSchema, input);
  if (!result.success) {
    const issue = result.issues[0]!;
    const variable = v.getDotPath(issue) ?? "environment";
    throw new ConfigError(variable, `${issue.message} (got ${JSON.stringify(input[variable] ?? "")})`);
  }
  const e = result.output;
  // the embedded dev server's UI listens on its gRPC port + 1000 (core/temporal/dev-server.ts)
  if (!e.TEMPORAL_ADDRESS && e.SVC_TEMPORAL_UI && e.SVC_TEMPORAL_PORT + TEMPORAL_UI_PORT_OFFSET > 65535) {
    throw new ConfigError("SVC_TEMPORAL_PORT", `must be at most ${65535 - TEMPORAL_UI_PORT_OFFSET} while SVC_TEMPORAL_UI is on: the Temporal UI listens on this port + ${TEMPORAL_UI_PORT_OFFSET} (got ${JSON.stringify(input.SVC_TEMPORAL_PORT)}); choose a lower port, or set SVC_TEMPORAL_UI=false`);
  }
  // a run deleted while its events' keys live on: a resend's events would be dropped as duplicates (core/store/run-retention.ts)
  if (e.SVC_RUN_RETENTION_MS < e.SVC_EVENT_RETENTION_MS) {
    throw new ConfigError("SVC_RUN_RETENTION_MS", `must be at least SVC_EVENT_RETENTION_MS (${e.SVC_EVENT_RETENTION_MS}): a run's resend after its record went would find its events' keys still kept, and its events dropped (got ${JSON.stringify(input.SVC_RUN_RETENTION_MS)})`);
  }
  // a provider's model without its endpoint or key would start, and fail every agent run (core/agents/providers.ts)
  if (e.SVC_AGENT_MODEL.startsWith("openai-compatible:") && !e.SVC_AGENT_BASE_URL) {
    throw new ConfigError("SVC_AGENT_BASE_URL", `must be set when SVC_AGENT_MODEL is ${e.SVC_AGENT_MODEL}: the OpenAI-compatible endpoint's base URL, such as http://127.0.0.1:11434/v1`);
  }
  if (e.SVC_AGENT_MODEL.startsWith("anthropic:") && !env.ANTHROPIC_API_KEY?.trim() && !env.SVC_AGENT_API_KEY?.trim()) {
    throw new ConfigError("ANTHROPIC_API_KEY", `(or SVC_AGENT_API_KEY) must be set when SVC_AGENT_MODEL is ${e.SVC_AGENT_MODEL}`);
  }
  const dataDir = e.SVC_DATA_DIR ?? defaults.dataDir;
  if (!dataDir) throw new ConfigError("SVC_DATA_DIR", "must be set (no default data directory for this project)");
  return {
    port: e.PORT,
    host: e.HOST,
    logLevel: e.LOG_LEVEL,
    dataDir: path.resolve(dataDir),
    ...devTokenOf(e.SVC_DEV_TOKEN, defaults.devToken),
    publicOrigin: e.SVC_API_PUBLIC_ORIGIN ?? `http://localhost:${e.PORT}`,
    ...(e.SVC_API_PUBLIC_ORIGIN ? { apiPublicOrigin: e.SVC_API_PUBLIC_ORIGIN } : {}),
    basePath: basePathOf(e.SVC_API_PUBLIC_ORIGIN),
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      cliPath: e.SVC_TEMPORAL_CLI,
      devServerPort: e.SVC_TEMPORAL_PORT,
      ui: e.SVC_TEMPORAL_UI,
      retentionMs: e.SVC_TEMPORAL_RETENTION_MS,
      taskQueue: e.SVC_TASK_QUEUE,
    },
    outboxRecoveryMs: e.SVC_OUTBOX_RECOVERY_MS,
    recordRunningAfterMs: e.SVC_RECORD_RUNNING_AFTER_MS,
    eventRetentionMs: e.SVC_EVENT_RETENTION_MS,
    runRetentionMs: e.SVC_RUN_RETENTION_MS,
    shutdownTimeoutMs: e.SVC_SHUTDOWN_TIMEOUT_MS,
    syncSchedules: e.SVC_SCHEDULES,
    sessionTtlMs: e.SVC_SESSION_TTL_MS,
    wsMaxBufferedBytes: e.SVC_WS_MAX_BUFFERED_BYTES,
    wsCheckpointMs: e.SVC_WS_CHECKPOINT_MS,
    accessLog: e.SVC_ACCESS_LOG,
    eventStream: e.SVC_EVENT_STREAM,
    natsUrl: e.NATS_URL,
    natsStream: e.SVC_NATS_STREAM,
    uploadMaxBytes: e.SVC_UPLOAD_MAX_BYTES,
    uploadSessionTtlMs: e.SVC_UPLOAD_SESSION_TTL_MS,
    fileRetentionMs: e.SVC_FILE_RETENTION_MS,
    deckChecks: e.SVC_DECK_CHECKS,
    chromiumPath: e.SVC_CHROMIUM_PATH,
    deckCheckIdleMs: e.SVC_DECK_CHECK_IDLE_MS,
    frameLinkTtlMs: e.SVC_FRAME_LINK_TTL_MS,
    agentOutputRetentionMs: e.SVC_AGENT_OUTPUT_RETENTION_MS,
    agentModel: e.SVC_AGENT_MODEL,
    projectionChunkRows: e.SVC_PROJECTION_CHUNK_ROWS,
    heapGrowingPercent: e.SVC_HEAP_GROWING_PERCENT,
    datasetTransactionIdleMs: e.SVC_DATASET_TRANSACTION_IDLE_MS,
    eventScheduleMaxLagMs: e.SVC_EVENT_SCHEDULE_MAX_LAG_MS,
    runStartMaxAgeMs: e.SVC_RUN_START_MAX_AGE_MS,
    // a browser's Origin header has no path: the public origin's prefix is not part of it
    allowedOrigins: e.SVC_ALLOWED_ORIGINS ?? [...new Set([new URL(e.SVC_API_PUBLIC_ORIGIN ?? `http://localhost:${e.PORT}`).origin, `http://localhost:${e.PORT}`, `http://127.0.0.1:${e.PORT}`])],
  };
}
