import * as v from "valibot";
import { ClientRunIdSchema, ConnectorRunStateSchema, ConnectorRuns, can, definePlugin, requirePermission } from "../../core/plugin-api";

const RunRequest = v.strictObject({
  input: v.optional(v.unknown()),
  runId: v.optional(ClientRunIdSchema),
});

/**
 * Sync and pipeline runs (spec 4.3): `POST /api/syncs/:syncId/runs` and `POST /api/pipelines/:pipelineId/runs`
 * answer `{ runId }` once durably queued in the store (started on Temporal afterwards); `GET /api/sync-runs/:runId` and `GET /api/pipeline-runs/:runId`
 * report completion (pipelines with their steps). Needs `run:sync:<id>` / `run:pipeline:<id>`.
 */
export default definePlugin({
  name: "syncs",
  deps: { runs: ConnectorRuns },
  setup({ routes, project }, { runs }) {
    // the domain types these routes answer, named in the OpenAPI document (ConnectorRunState)
    routes.component("ConnectorRunState", ConnectorRunStateSchema);
    for (const kind of ["sync", "pipeline"] as const) {
      const plural = kind === "sync" ? "syncs" : "pipelines";
      const permission = kind === "sync" ? can.runSync : can.runPipeline;
      routes.add({
        method: "POST",
        path: `/api/${plural}/:id/runs`,
        summary: `Start a ${kind} run`,
        description: `Queues the ${kind} and answers its runId once committed; it is started on Temporal right after (while Temporal is unreachable it stays \`queued\`). Read completion at GET /api/${kind}-runs/{runId}: a start Temporal refuses for good ends the run \`failed\` with the reason. Sending the same runId again answers the same run.`,
        tags: [plural],
        auth: "bearer",
        params: v.object({ id: v.string() }),
        body: RunRequest,
        bodyByParam: { param: "id", bodies: Object.fromEntries(project.definition.connectors?.flatMap((c) => Object.entries(c[plural] ?? {})).map(([id, d]) => [id, d.input ? v.strictObject({ ...RunRequest.entries, input: routes.schemas.defaultsToEmptyObject(d.input) }) : RunRequest]) ?? []) },
        responses: {
          200: { description: "Queued", schema: v.object({ runId: v.string() }) },
          404: { description: `\`not_found\`: no such ${kind}` },
          409: { description: "`conflict`: the `runId` belongs to another run" },
          503: { description: "`shutting_down`: the server is shutting down; nothing was queued" },
        },
        handler: ({ principal, params, body }) => {
          project.connectorRun(plural, params.id);
          requirePermission(principal!, permission(params.id));
          return runs.start(kind, params.id, body.input, { type: principal!.type, id: principal!.id }, body.runId);
        },
      });
      routes.add({
        method: "GET",
        path: `/api/${kind}-runs/:runId`,
        summary: `Read a ${kind} run`,
        description: `The run's state: status (queued, running, completed, failed, cancelled, timed_out), input, error${kind === "pipeline" ? ", its steps" : ""}, Temporal links; while it runs, \`pendingActivities\` (attempt, last failure), and \`workflowTaskFailure\` when its workflow task keeps failing.`,
        tags: [plural],
        auth: "bearer",
        params: v.object({ runId: v.string() }),
        responses: { 200: { description: "Run state", schema: ConnectorRunStateSchema }, 503: { description: "`unavailable`: Temporal did not answer" } },
        handler: async ({ principal, params }) => {
          requirePermission(principal!, permission(await runs.definitionOf(kind, params.runId)));
          return runs.get(kind, params.runId);
        },
      });
    }
  },
});
