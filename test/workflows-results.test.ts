/**
 * How a workflow's own failures read: a result that is not JSON (Temporal's payloads are) fails the run
 * by name; an error the workflow's code throws fails it with that error's own stack.
 */
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { client, eventually, startApp } from "./helpers";
import { defineProject } from "../core/sdk";
import { sandboxProject } from "../sandbox/project";
import { workflows } from "./fixtures/odd-workflows";

let app: Awaited<ReturnType<typeof startApp>>;
beforeAll(async () => {
  const project = defineProject({ ...sandboxProject, workflows, workflowsModule: path.join(import.meta.dirname, "fixtures/odd-workflows.ts") });
  app = await startApp({ project, ownWorkflowBundle: true });
}, 120_000);
afterAll(() => app?.close());

/** Starts `workflowId` and answers its run state once it failed. */
async function failedRun(workflowId: string) {
  const dev = client(app);
  const { runId } = (await dev.post(`/api/workflows/${workflowId}/runs`, { input: {} })).body;
  const failed = await eventually(async () => {
    const r = await dev.get(`/api/workflow-runs/${runId}`);
    return r.body.status === "failed" ? r.body : undefined;
  }, 60_000);
  return { runId, failed };
}

it("a workflow whose result JSON cannot carry fails with that reason, and the event log agrees (it stayed running, its finished event saying completed)", async () => {
  const { runId, failed } = await failedRun("odd-result");
  expect(failed.error?.message ?? JSON.stringify(failed)).toContain("The workflow's result cannot be written as JSON: Do not know how to serialize a BigInt");
  const events = ((await client(app).get("/api/events?topic=workflows&limit=1000")).body.events as any[]).filter((e) => e.payload.runId === runId);
  expect(events.find((e) => e.type === "workflow.run.finished")?.payload.status).toBe("failed");
}, 90_000);

it("an error the workflow's code throws fails the run with its name and its own stack: the designer's function, file and line, not the engine's", async () => {
  const { failed } = await failedRun("odd-throw");
  expect(failed.error).toMatchObject({ message: "totals do not add up", type: "TypeError" });
  const stack: string = failed.error.stack ?? "";
  expect(stack).toContain("checkTotals");
  expect(stack).toMatch(/odd-workflows\.ts:\d+/);
  // the engine's own wrapping is not where it says the error was thrown
  expect(stack.split("\n")[1]).not.toMatch(/designerFailure|failRun|workflows\/index\.ts/);
}, 90_000);
