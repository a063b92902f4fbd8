/**
 * A run's Temporal history as `GET /api/workflow-runs/:runId/history` answers it (spec 4.1): each event
 * with its type, time, the name of what it runs (activity, local activity, timer, update, patch) and the
 * designer's summary, decoded with the payload codec.
 */
import * as v from "valibot";
import type { Payload, PayloadCodec } from "@temporalio/common";
import type { temporal } from "@temporalio/proto";
import { isoOf } from "../temporal/execution";
import { temporalProto } from "../temporal/sdk";

/** One event of a run's Temporal history, in order (`GET /api/workflow-runs/:runId/history`). */
export const HistoryEventSchema = v.object({
  eventId: v.number(),
  eventType: v.string(),
  eventTime: v.string(),
  /** The type: activity or local activity type, timer id, update name, workflow type, `patch <id>`. */
  name: v.optional(v.string()),
  /** The designer's words for it (Temporal user metadata): node name and what the step does. */
  summary: v.optional(v.string()),
  attributes: v.record(v.string(), v.unknown()),
});
export type HistoryEvent = v.InferOutput<typeof HistoryEventSchema>;

/**
 * The events of `history`, in order, as {@link HistoryEventSchema} describes them; `attributes` are
 * Temporal's own (payloads as base64, as stored).
 * @param codec decodes the summaries, which are payloads: one holding a download URL is stored encrypted (core/temporal/payload-codec.ts)
 */
export async function historyEvents(history: temporal.api.history.v1.IHistory, codec: PayloadCodec): Promise<HistoryEvent[]> {
  const { History } = temporalProto().temporal.api.history.v1;
  const parsed = History.toObject(history as Parameters<typeof History.toObject>[0], { enums: String, longs: String, bytes: String, defaults: false }) as { events?: Array<Record<string, any>> };
  const summaries = await Promise.all((history.events ?? []).map((e) => summaryText(codec, e.userMetadata?.summary as Payload | null | undefined)));
  return (parsed.events ?? []).map((e, i) => {
    const key = Object.keys(e).find((k) => k.endsWith("EventAttributes"));
    const attributes = (key ? e[key] : {}) as Record<string, any>;
    const name = attributes.activityType?.name ?? attributes.workflowType?.name ?? attributes.request?.input?.name ?? attributes.acceptedRequest?.input?.name ?? (attributes.timerId ? `timer ${attributes.timerId}` : undefined) ?? markerName(attributes);
    const summary = summaries[i];
    return { eventId: Number(e.eventId), eventType: String(e.eventType).replace(/^EVENT_TYPE_/, ""), eventTime: isoOf(e.eventTime) ?? "", ...(name ? { name } : {}), ...(summary ? { summary } : {}), attributes };
  });
}

/**
 * A history event's summary (Temporal user metadata: a JSON string payload), decoded with the payload
 * codec first; undefined when there is none or it cannot be read (not JSON, or encrypted with a key
 * this data directory does not hold).
 */
async function summaryText(codec: PayloadCodec, payload: Payload | null | undefined): Promise<string | undefined> {
  if (!payload?.data?.length) return undefined;
  try {
    const [decoded] = await codec.decode([payload as Payload]);
    return String(JSON.parse(Buffer.from(decoded!.data!).toString("utf8")));
  } catch {
    return undefined;
  }
}

/**
 * The name a `MARKER_RECORDED` history event shows: a local activity's type (`recordWorkflowEvent`, as an
 * activity's would be) or `patch <id>` for a patch marker; undefined for anything else.
 * @param attributes the event's `markerRecordedEventAttributes` as `History.toObject` gives them (bytes as base64)
 */
function markerName(attributes: Record<string, any>): string | undefined {
  const json = (key: string) => {
    const data = attributes.details?.[key]?.payloads?.[0]?.data as string | undefined;
    try {
      return data ? (JSON.parse(Buffer.from(data, "base64").toString("utf8")) as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };
  if (attributes.markerName === "core_local_activity") return typeof json("data")?.activity_type === "string" ? String(json("data")!.activity_type) : undefined;
  if (attributes.markerName === "core_patch") return typeof json("patch-data")?.id === "string" ? `patch ${String(json("patch-data")!.id)}` : undefined;
  return undefined;
}
