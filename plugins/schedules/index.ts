import * as v from "valibot";
import { DeadLetterSchema, EventScheduleStateSchema, ScheduleManager, ScheduleStateSchema, can, definePlugin, requirePermission } from "../../core/plugin-api";

/**
 * Connectors' schedules, for operators with `manage:schedules`: list, pause, unpause, trigger now.
 * Cron and interval schedules run on Temporal (each firing appends `schedule.triggered`, spec 2.4);
 * event schedules (spec 6.1) fire once per matching event through the runtime's durable consumer, whose
 * backlog, retries and dead letters show here; a dead-lettered event can be retried.
 */
export default definePlugin({
  name: "schedules",
  deps: { manager: ScheduleManager },
  setup({ routes }, { manager }) {
    // the domain types these routes answer, named in the OpenAPI document (ScheduleState, EventScheduleState, DeadLetter)
    routes.component("ScheduleState", ScheduleStateSchema);
    routes.component("EventScheduleState", EventScheduleStateSchema);
    routes.component("DeadLetter", DeadLetterSchema);
    routes.add({
      method: "GET",
      path: "/api/schedules",
      summary: "List schedules",
      description:
        "Every schedule the connectors declare. Cron and interval schedules: their Temporal state (paused, the next five run times, the recent runs). Event schedules (`on`: an event selector, spec 6.1): paused and their consumer (`cursor`, `backlog` of matching events read and not finished, `caughtUp`, `oldestPendingAt`, `lagMs`, `retrying`, `deadLettered`, `lastError`). A new event schedule starts at the newest event: it does not back-fill history.",
      tags: ["schedules"],
      auth: "bearer",
      responses: { 200: { description: "Schedules (with `SVC_SCHEDULES=false`, the cron and interval ones are listed with `onTemporal: false`)", schema: v.object({ data: v.array(ScheduleStateSchema) }) } },
      handler: async ({ principal }) => {
        requirePermission(principal!, can.manage("schedules"));
        return { data: await manager.list() };
      },
    });
    const NoteBody = v.strictObject({ note: v.optional(v.pipe(v.string(), v.maxLength(500))) });
    // a trigger records no note (Temporal's trigger takes none): `{}` only, so a note is not dropped in silence
    const TriggerBody = v.strictObject({}, "a trigger takes no fields (send {}): only pause and unpause record a note");
    for (const [verb, summary] of [["pause", "Pause a schedule"], ["unpause", "Unpause a schedule"], ["trigger", "Trigger a schedule now"]] as const) {
      routes.add({
        method: "POST",
        path: `/api/schedules/:scheduleId/${verb}`,
        summary,
        description:
          verb === "trigger"
            ? "Fires one occurrence of a cron / interval schedule now (also when paused), honouring the overlap policy. An event schedule is refused (409): it fires on matching events only."
            : `A note may say why; it shows in the schedule's state (and the Temporal UI for cron / interval schedules). ${verb === "pause" ? "A paused event schedule keeps its cursor and keeps reading: its backlog grows and shows in GET /api/schedules and /api/status." : "An unpaused event schedule works off its backlog in order."}`,
        tags: ["schedules"],
        auth: "bearer",
        params: v.object({ scheduleId: v.string() }),
        body: verb === "trigger" ? TriggerBody : NoteBody,
        responses: {
          200: { description: "The schedule after the change", schema: ScheduleStateSchema },
          404: { description: "`not_found`: no such schedule, or it is not on Temporal" },
          ...(verb === "trigger" ? ({ 409: { description: "`conflict`: an event schedule cannot be triggered on demand (it fires once per matching event)" } } as Record<number, { description: string }>) : {}),
        },
        handler: ({ principal, params, body }) => {
          requirePermission(principal!, can.manage("schedules"));
          return verb === "trigger" ? manager.trigger(params.scheduleId) : manager[verb](params.scheduleId, (body as { note?: string }).note);
        },
      });
    }
    routes.add({
      method: "POST",
      path: "/api/schedules/:scheduleId/retry",
      summary: "Retry a dead-lettered event",
      description:
        "An event schedule's event that failed `maxAttempts` times is dead-lettered (the partition went on without it). This runs it again: its attempts start over and it runs next in its partition; on success its writes and `schedule.triggered` commit as for any event.",
      tags: ["schedules"],
      auth: "bearer",
      params: v.object({ scheduleId: v.string() }),
      body: v.strictObject({ eventId: v.pipe(v.string(), v.minLength(1), v.maxLength(200), v.description("id of the dead-lettered event (GET /api/schedules/{scheduleId}/dead-letters)")) }),
      responses: {
        200: { description: "The event schedule after the retry was queued", schema: EventScheduleStateSchema },
        404: { description: "`not_found`: no such schedule, or no such event for it" },
        409: { description: "`conflict`: a cron / interval schedule has no dead letters, or the event is being retried (`details.status`)" },
      },
      handler: ({ principal, params, body }) => {
        requirePermission(principal!, can.manage("schedules"));
        return manager.retry(params.scheduleId, body.eventId);
      },
    });
    routes.add({
      method: "GET",
      path: "/api/schedules/:scheduleId/dead-letters",
      summary: "List an event schedule's dead-lettered events",
      description: "Events the schedule's handler failed `maxAttempts` times, oldest first, with their last error. `nextPageToken` names the next page while there is one (send it back as the `nextPageToken` parameter, as the other listings take it).",
      tags: ["schedules"],
      auth: "bearer",
      params: v.object({ scheduleId: v.string() }),
      query: v.object({
        pageSize: v.optional(routes.schemas.queryInteger({ min: 1, max: 1000, description: "1 to 1000, default 100 (as the other listings name it)" })),
        limit: v.pipe(v.optional(routes.schemas.queryInteger({ min: 1, max: 1000, description: "The older name of `pageSize`, still taken (`pageSize` wins when both are given); deprecated" })), routes.schemas.deprecated({ since: "2026-11-29", use: "pageSize" })),
        nextPageToken: v.optional(v.pipe(v.string(), v.minLength(1), v.description("The `nextPageToken` of the page before"))),
      }),
      responses: {
        200: { description: "Dead-lettered events", schema: v.object({ data: v.array(DeadLetterSchema), nextPageToken: v.optional(v.string()) }) },
        400: { description: "`invalid_request`: a `nextPageToken` of another listing (another schedule's, or edited)" },
        404: { description: "`not_found`: no such schedule" },
        409: { description: "`conflict`: a cron / interval schedule has no dead letters" },
      },
      handler: async ({ principal, params, query }) => {
        requirePermission(principal!, can.manage("schedules"));
        return manager.deadLetters(params.scheduleId, query.pageSize ?? query.limit ?? 100, query.nextPageToken);
      },
    });
  },
});
