import * as v from "valibot";
import { ClientRunIdSchema, decodeListingToken, encodeListingToken, HistoryEventSchema, InterventionStateSchema, WorkflowRunErrorSchema, WorkflowRunStateSchema, WorkflowRunSummarySchema, WorkflowRuns, can, timestampSchema, definePlugin, requirePermission, type Principal } from "../../core/plugin-api";

/**
 * Workflow runs (spec 4.1, 4.3): `POST /api/workflows/:id/runs` answers `{ runId }` once durably queued
 * in the store (the run starts on Temporal afterwards, workflow id = runId); `GET /api/workflow-runs/:runId`
 * reports its state.
 * Both need `run:workflow:<id>`.
 */
/** Whether `x` is a run search's position (see `RunSearchPosition`). */
function isPosition(x: unknown): x is { at: string; seen: string[] } {
  const p = x as { at?: unknown; seen?: unknown } | null;
  return typeof p?.at === "string" && !Number.isNaN(Date.parse(p.at)) && Array.isArray(p.seen) && p.seen.every((id) => typeof id === "string");
}

export default definePlugin({
  name: "workflows",
  deps: { runs: WorkflowRuns },
  setup({ routes, project, hooks, log }, { runs }) {
    // the domain types these routes answer, named in the OpenAPI document (WorkflowRunState, WorkflowRunSummary, InterventionState, HistoryEvent)
    routes.component("WorkflowRunError", WorkflowRunErrorSchema);
    routes.component("WorkflowRunState", WorkflowRunStateSchema);
    routes.component("WorkflowRunSummary", WorkflowRunSummarySchema);
    routes.component("InterventionState", InterventionStateSchema);
    routes.component("HistoryEvent", HistoryEventSchema);
    // runs of a workflow the project no longer defines (renamed, removed) cannot go on and no one can read
    // them through the API: say so once at start, with what to do (it does not hold up the start)
    hooks.hook("ready", () => {
      void runs
        .openRunsOfUndefinedWorkflows()
        .then((orphans) => {
          for (const { workflowId, open, runIds } of orphans) {
            log.warn(
              { workflowId, open, runIds: runIds.slice(0, 20) },
              `${open} run${open === 1 ? " is" : "s are"} open of workflow "${workflowId}", which the project no longer defines: they cannot go on (their next step fails: "This worker has no workflow"), and the API answers them only to holders of run:workflow:${workflowId}. Declare the workflow again under that id to let them finish, or cancel them (temporal workflow cancel --workflow-id <runId>)`,
            );
          }
        })
        .catch((err: unknown) => log.debug({ err }, "could not look for open runs of workflows the project no longer defines"));
    });
    routes.add({
      method: "POST",
      path: "/api/workflows/:id/runs",
      summary: "Start a workflow run",
      description: "Validates `input` with the workflow's schema and queues the run: answers once the run and `workflow.run.queued` are committed; the run is started on Temporal right after (while Temporal is unreachable it stays `queued`, see `runStarts` in GET /api/status). Read its state at GET /api/workflow-runs/{runId}: a start Temporal refuses for good (e.g. the `runId` names another execution) ends the run `failed` with the reason. Sending the same `runId` again with the same input answers the same run (a retry); with another input it is 409 `conflict`.",
      tags: ["workflows"],
      auth: "bearer",
      params: v.object({ id: v.string() }),
      body: v.strictObject({
        input: v.optional(v.unknown(), {}),
        runId: v.optional(ClientRunIdSchema),
      }),
      bodyByParam: {
        param: "id",
        bodies: Object.fromEntries([...project.workflows].map(([id, w]) => [id, v.strictObject({ input: routes.schemas.defaultsToEmptyObject(w.input), runId: v.optional(ClientRunIdSchema) })])),
      },
      responses: {
        200: { description: "Queued", schema: v.object({ runId: v.string() }) },
        404: { description: "`not_found`: no such workflow" },
        409: { description: "`conflict`: the `runId` belongs to a run of another workflow, or to one with another input" },
        503: { description: "`shutting_down`: the server is shutting down; nothing was queued" },
      },
      handler: ({ principal, params, body }) => {
        project.workflow(params.id); // 404 for an unknown workflow, before the permission check
        requirePermission(principal!, can.runWorkflow(params.id));
        return runs.start(params.id, body.input, { type: principal!.type, id: principal!.id }, body.runId);
      },
    });
    routes.add({
      method: "GET",
      path: "/api/workflow-runs/:runId",
      summary: "Read a workflow run",
      description: "Status (queued, running, waiting, completed, failed, cancelled, timed_out), input, result or error, nodes with timings, and links to the Temporal execution. `queued` until the run has started (a run not started on Temporal yet has no `temporalRunId`).",
      tags: ["workflows"],
      auth: "bearer",
      params: v.object({ runId: v.string() }),
      responses: { 200: { description: "Run state", schema: WorkflowRunStateSchema }, 503: { description: "`unavailable`: Temporal did not answer" } },
      handler: async ({ principal, params }) => {
        const workflowId = await runs.workflowOf(params.runId);
        requirePermission(principal!, can.runWorkflow(workflowId));
        return runs.get(params.runId);
      },
    });
    const runParams = v.object({ runId: v.string() });
    /** The run's workflow id, after checking the caller may run that workflow. */
    const authorize = async (principal: Principal, runId: string) => {
      const workflowId = await runs.workflowOf(runId);
      requirePermission(principal, can.runWorkflow(workflowId));
      return workflowId;
    };
    routes.add({
      method: "GET",
      path: "/api/workflow-runs",
      summary: "Search workflow runs",
      description: "Runs by workflow, status and start time, newest first: through Temporal visibility, and from the store for runs not started on Temporal yet (their `startedAt` is when they were queued) or ended before their start. Only workflows the caller may run are listed. `queued` and `waiting` runs are reported as `running` here; read the run for its exact state.",
      tags: ["workflows"],
      auth: "bearer",
      query: v.object({
        workflowId: v.optional(v.string()),
        status: v.optional(v.pipe(v.picklist(["queued", "running", "waiting", "completed", "failed", "cancelled", "timed_out"]), v.description("`queued`, `running` and `waiting` all list the runs that have not ended (the list reports each as `running`; read a run for its exact state)"))),
        startedAfter: v.optional(timestampSchema()),
        startedBefore: v.optional(timestampSchema()),
        pageSize: v.optional(routes.schemas.queryInteger({ min: 1, max: 500, description: "1 to 500, default 50" })),
        nextPageToken: v.optional(v.pipe(v.string(), v.minLength(1), v.description("The `nextPageToken` of the page before, with the same filters"))),
      }),
      responses: {
        200: { description: "Runs; `nextPageToken` when there are more (absent on the last page)", schema: v.object({ data: v.array(WorkflowRunSummarySchema), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: the query does not match this operation's schema, or `nextPageToken` is not a token of this search (another search's, or edited)" },
        503: { description: "`unavailable`: Temporal did not answer" },
      },
      handler: async ({ principal, query }) => {
        const allowed = [...project.workflows.keys()].filter((id) => principal!.permissions.has(can.runWorkflow(id)) && (!query.workflowId || id === query.workflowId));
        const filters = JSON.stringify([query.workflowId ?? null, query.status ?? null, query.startedAfter ?? null, query.startedBefore ?? null]);
        const after = query.nextPageToken === undefined ? undefined : decodeListingToken(query.nextPageToken, filters, isPosition, "workflowId, status, startedAfter and startedBefore");
        const page = await runs.search({ workflowIds: allowed, status: query.status, startedAfter: query.startedAfter, startedBefore: query.startedBefore, pageSize: query.pageSize ?? 50, after });
        return { data: page.data, ...(page.next ? { nextPageToken: encodeListingToken(page.next, filters) } : {}) };
      },
    });
    routes.add({
      method: "GET",
      path: "/api/workflow-runs/:runId/history",
      summary: "Read a run's Temporal history",
      description: "Every history event in order with its type, time, the name the designer gave (workflow, activity, update, timer) its summary (decrypted when svc stored it encrypted: it held a download URL) and its attributes, as Temporal stores them (`temporal workflow show -w <runId> -o json`: payloads base64, encrypted ones as \`binary/encrypted\`). Empty for a run not started on Temporal. A page at a time: continue with `nextPageToken` while one is there (a page may hold fewer than `pageSize` events and still have one, and the last page may be empty). For a run still open, the last page may end before its newest events (Temporal's tokens stop at the history as it was when they were made): read again for newer ones.",
      tags: ["workflows"],
      auth: "bearer",
      params: runParams,
      query: v.object(routes.schemas.pageQuery({ max: 1000, defaultSize: 1000, unit: "Events" })),
      responses: {
        200: { description: "A page of the history, oldest event first; `nextPageToken` when more follow (absent on the last page)", schema: v.object({ runId: v.string(), events: v.array(HistoryEventSchema), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: a `nextPageToken` this listing did not issue (another run's, or edited), or one Temporal no longer takes" },
        404: { description: "`not_found`: no such run, or Temporal does not know it (its history was removed after the namespace's retention)" },
        503: { description: "`unavailable`: Temporal did not answer" },
      },
      handler: async ({ principal, params, query }) => {
        await authorize(principal!, params.runId);
        return runs.history(params.runId, { pageSize: query.pageSize ?? 1000, nextPageToken: query.nextPageToken });
      },
    });
    routes.add({
      method: "POST",
      path: "/api/workflow-runs/:runId/cancel",
      summary: "Cancel a workflow run",
      description: "Requests cancellation; open interventions end `cancelled` and the run ends `cancelled`. A run still queued (not started on Temporal) ends `cancelled` at once and never starts.",
      tags: ["workflows"],
      auth: "bearer",
      params: runParams,
      body: v.strictObject({}),
      responses: { 200: { description: "Cancellation requested", schema: v.object({ runId: v.string(), cancelRequested: v.boolean() }) }, 409: { description: "`conflict`: the run is not running" }, 503: { description: "`unavailable`: Temporal did not cancel the run" } },
      handler: async ({ principal, params }) => {
        await authorize(principal!, params.runId);
        await runs.cancel(params.runId);
        return { runId: params.runId, cancelRequested: true };
      },
    });
    routes.add({
      method: "GET",
      path: "/api/workflow-runs/:runId/interventions",
      summary: "List a run's interventions",
      description: "Every intervention the run opened, open or not, in the order it opened them: name, prompt, status (open, submitted, cancelled, expired), assignees, the answer's schema, and once resolved the answer, who gave it (`by`) and when (`resolvedAt`).",
      tags: ["workflows"],
      auth: "bearer",
      params: runParams,
      responses: { 200: { description: "Interventions, oldest first", schema: v.object({ data: v.array(InterventionStateSchema) }) }, 503: { description: "`unavailable`: Temporal did not answer" } },
      handler: async ({ principal, params }) => {
        await authorize(principal!, params.runId);
        return { data: await runs.interventions(params.runId) };
      },
    });
    const interventionParams = v.object({ runId: v.string(), name: v.string() });
    routes.add({
      method: "POST",
      path: "/api/workflow-runs/:runId/interventions/:name/submit",
      summary: "Submit an intervention's answer",
      description: "Only an assignee (a listed identity, or a holder of the named permission). The answer is validated by the run itself (a Temporal update validator): an invalid answer is 400 and leaves the intervention open and no trace in history.",
      tags: ["workflows"],
      auth: "bearer",
      params: interventionParams,
      body: v.strictObject({ answer: v.unknown() }),
      responses: { 200: { description: "The intervention, submitted", schema: InterventionStateSchema }, 400: { description: "`invalid_request`: the body does not match this operation's schema, or the answer fails the intervention's own schema (checked by the run; no trace is left)" }, 409: { description: "`conflict`: the intervention is not open, or the run is no longer running" }, 503: { description: "`unavailable`: Temporal did not take the update" } },
      handler: ({ principal, params, body }) => runs.submit(params.runId, params.name, body.answer, principal!),
    });
    routes.add({
      method: "POST",
      path: "/api/workflow-runs/:runId/interventions/:name/cancel",
      summary: "Cancel an intervention",
      description: "An assignee, or a holder of run:workflow:<id>. The run continues with the outcome `cancelled`.",
      tags: ["workflows"],
      auth: "bearer",
      params: interventionParams,
      body: v.strictObject({ reason: v.optional(v.pipe(v.string(), v.maxLength(500))) }),
      responses: { 200: { description: "The intervention, cancelled", schema: InterventionStateSchema }, 409: { description: "`conflict`: the intervention is not open, or the run is no longer running" }, 503: { description: "`unavailable`: Temporal did not take the update" } },
      handler: ({ principal, params, body }) => runs.cancelIntervention(params.runId, params.name, principal!, body.reason),
    });
    routes.add({
      method: "GET",
      path: "/api/interventions",
      summary: "Open interventions for the caller",
      description: "Open interventions across runs that the caller may answer (a listed identity, or a holder of the named permission), oldest first; continue with `nextPageToken` while one is there: a page reads at most 1,000 open interventions, so for a caller who may answer few of many it can hold fewer than `pageSize` (even none) and still have one.",
      tags: ["workflows"],
      auth: "bearer",
      query: v.object(routes.schemas.pageQuery({ max: 200, defaultSize: 50 })),
      responses: {
        200: { description: "A page of interventions; `nextPageToken` when more follow (absent on the last page)", schema: v.object({ data: v.array(InterventionStateSchema), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: a `nextPageToken` this listing did not issue (another caller's, or edited)" },
      },
      handler: ({ principal, query }) => runs.openFor(principal!, { pageSize: query.pageSize ?? 50, nextPageToken: query.nextPageToken }),
    });
  },
});
