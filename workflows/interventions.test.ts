/**
 * The intervention primitive (workflows/interventions.ts) outside Temporal's isolate: `@temporalio/workflow`
 * is replaced by a fake whose `condition` times out at once, so what `ctx.intervention` refuses when it
 * opens is checked here; test/interventions.test.ts runs interventions on the real dev server.
 */
import * as v from "valibot";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Recorder } from "./records";

vi.mock("@temporalio/workflow", async () => {
  const { ApplicationFailure } = await import("@temporalio/common");
  return {
    ApplicationFailure,
    CancellationScope: { nonCancellable: <T>(fn: () => Promise<T>) => fn() },
    condition: async () => false, // the expiry timer fires at once
    defineUpdate: (name: string) => ({ name }),
    isCancellation: () => false,
    setHandler: () => undefined,
  };
});

const { installInterventions } = await import("./interventions");
const { ApplicationFailure } = await import("@temporalio/common");

/** The phases the intervention recorded, in order. */
const phases: string[] = [];
const record = async (entry: { record: { intervention?: { phase: string } } }) => void phases.push(entry.record.intervention!.phase);
const records = { recordNow: record, recordDurably: record } as unknown as Recorder;

beforeEach(() => {
  phases.length = 0;
});

const Decision = v.object({ approved: v.boolean() });
const open = (request: object) => installInterventions("invoice-review", "run-1", records, true)("approve", { prompt: "Approve?", assignees: { permission: "approve:invoice" }, ...request } as never);

describe("ctx.intervention", () => {
  it("opens, records, and expires by its timer with a valid request", async () => {
    await expect(open({ answer: Decision, expiresInMs: 60_000 })).resolves.toEqual({ status: "expired" });
    expect(phases).toEqual(["requested", "expired"]);
  });

  it.each([
    ["expiresInMs omitted", { answer: Decision }, "its expiresInMs must be a positive number of milliseconds (how long it stays open before it expires; it has no default), not undefined"],
    ["expiresInMs zero", { answer: Decision, expiresInMs: 0 }, "its expiresInMs must be a positive number of milliseconds (how long it stays open before it expires; it has no default), not 0"],
    ["expiresInMs negative", { answer: Decision, expiresInMs: -1000 }, "not -1000"],
    ["expiresInMs NaN", { answer: Decision, expiresInMs: Number.NaN }, "not NaN"],
    ["expiresInMs a string", { answer: Decision, expiresInMs: "1000" }, "not string"],
    ["expiresInMs past any date", { answer: Decision, expiresInMs: 1e300 }, "not 1e+300"],
    ["answer a plain object", { answer: { approved: "boolean" }, expiresInMs: 60_000 }, "its answer must be a valibot schema (e.g. v.object({ approved: v.boolean() })), not an object"],
    ["answer omitted", { expiresInMs: 60_000 }, "its answer must be a valibot schema (e.g. v.object({ approved: v.boolean() })), not undefined"],
    ["answer an async schema", { answer: v.objectAsync({ approved: v.boolean() }), expiresInMs: 60_000 }, "not an async valibot schema"],
  ])("fails the run when it opens with %s, saying so, and records nothing", async (_label, request, message) => {
    const failure = await open(request).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as Error).message).toMatch(/^Intervention "approve" of run run-1: its (answer|expiresInMs) must be /);
    expect((failure as Error).message).toContain(message);
    expect(failure).toMatchObject({ type: "InvalidIntervention", nonRetryable: true });
    expect(phases).toEqual([]);
  });
});
