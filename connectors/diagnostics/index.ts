import * as v from "valibot";
import { ApiError, defineAction, defineConnector } from "../../core/sdk";

/**
 * Operator and test tools: `diagnostics.sleep` holds a run open for `ms` milliseconds (to observe
 * 409 and graceful shutdown), `diagnostics.fail` fails a run with `message`, `diagnostics.noop`
 * finishes at once (the benchmark's action).
 */
export function diagnosticsConnector() {
  return defineConnector({
    id: "diagnostics",
    title: "Diagnostics",
    description: "Actions for operators and tests.",
    actions: {
      "diagnostics.sleep": defineAction({
        title: "Sleep",
        description: "Finishes after `ms` milliseconds (at most 10 minutes); stops early with an error when the server aborts handlers at its shutdown deadline.",
        params: v.object({ ms: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600_000)) }),
        run: (ctx) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => resolve({ sleptMs: ctx.params.ms }), ctx.params.ms);
            ctx.signal.addEventListener("abort", () => {
              clearTimeout(timer);
              reject(new ApiError("shutting_down", "aborted by server shutdown"));
            });
          }),
      }),
      "diagnostics.fail": defineAction({
        title: "Fail",
        description: "Fails the run with `message` (the run record has status failed and this error).",
        params: v.object({ message: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)) }),
        run: (ctx) => {
          throw new Error(ctx.params.message);
        },
      }),
      "diagnostics.noop": defineAction({
        title: "No-op",
        description: "Finishes at once.",
        params: v.object({}),
        run: () => ({ ok: true }),
      }),
    },
  });
}
