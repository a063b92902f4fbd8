import * as v from "valibot";
import { definePlugin } from "../../core/plugin";
import { TOKENS } from "../../core/tokens";
import { can, requirePermission } from "../../core/auth/permissions";

const RunState = v.object({
  runId: v.string(),
  workflowId: v.string(),
  status: v.picklist(["queued", "running", "completed", "failed", "cancelled", "timed_out"]),
  input: v.unknown(),
  result: v.optional(v.unknown()),
  error: v.optional(v.object({ message: v.string(), type: v.optional(v.string()) })),
  queuedAt: v.string(),
  startedAt: v.optional(v.string()),
  finishedAt: v.optional(v.string()),
  nodes: v.array(v.object({ name: v.string(), status: v.string(), startedAt: v.string(), finishedAt: v.optional(v.string()) })),
  links: v.object({ temporalWorkflowId: v.string(), temporalRunId: v.string(), temporalUi: v.optional(v.string()) }),
});

/**
 * Workflow runs (spec 4.1, 4.3): `POST /api/workflows/:id/runs` answers `{ runId }` once queued on
 * Temporal (Temporal workflow id = runId); `GET /api/workflow-runs/:runId` reports its state.
 * Both need `run:workflow:<id>`.
 */
export default definePlugin({
  name: "workflows",
  setup({ routes, container, project }) {
    const runs = () => container.resolve(TOKENS.WorkflowRuns);
    routes.add({
      method: "POST",
      path: "/api/workflows/:id/runs",
      summary: "Start a workflow run",
      description: "Validates `input` with the workflow's schema and queues the run on Temporal. Answers once queued; read completion at GET /api/workflow-runs/{runId}. Sending the same `runId` again answers the same run.",
      tags: ["workflows"],
      auth: "bearer",
      params: v.object({ id: v.string() }),
      body: v.strictObject({
        input: v.optional(v.unknown(), {}),
        runId: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:-]{1,128}$/, "must be 1-128 characters of letters, digits, _ . : -"))),
      }),
      responses: { 200: { description: "Queued", schema: v.object({ runId: v.string() }) } },
      handler: ({ principal, params, body }) => {
        project.workflow(params.id); // 404 for an unknown workflow, before the permission check
        requirePermission(principal!, can.runWorkflow(params.id));
        return runs().start(params.id, body.input, { type: principal!.type, id: principal!.id }, body.runId);
      },
    });
    routes.add({
      method: "GET",
      path: "/api/workflow-runs/:runId",
      summary: "Read a workflow run",
      description: "Status (queued, running, completed, failed, cancelled, timed_out), input, result or error, nodes with timings, and links to the Temporal execution.",
      tags: ["workflows"],
      auth: "bearer",
      params: v.object({ runId: v.string() }),
      responses: { 200: { description: "Run state", schema: RunState } },
      handler: async ({ principal, params }) => {
        const workflowId = await runs().workflowOf(params.runId);
        requirePermission(principal!, can.runWorkflow(workflowId));
        return runs().get(params.runId);
      },
    });
  },
});
