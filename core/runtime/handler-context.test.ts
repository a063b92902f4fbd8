// handlerContext (core/runtime/handler.ts): a definition's context is the runner's ctx with its kind's fields added.
import { describe, expect, it } from "vitest";
import { handlerContext } from "./handler";
import type { SystemContext } from "../sdk/context";

describe("handlerContext", () => {
  it("adds the fields to the runner's context itself, the fields winning, every member still there", () => {
    const log = { debug() {}, info() {}, warn() {}, error() {} };
    const ctx = { objects: {}, links: {}, telemetry: {}, log, blobs: {}, artifacts: {}, events: {}, datasets: {} } as unknown as SystemContext;
    const out = handlerContext<{ runId: string; log: string; objects: object }>(ctx, { runId: "run_1" });
    expect(out).toBe(ctx);
    expect(out.runId).toBe("run_1");
    expect(Object.keys(out).sort()).toEqual(["artifacts", "blobs", "datasets", "events", "links", "log", "objects", "runId", "telemetry"]);
    // a field named like a member replaces it, as a spread `{ ...ctx, log }` did
    const replaced = handlerContext<Record<string, unknown>>({ ...ctx }, { log: "mine" } as never);
    expect(replaced.log).toBe("mine");
  });
});
