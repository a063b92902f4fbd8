/**
 * The start's read of the workflows that have runs (`WORKFLOW_IDS_WITH_RUNS`, core/runtime/workflows.ts):
 * every id once, and one index seek per id (it read every run's row, input and all).
 */
import { afterEach, expect, it } from "vitest";
import { closeOpenedDatabases, openWithTable } from "../../test/helpers-db";
import { WORKFLOW_IDS_WITH_RUNS } from "./workflows";

afterEach(closeOpenedDatabases);

it("answers each workflow id with runs once, through the workflow_runs_by_workflow index", async () => {
  const db = await openWithTable([]);
  expect(await db.all(WORKFLOW_IDS_WITH_RUNS)).toEqual([]);
  await db.transaction(async (tx) => {
    let n = 0;
    for (const workflowId of ["invoice-review", "b", "invoice-review", "a", "b", "invoice-review"]) {
      await tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, requested_at) VALUES (?, ?, ?, ?)", [`run_${++n}`, workflowId, JSON.stringify({ pad: "x".repeat(1000) }), new Date().toISOString()]);
    }
  });
  expect((await db.all<{ id: string }>(WORKFLOW_IDS_WITH_RUNS)).map((r) => r.id)).toEqual(["a", "b", "invoice-review"]);
  const plan = (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${WORKFLOW_IDS_WITH_RUNS}`)).map((r) => r.detail);
  const reads = plan.filter((d) => /workflow_runs/.test(d));
  expect(reads.length).toBeGreaterThan(0);
  for (const read of reads) expect(read).toMatch(/^SEARCH workflow_runs USING COVERING INDEX workflow_runs_by_workflow/);
});
