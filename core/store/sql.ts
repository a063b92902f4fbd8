/**
 * The store's statement surface (spec: the SQLite store of DESIGN.md): the types a transaction and a
 * read connection offer (`SqlReader`, `SqlStatements`, `SqlWriter`), the group statements of a group
 * commit (`GroupStatement`: `insertRows`, `rowsStatement`, `statementsInOrder`), and one connection's promise access with its cache of
 * prepared statements (`openConnection`). `./db.ts` (`Database`) builds the writer, the reader and the
 * checkpointer from these and re-exports the types.
 */
import sqlite3 from "sqlite3";

/** Values that can be bound to a statement parameter. */
export type SqlValue = string | number | bigint | null | Buffer;
export type SqlParams = SqlValue[] | Record<string, SqlValue>;

/** Statement access inside a transaction (or on the read connection, without `run`). */
export interface SqlReader {
  /**
   * The first row of `sql`'s result, or `undefined` for none. The statement runs to its end (it holds
   * no read snapshot once this resolves), so `sql` should select one row: by key, an aggregate, `LIMIT 1`.
   */
  get<T>(sql: string, params?: SqlParams): Promise<T | undefined>;
  all<T>(sql: string, params?: SqlParams): Promise<T[]>;
}
/** Statement access on one connection: reads and single statements. */
export interface SqlStatements extends SqlReader {
  /** Runs one statement; answers the number of changed rows and the last inserted rowid. */
  run(sql: string, params?: SqlParams): Promise<{ changes: number; lastID: number }>;
}

/** What a {@link Database.transaction} callback gets: statements inside the transaction, and commit hooks. */
export interface SqlWriter extends SqlStatements {
  /**
   * Calls `fn` right after the transaction holding this caller's writes has committed, before the
   * caller's `transaction` promise resolves (hooks of one group run in the order of their callers, then
   * of their registration); never when those writes are rolled back. For in-memory state that must
   * follow only committed rows (the event stream's tail and its "appended" notice). `fn` must not throw
   * (what it throws is dropped: the data is committed either way).
   */
  afterCommit(fn: () => void): void;
  /**
   * Queues `items` for `statement`, which the group runs once over the items all its callers queued
   * (see {@link GroupStatement}): one call to SQLite for the whole group instead of one per caller.
   * The rows it writes are not visible to this caller nor to the later callers of its group; its
   * results (what `statement.run` notes on the items) are there in this caller's {@link afterCommit}
   * hooks. Dropped with the caller's other writes when its callback throws.
   */
  defer<I>(statement: GroupStatement<I>, items: readonly I[]): void;
  /**
   * Runs `fn` inside a SAVEPOINT of this caller's transaction, so that a part of the caller's work can
   * fail alone: when `fn` throws, its statements are rolled back (`ROLLBACK TO` + `RELEASE`, one call to
   * SQLite), the writes it deferred ({@link defer}) and the hooks it registered ({@link afterCommit}) are
   * dropped, and its error is rethrown; what the caller did before and does after stands. Costs two
   * calls to SQLite (`SAVEPOINT`, `RELEASE`) on success.
   * @throws what `fn` throws; {@link TransactionLost} when the savepoint cannot be rolled back (SQLite
   *   rolled the whole transaction back itself: SQLITE_FULL, `RAISE(ROLLBACK)`, …); from then on every
   *   statement of the caller rejects with it, and the caller's group is rejected whole
   */
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * What a caller's statements reject with once SQLite rolled its whole transaction back while a part of
 * it ran in {@link SqlWriter.savepoint}: nothing of the group is written, and the caller must not go on
 * as if only that part failed. `cause` is SQLite's error.
 */
export class TransactionLost extends Error {
  constructor(cause: unknown) {
    super(`the transaction was rolled back by SQLite (${cause instanceof Error ? cause.message : String(cause)}); nothing was written`, { cause });
  }
}

/**
 * A statement that a group commit runs once over the items its callers queued with
 * {@link SqlWriter.defer}: after the group's last caller, before its `COMMIT`, in the group's
 * transaction. For the hot writes whose rows no caller reads back in its own transaction (the event
 * log's INSERT; the action runs' and webhook runs' rows through {@link insertRows}, their completions
 * through {@link rowsStatement}): each
 * awaited statement is a round trip to SQLite's thread that waits for the event loop's next turn
 * (70-250 µs under load against 28 µs alone), so one per group instead of one per caller is what the
 * writer's throughput is made of.
 *
 * A statement that offers {@link GroupStatement.sql} costs the group no round trip of its own: when
 * every statement a group deferred offers it, their texts go into the same one call to SQLite as the
 * group's `COMMIT` (and its `BEGIN`, when no caller ran a statement). When that call fails inside the
 * deferred statements, the group undoes them and runs them again one by one through
 * {@link GroupStatement.run}, which decides alone what is written.
 */
export interface GroupStatement<I> {
  /**
   * Writes `items` (the callers' in the order they ran, each caller's in the order it queued them)
   * through `w`, and notes on the items whatever their callers' hooks need. Throwing rolls back the
   * whole group: every caller of it gets the error, as at a failed `COMMIT`.
   */
  run(w: SqlStatements, items: readonly I[]): Promise<void>;
  /**
   * The same writes as one or more SQL statements with the items' values written into the text (see
   * {@link sqlText}), noting on the items what {@link GroupStatement.run} would: they must fail (not
   * skip rows) wherever `run` would decide something, since the group then calls `run` instead.
   * Undefined when these items need `run`.
   */
  sql?(items: readonly I[]): string | undefined;
}

/**
 * `text` as an SQL string literal: in single quotes, each single quote doubled (SQLite's only escape in
 * a string literal). For values written into statement text (see {@link GroupStatement.sql}); the
 * text must hold no NUL character, which no `JSON.stringify` output does (it writes `\u0000`).
 */
export function sqlText(text: string): string {
  // most texts (a group's JSON rows) hold no quote: replaceAll would copy them all the same
  return `'${text.includes("'") ? text.replaceAll("'", "''") : text}'`;
}

/**
 * `value` as a literal of an SQL statement's text: `NULL` (also for a number that is not finite, as
 * `JSON.stringify` writes it), a number, `1`/`0` for a boolean, or a string literal ({@link sqlText}).
 * Undefined for a value that has none a `json_each` row would read the same: a string holding a NUL
 * (it would end the text) or a lone surrogate (no UTF-8), and any other type.
 */
function sqlLiteral(value: unknown): string | undefined {
  switch (typeof value) {
    case "string":
      return value.includes("\0") || !value.isWellFormed() ? undefined : sqlText(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "NULL";
    case "boolean":
      return value ? "1" : "0";
    default:
      return value === null ? "NULL" : undefined;
  }
}

/** `batch(n, c0, …, c<columns-1>)`: the common table expression's name and columns (see {@link rowsStatement}), by column count. */
const batchHeads: string[] = [];
const batchColumns = (columns: number) => (batchHeads[columns] ??= `batch(n, ${Array.from({ length: columns }, (_, i) => `c${i}`).join(", ")})`);

/**
 * The common table expression `batch(n, c0, c1, …)` over `rows` (each an array of `columns` values;
 * `n` is its index) written into a statement's text: `VALUES (0, …), (1, …)` with the values as
 * literals ({@link sqlLiteral}), which SQLite reads without parsing JSON; or, when a value has no plain
 * literal, the rows as one JSON string literal read through `json_each`, as {@link batchOfParameter} reads them.
 */
export function batchOfRows(columns: number, rows: readonly (readonly unknown[])[]): string {
  const literals = literalRows(rows, columns);
  if (!literals) return batchOfJson(columns, sqlText(JSON.stringify(rows)));
  return `${batchColumns(columns)} AS (VALUES ${literals.map((row, i) => `(${i}, ${row.join(", ")})`).join(", ")})`;
}

/** {@link batchOfRows} over `json`, an SQL expression of a JSON array of rows (`?` for a parameter). */
function batchOfJson(columns: number, json: string): string {
  return `${batchColumns(columns)} AS (SELECT key, ${Array.from({ length: columns }, (_, i) => `value->>${i}`).join(", ")} FROM json_each(${json}))`;
}

/** The common table expression `batch(n, c0, c1, …)` over the statement's one parameter, a JSON array of rows (see {@link batchOfRows}). */
export function batchOfParameter(columns: number): string {
  return batchOfJson(columns, "?");
}

/**
 * A {@link GroupStatement} that runs each of `sql`, in order, once per group over the group's items:
 * rows of `columns` values each (strings, numbers, booleans, null), which `sql` reads from the common
 * table expression `batch(n, c0, c1, …)` (`n` the row's index: `ORDER BY n` keeps the callers' order),
 * put in front of it as `WITH …`. {@link GroupStatement.run} binds the rows as one JSON array
 * ({@link batchOfParameter}); {@link GroupStatement.sql} writes them into the text ({@link batchOfRows}).
 * For appends and updates whose callers need nothing back; the event log's INSERT, which notes seqs,
 * writes its own.
 */
export function rowsStatement<I extends readonly unknown[]>(columns: number, ...sql: string[]): GroupStatement<I> {
  const withParameter = `WITH ${batchOfParameter(columns)}\n`;
  return {
    async run(w, items) {
      const rows = JSON.stringify(items);
      for (const statement of sql) await w.run(withParameter + statement, [rows]);
    },
    sql(items) {
      const batch = `WITH ${batchOfRows(columns, items)}\n`;
      return sql.map((statement) => batch + statement).join(";\n");
    },
  };
}

/**
 * Each of `rows` as the literals of its values ({@link sqlLiteral}); undefined when a value has none.
 * For statements that write their rows as `VALUES (…), (…)` themselves (the event log's INSERT).
 */
export function literalRows(rows: readonly (readonly unknown[])[], columns: number): string[][] | undefined {
  const out: string[][] = [];
  for (const row of rows) {
    const literals: string[] = [];
    for (let c = 0; c < columns; c++) {
      const literal = sqlLiteral(row[c] ?? null);
      if (literal === undefined) return undefined;
      literals.push(literal);
    }
    out.push(literals);
  }
  return out;
}

/**
 * A {@link GroupStatement} that inserts one row per item into `table`. Its {@link GroupStatement.sql}
 * is `INSERT OR FAIL INTO <table> (<columns>) VALUES (…), (…) <onConflict>`, the values written as
 * literals: SQLite parses and plans a plain multi-row `VALUES` for about two thirds of what the same
 * rows cost read from a `WITH batch AS (VALUES …)` (a group of 8 action runs' INSERTs, issue 15), and
 * `OR FAIL` spares each statement its statement journal (SQLite's copy of every page the statement
 * changes, kept to undo the statement alone on a constraint error: the group undoes the whole call
 * instead). When a value has no literal (see {@link batchOfRows}), the rows are one JSON string read
 * through `json_each`, and {@link GroupStatement.run} binds them as one parameter the same way.
 *
 * @param table the table's name
 * @param columns the columns written, in order
 * @param opts.values one SQL expression per column over the item's values `c0`, `c1`, … (default
 *   `c0` … `c<n-1>`): a reference, a constant, or a deterministic function of them (`unhex(c8)`); a
 *   `c<i>` inside a string literal is text, not a reference
 * @param opts.onConflict an upsert clause after the rows (`ON CONFLICT DO NOTHING`); without one, a
 *   row that breaks a constraint fails the statement (and the group's one call)
 * @throws Error when `values` and `columns` differ in length
 */
export function insertRows<I extends readonly unknown[]>(table: string, columns: readonly string[], opts: { values?: readonly string[]; onConflict?: string } = {}): GroupStatement<I> {
  const values = opts.values ?? columns.map((_, i) => `c${i}`);
  if (values.length !== columns.length) throw new Error(`insertRows(${table}): ${columns.length} columns but ${values.length} values`);
  const conflict = opts.onConflict ? ` ${opts.onConflict}` : "";
  // each row's text: the expressions' text between their item references (`c<i>` → the item's i-th
  // value; not inside a string literal)
  const texts = [""];
  const refs: number[] = [];
  const tuple = `(${values.join(", ")})`;
  let at = 0;
  for (const m of tuple.matchAll(/'(?:[^']|'')*'|\bc(\d+)\b/g)) {
    if (m[1] === undefined) continue;
    texts[texts.length - 1] += tuple.slice(at, m.index);
    texts.push("");
    refs.push(Number(m[1]));
    at = m.index + m[0].length;
  }
  texts[texts.length - 1] += tuple.slice(at);
  const width = Math.max(-1, ...refs) + 1;
  const head = `INSERT OR FAIL INTO ${table} (${columns.join(", ")})`;
  const fromBatch = `SELECT ${values.join(", ")} FROM batch WHERE true ORDER BY n${conflict}`;
  const withParameter = `WITH ${batchOfParameter(width)}\nINSERT INTO ${table} (${columns.join(", ")}) ${fromBatch}`;
  return {
    async run(w, items) {
      await w.run(withParameter, [JSON.stringify(items)]);
    },
    sql(items) {
      const rows: string[] = [];
      for (const item of items) {
        let row = texts[0]!;
        for (let r = 0; r < refs.length; r++) {
          const literal = sqlLiteral(item[refs[r]!] ?? null);
          if (literal === undefined) return `WITH ${batchOfJson(width, sqlText(JSON.stringify(items)))}\n${head} ${fromBatch}`;
          row += literal + texts[r + 1]!;
        }
        rows.push(row);
      }
      return `${head} VALUES ${rows.join(", ")}${conflict}`;
    },
  };
}

/**
 * One {@link GroupStatement} of `statements` over the same items, each run (or written) in the order
 * given: a table's rows before the rows that reference them.
 */
export function statementsInOrder<I>(...statements: GroupStatement<I>[]): GroupStatement<I> {
  return {
    async run(w, items) {
      for (const statement of statements) await statement.run(w, items);
    },
    sql(items) {
      const texts: string[] = [];
      for (const statement of statements) {
        const text = statement.sql?.(items);
        if (text === undefined) return undefined;
        texts.push(text);
      }
      return texts.join(";\n");
    },
  };
}

/** One connection's promise access (see {@link openConnection}). */
export type Connection = SqlStatements & {
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
  statements: () => number;
  /** Stops the statement running now (SQLite's `sqlite3_interrupt`): it fails with `SQLITE_INTERRUPT`. */
  interrupt(): void;
};

/**
 * Opens one connection to `file` (`mode`: `sqlite3.OPEN_*` flags) with promise access ({@link wrap}).
 * @throws the driver's error when the file cannot be opened in that mode
 */
export async function openConnection(file: string, mode: number): Promise<Connection> {
  return wrap(
    await new Promise<sqlite3.Database>((resolve, reject) => {
      const db = new sqlite3.Database(file, mode, (err) => (err ? reject(err) : resolve(db)));
    }),
  );
}

/**
 * Promise access to one connection, with a cache of prepared statements keyed by SQL text: preparing
 * costs about as much as running (measured: 90 µs per awaited INSERT unprepared, 39 µs prepared), and
 * the runtime runs the same few statements over and over. The cache keeps the 256 most recently used.
 *
 * A statement whose SQL fails to prepare (a syntax error, an unknown table) rejects every call queued
 * on it with SQLite's error and leaves the cache: node-sqlite3 finalizes such a statement and drops
 * the calls queued on it without calling them back, so without the prepare callback their promises
 * would never settle (and the error would be an unhandled `error` event).
 */
function wrap(db: sqlite3.Database): Connection {
  /** A cached statement; `pending` holds the calls queued on it until its prepare has answered. */
  interface Entry {
    stmt: sqlite3.Statement;
    pending: Array<(err: Error) => void> | undefined;
  }
  const cache = new Map<string, Entry>();
  /** Statements run on this connection (each `run`/`get`/`all`/`exec` call counts one). */
  let statements = 0;
  /** The statement for `sql`, with `reject` registered for a failed prepare when it is not prepared yet. */
  const statement = (sql: string, reject: (err: Error) => void): sqlite3.Statement => {
    statements++;
    let entry = cache.get(sql);
    if (entry) {
      cache.delete(sql);
    } else {
      const created: Entry = {
        pending: [],
        stmt: db.prepare(sql, (err: Error | null) => {
          const pending = created.pending!;
          created.pending = undefined;
          if (!err) return;
          if (cache.get(sql) === created) cache.delete(sql);
          for (const fail of pending) fail(err);
        }),
      };
      entry = created;
      if (cache.size >= 256) {
        const [oldest, old] = cache.entries().next().value as [string, Entry];
        cache.delete(oldest);
        old.stmt.finalize();
      }
    }
    cache.set(sql, entry);
    entry.pending?.push(reject);
    return entry.stmt;
  };
  /** Runs `sql` to its end (`Statement#all`, one call on SQLite's thread) and answers `pick` of its rows. */
  const rows = <R>(sql: string, params: SqlParams, pick: (rows: unknown[]) => R) =>
    new Promise<R>((resolve, reject) => statement(sql, reject).all(params, (err, r) => (err ? reject(err) : resolve(pick(r)))));
  return {
    run: (sql, params = []) =>
      new Promise((resolve, reject) =>
        statement(sql, reject).run(params, function (this: sqlite3.RunResult, err: Error | null) {
          if (err) reject(err);
          else resolve({ changes: this.changes, lastID: this.lastID });
        }),
      ),
    // A get runs as node-sqlite3's `all` (see SqlReader.get): its own `get` steps once and leaves the
    // statement on its row, holding the reader's snapshot until a reset, and a read of another statement
    // in that window ran in the old snapshot (a read begun after a commit missed it)
    get: <T>(sql: string, params: SqlParams = []) => rows(sql, params, (r) => r[0] as T | undefined),
    all: <T>(sql: string, params: SqlParams = []) => rows(sql, params, (r) => r as T[]),
    exec: (sql) => {
      statements++;
      return new Promise((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));
    },
    statements: () => statements,
    interrupt: () => db.interrupt(),
    close: () =>
      new Promise((resolve, reject) => {
        for (const { stmt } of cache.values()) stmt.finalize();
        cache.clear();
        db.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
