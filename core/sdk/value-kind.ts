/** How a declaration's refusal names a value it did not expect (core/sdk/connector.ts, schedule.ts). */

/** What a value is, for a refusal's message: `undefined`, `null`, `an array`, `an async valibot schema`, `an object`, `a string`, … */
export function what(x: unknown): string {
  if (x === undefined || x === null) return String(x);
  if (Array.isArray(x)) return "an array";
  if (typeof x === "object") return (x as { async?: unknown }).async === true ? "an async valibot schema (…Async)" : "an object";
  return `a ${typeof x}`; // a string, number, bigint, boolean, symbol or function
}
