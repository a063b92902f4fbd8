/**
 * A value made on first use by an async `load` (e.g. importing packages kept out of start-up, issue 15):
 * the first call starts `load`, later calls share its promise; a rejection is forgotten, so the next
 * call tries again.
 * @returns the getter; it rejects with whatever `load` rejects with
 */
export function lazily<T>(load: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () =>
    (value ??= load().catch((err: unknown) => {
      value = undefined;
      throw err;
    }));
}
