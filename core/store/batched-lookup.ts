import type { SqlReader } from "./sql";

/** One caller of {@link BatchedLookup.get} waiting for its batch. */
interface Pending<K, R> {
  key: K;
  resolve: (row: R | undefined) => void;
  reject: (err: unknown) => void;
}

/**
 * Point reads by key on the read connection, batched the way the writer's group commit batches writes:
 * the keys asked for while no batch is in flight (and in the same tick as the first) go into ONE
 * statement over `json_each`, and those asked for meanwhile into the next, so concurrent callers
 * (a burst of webhook deliveries looking up their idempotency keys) cost one trip to SQLite's thread per
 * batch instead of one each, all through one cached statement that serves one call at a time.
 *
 * `sql` reads `?` as the JSON array of the encoded keys and answers at most one row per key, with a
 * column `lookup` holding the key's index in that array (`json_each`'s `key`), e.g.
 * `SELECT k.key AS lookup, r.* FROM json_each(?) AS k JOIN runs r ON r.run_id = k.value`.
 */
export class BatchedLookup<K, R extends object> {
  /** At most this many keys per statement. */
  static readonly BATCH_MAX = 256;
  private readonly queued: Array<Pending<K, R>> = [];
  private running = false;

  /** @param encode a key as one JSON value of the array `sql` reads (default: the key itself) */
  constructor(
    private readonly db: SqlReader,
    private readonly sql: string,
    private readonly encode: (key: K) => unknown = (key) => key,
  ) {}

  /**
   * The row stored for `key` (committed data), or undefined.
   * @throws the statement's SQLite error (every caller of that batch gets it)
   */
  get(key: K): Promise<R | undefined> {
    return new Promise<R | undefined>((resolve, reject) => {
      this.queued.push({ key, resolve, reject });
      if (!this.running) {
        this.running = true;
        void this.run();
      }
    });
  }

  /** Runs batches until nobody waits. Never throws: every outcome goes to its caller. */
  private async run(): Promise<void> {
    // start on a later tick, so that lookups asked for in the same tick join the first batch
    await Promise.resolve();
    while (this.queued.length > 0) {
      const batch = this.queued.splice(0, BatchedLookup.BATCH_MAX);
      try {
        const rows = await this.db.all<R & { lookup: number }>(this.sql, [JSON.stringify(batch.map((p) => this.encode(p.key)))]);
        const byIndex = new Map<number, R>();
        for (const { lookup, ...row } of rows) byIndex.set(lookup, row as unknown as R);
        batch.forEach((p, i) => p.resolve(byIndex.get(i)));
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    // cleared in the same synchronous step as the check above: a lookup queued after it starts a new run
    this.running = false;
  }
}
