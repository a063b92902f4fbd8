import * as v from "valibot";
import { ApiError, closeIfSlow, errorResponse, LOG_LEVELS, LOG_RUN_KINDS, LogCapture, LogLineSchema, can, cursorPump, definePlugin, has, requirePermission, sendFrame, subscriptionSocket } from "../../core/plugin-api";

const RunRef = v.strictObject({ kind: v.picklist(LOG_RUN_KINDS), id: v.pipe(v.string(), v.minLength(1)) });
const Subscribe = v.strictObject({
  type: v.literal("subscribe"),
  run: v.optional(RunRef),
  kinds: v.optional(v.array(v.picklist(LOG_RUN_KINDS))),
  levels: v.optional(v.array(v.picklist(LOG_LEVELS))),
  afterCursor: v.optional(v.string()),
});

/**
 * Handler logs (spec 2.5, 6.5): `GET /api/logs` and `/ws/logs`, both requiring `can.observe("logs")`.
 * Lines carry message, level, fields, run context `{ kind, id }` and a cursor.
 */
export default definePlugin({
  name: "logs",
  deps: { logs: LogCapture },
  setup({ routes, authenticateUpgrade, config }, { logs }) {
    // the domain types these routes answer, named in the OpenAPI document (LogLine)
    routes.component("LogLine", LogLineSchema);
    routes.add({
      method: "GET",
      path: "/api/logs",
      summary: "Read handler logs",
      description: "Lines written by action, webhook, schedule, sync, pipeline and effect handlers, by workflow code and by the project's seed (`runKind=seed&runId=seed`), oldest first. Filter by run (`runKind` + `runId`), `kinds`, exact `levels` (comma-separated); continue with `afterCursor` = the answer's `nextCursor`. Needs observe:logs.",
      tags: ["logs"],
      auth: "bearer",
      query: routes.schemas.queryGroups(v.object({
        runKind: v.optional(v.picklist(LOG_RUN_KINDS)),
        runId: v.optional(v.string()),
        kinds: v.optional(routes.schemas.queryCommaList(LOG_RUN_KINDS, `Run kinds, comma-separated: ${LOG_RUN_KINDS.join(", ")}`)),
        levels: v.optional(routes.schemas.queryCommaList(LOG_LEVELS, `Exact levels, comma-separated: ${LOG_LEVELS.join(", ")}`)),
        afterCursor: v.optional(v.pipe(v.string(), v.minLength(1), v.description("The answer's `nextCursor` (or the `cursor` of the last line already read): opaque, only a cursor this server issued; another value is 400"))),
        limit: v.optional(routes.schemas.queryInteger({ min: 1, max: 1000, description: "1 to 1000, default 100" })),
      }), { run: ["runKind", "runId"] }),
      responses: {
        200: {
          description: "Log lines",
          schema: v.object({
            count: v.number(),
            logs: v.array(LogLineSchema),
            nextCursor: v.pipe(
              v.nullable(v.string()),
              v.description("Where to continue: send it as `afterCursor`. On a full page, the last line's `cursor`; on a shorter one (caught up), the newest position this read covered, past the lines your filters skip, so a reader whose filter matched nothing for a while still holds a cursor inside the retained window. Null only for a log with no line yet, read from its start."),
            ),
          }),
        },
        400: { description: "`invalid_request`: the query does not match this operation's schema (`runKind` and `runId` go together), or `afterCursor` is not a cursor of this log" },
        410: { description: "`cursor_expired`: `afterCursor` points before the retained lines" },
      },
      handler: async ({ principal, query }) => {
        requirePermission(principal!, can.observe("logs"));
        if ((query.runKind === undefined) !== (query.runId === undefined)) throw new ApiError("invalid_request", "runKind and runId go together");
        await logs.flush();
        const { lines, nextCursor } = await logs.readPage({ run: query.runKind ? { kind: query.runKind, id: query.runId! } : undefined, kinds: query.kinds, levels: query.levels, afterCursor: query.afterCursor, limit: query.limit ?? 100 });
        return { count: lines.length, logs: lines, nextCursor };
      },
    });

    routes.ws(
      "/ws/logs",
      {
        summary: "Handler logs over WebSocket",
        description: "Spec 6.5. Browser session, allowed Origin and observe:logs. Send `{type:\"subscribe\", run?: {kind,id}, kinds?, levels?, afterCursor?}` (omitted filters: all logs); frames: connected, subscribed, logs {logs: [...]}, unsubscribed, reset {reason: cursor_expired}, error {code, message}. Without afterCursor only new lines arrive; a second subscribe replaces the first.",
      },
      subscriptionSocket({
        authenticate: async (request) => {
          const principal = await authenticateUpgrade(request);
          if (!has(principal, can.observe("logs"))) {
            throw errorResponse(new ApiError("forbidden", "This identity lacks the permission observe:logs"));
          }
          return principal;
        },
        schema: Subscribe,
        // a cursor of another log, or past its newest line, is refused before anything is acknowledged or stopped
        check: (sub) => sub.afterCursor === undefined || logs.checkCursor(sub.afterCursor),
        async start(peer, _principal, sub, onReadError) {
          await logs.flush();
          const start = sub.afterCursor ?? (await logs.latestCursor());
          sendFrame(peer, { type: "subscribed", run: sub.run ?? null, kinds: sub.kinds ?? null, levels: sub.levels ?? null, afterCursor: sub.afterCursor ?? null });
          let stop = () => {};
          stop = cursorPump({
            read: (afterCursor) => logs.read({ run: sub.run, kinds: sub.kinds, levels: sub.levels, afterCursor, limit: 500 }),
            latestCursor: () => logs.latestCursor(),
            notifier: logs.notifier,
            afterCursor: start,
            fromStart: start === undefined,
            handler: (batch) => {
              sendFrame(peer, { type: "logs", logs: batch }); // not awaited: a slow socket only grows its own buffer
              closeIfSlow(peer, config.wsMaxBufferedBytes, () => stop());
            },
            onHandlerError: () => undefined,
            onReadError,
          });
          return () => stop();
        },
      }),
    );
  },
});
