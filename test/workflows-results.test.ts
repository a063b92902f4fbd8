/** A workflow's result must be JSON (Temporal's payloads are): one that is not fails the run, by name. */
import path from "node:path";
import { expect, it } from "vitest";
import { client, eventually, startApp } from "./helpers";
import { defineProject } from "../core/sdk";
import { sandboxProject } from "../sandbox/project";
import { workflows } from "./fixtures/odd-workflows";

it("a workflow whose result JSON cannot carry fails with that reason, and the event log agrees (it stayed running, its finished event saying completed)", async () => {
  const project = defineProject({ ...sandboxProject, workflows, workflowsModule: path.join(import.meta.dirname, "fixtures/odd-workflows.ts") });
  const app = await startApp({ project, ownWorkflowBundle: true });
  try {
    const dev = client(app);
    const { runId } = (await dev.post("/api/workflows/odd-result/runs", { input: {} })).body;
    const failed = await eventually(async () => {
      const r = await dev.get(`/api/workflow-runs/${runId}`);
      return r.body.status === "failed" ? r.body : undefined;
    }, 60_000);
    expect(failed.error?.message ?? JSON.stringify(failed)).toContain("The workflow's result cannot be written as JSON: Do not know how to serialize a BigInt");
    const events = ((await dev.get("/api/events?topic=workflows&limit=1000")).body.events as any[]).filter((e) => e.payload.runId === runId);
    expect(events.find((e) => e.type === "workflow.run.finished")?.payload.status).toBe("failed");
  } finally {
    await app.close();
  }
}, 120_000);
