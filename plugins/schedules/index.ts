import * as v from "valibot";
import { ScheduleManager, ScheduleStateSchema, can, definePlugin, requirePermission } from "../../core/plugin-api";

/**
 * Connectors' schedules on Temporal, for operators with `manage:schedules`: list with next runs,
 * pause, unpause, trigger now. Each firing appends `schedule.triggered` (spec 2.4).
 */
export default definePlugin({
  name: "schedules",
  deps: { manager: ScheduleManager },
  setup({ routes }, { manager }) {
    routes.add({
      method: "GET",
      path: "/api/schedules",
      summary: "List schedules",
      description: "Every schedule the connectors declare, with its Temporal state: paused, the next five run times and the recent runs.",
      tags: ["schedules"],
      auth: "bearer",
      responses: { 200: { description: "Schedules", schema: v.object({ data: v.array(ScheduleStateSchema) }) }, 404: { description: "`not_found`: a declared schedule is not on Temporal (schedules were not synced at startup: `SVC_SCHEDULES=false`)" } },
      handler: async ({ principal }) => {
        requirePermission(principal!, can.manage("schedules"));
        return { data: await manager.list() };
      },
    });
    const NoteBody = v.strictObject({ note: v.optional(v.pipe(v.string(), v.maxLength(500))) });
    for (const [verb, summary] of [["pause", "Pause a schedule"], ["unpause", "Unpause a schedule"], ["trigger", "Trigger a schedule now"]] as const) {
      routes.add({
        method: "POST",
        path: `/api/schedules/:scheduleId/${verb}`,
        summary,
        description: verb === "trigger" ? "Fires one occurrence now (also when paused), honouring the overlap policy." : `A note may say why; it shows in the schedule's state and the Temporal UI.`,
        tags: ["schedules"],
        auth: "bearer",
        params: v.object({ scheduleId: v.string() }),
        body: NoteBody,
        responses: { 200: { description: "The schedule after the change", schema: ScheduleStateSchema }, 404: { description: "`not_found`: no such schedule, or it is not on Temporal" } },
        handler: ({ principal, params, body }) => {
          requirePermission(principal!, can.manage("schedules"));
          return verb === "trigger" ? manager.trigger(params.scheduleId) : manager[verb](params.scheduleId, body.note);
        },
      });
    }
  },
});
