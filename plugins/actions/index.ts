import * as v from "valibot";
import { ActionRunRecordSchema, ActionRunner, ApiError, RunErrorSchema, SubjectSchema, can, definePlugin, has, requirePermission, type Principal } from "../../core/plugin-api";

const RunRequest = v.strictObject({
  subject: v.optional(SubjectSchema),
  params: v.optional(v.pipe(v.record(v.string(), v.unknown()), v.description("Action parameters; validated by the action's own schema")), {}),
  runId: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:-]{1,128}$/, "must be 1-128 characters of letters, digits, _ . : -"), v.description("Identifies the run for retry (spec 4.2)"))),
});

/**
 * Whether `principal` may read `run` beyond its action's permission: a run about an object needs view
 * access to its type, as starting it did (its record shows the subject, params and result).
 */
function mayReadRun(principal: Principal, run: { subject?: { objectTypeId: string } }): boolean {
  return !run.subject || has(principal, can.view(run.subject.objectTypeId));
}

/**
 * `POST /api/actions/:actionId` (spec 4.1, 4.2), `GET /api/actions/:actionId/runs/:runId` and
 * `GET /api/action-runs/:runId` (the same record, read as the other run kinds are, without the action's id).
 * Needs `run:action:<actionId>`; a subject also needs view access to its type.
 */
export default definePlugin({
  name: "actions",
  deps: { runner: ActionRunner },
  setup({ routes, project }, { runner }) {
    // the domain types these routes answer, named in the OpenAPI document (ActionRunRecord, Subject)
    routes.component("RunError", RunErrorSchema);
    routes.component("ActionRunRecord", ActionRunRecordSchema);
    routes.component("Subject", SubjectSchema);
    routes.add({
      method: "POST",
      path: "/api/actions/:actionId",
      summary: "Run an action",
      description: [
        "Runs the action and answers the finished run record (spec 4.2).",
        "- A failed run is still 200, with `status: failed` and `error`.",
        "- The action's effects start afterwards on Temporal; the response does not wait for them.",
        "- Resending a `runId` answers that run's record without running again; a `runId` still running on this server is 409 `run_in_progress`.",
        "- A server that is shutting down answers 503 `shutting_down` and starts nothing.",
      ].join("\n"),
      tags: ["actions"],
      auth: "bearer",
      params: v.object({ actionId: v.string() }),
      body: RunRequest,
      // each action's own request: its params schema, and a subject of its subject type when it takes one
      bodyByParam: {
        param: "actionId",
        bodies: Object.fromEntries(
          [...project.actions.values()].map(({ id, definition: action }) => [
            id,
            v.strictObject({
              ...RunRequest.entries,
              subject: action.subject ? v.strictObject({ ...SubjectSchema.entries, objectTypeId: v.literal(action.subject.objectTypeId) }) : RunRequest.entries.subject,
              params: routes.schemas.defaultsToEmptyObject(action.params),
            }),
          ]),
        ),
      },
      responses: {
        200: { description: "The finished run record (including failed runs)", schema: ActionRunRecordSchema },
        404: { description: "`not_found`: no such action, or no object is the subject" },
        409: { description: "`run_in_progress`: the `runId` is still running on this server; `conflict`: the `runId` belongs to a run of another action, or is another run's record `id` (which `GET /api/action-runs/{runId}` also reads runs by)" },
        503: { description: "`shutting_down`: the server is shutting down and started nothing" },
      },
      handler: ({ principal, params, body }) => {
        project.action(params.actionId); // 404 for an unknown action, before the permission check
        requirePermission(principal!, can.runAction(params.actionId));
        if (body.subject) requirePermission(principal!, can.view(body.subject.objectTypeId));
        return runner.run({ actionId: params.actionId, subject: body.subject, params: body.params, runId: body.runId, actor: { type: principal!.type, id: principal!.id } });
      },
    });
    routes.add({
      method: "GET",
      path: "/api/actions/:actionId/runs/:runId",
      summary: "Read an action run",
      description: "`runId` is the run's `runId` (the one a start request may choose) or its record's `id`: both name the run.",
      tags: ["actions"],
      auth: "bearer",
      params: v.object({ actionId: v.string(), runId: v.string() }),
      responses: { 200: { description: "The run record", schema: ActionRunRecordSchema }, 404: { description: "`not_found`: no such run of this action, or a run about an object whose type you may not view" } },
      handler: async ({ principal, params }) => {
        requirePermission(principal!, can.runAction(params.actionId));
        const run = await runner.get(params.runId);
        // a run of another action, or about an object the caller may not view, reads as one that does not exist
        if (run.actionId !== params.actionId || !mayReadRun(principal!, run)) throw new ApiError("not_found", `No action run "${params.runId}"`);
        return run;
      },
    });
    routes.add({
      method: "GET",
      path: "/api/action-runs/:runId",
      summary: "Read an action run by its id alone",
      description: "The same record as `GET /api/actions/{actionId}/runs/{runId}`, for a client that holds only the run's id, as the other run kinds are read (`/api/workflow-runs/{runId}`, …). `runId` is the run's `runId` or its record's `id`. Needs `run:action:<actionId>` of the run's action, and for a run about an object view access to its type: a run you may not read is 404, as one that does not exist.",
      tags: ["actions"],
      auth: "bearer",
      params: v.object({ runId: v.string() }),
      responses: { 200: { description: "The run record", schema: ActionRunRecordSchema }, 404: { description: "`not_found`: no such run, or a run you may not read (of an action you may not run, or about an object whose type you may not view)" } },
      handler: async ({ principal, params }) => {
        const run = await runner.get(params.runId);
        // the record's action and subject decide who may read it; one the caller may not read is not told apart from none
        if (!has(principal!, can.runAction(run.actionId)) || !mayReadRun(principal!, run)) throw new ApiError("not_found", `No action run "${params.runId}"`);
        return run;
      },
    });
  },
});
