/**
 * A run's Temporal history as `GET /api/workflow-runs/:runId/history` answers it (spec 4.1): each event
 * with its type, time, the name of what it runs (activity, local activity, timer, update, patch) and the
 * designer's summary, decoded with the payload codec.
 */
import * as v from "valibot";
import type { Payload, PayloadCodec } from "@temporalio/common";
import type { temporal } from "@temporalio/proto";
import { isoOf } from "../temporal/execution";
import { temporalClient, temporalProto } from "../temporal/sdk";
import type { TemporalHost } from "../temporal/host";
import { ApiError } from "../errors";
import { decodeListingToken, encodeListingToken } from "../http/listing-token";

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

/** gRPC status codes Temporal answers with (grpc/status: NOT_FOUND 5, INVALID_ARGUMENT 3). */
const GRPC_NOT_FOUND = 5;
const GRPC_INVALID_ARGUMENT = 3;

/**
 * A history position ({@link readHistoryPage}): Temporal's page token as base64 ("" for the first
 * page), the size that page was asked for (0: not resumed inside it) and how many of its events were answered.
 */
export type HistoryPosition = [string, number, number];
const isHistoryPosition = (x: unknown): x is HistoryPosition =>
  Array.isArray(x) && x.length === 3 && typeof x[0] === "string" && /^[A-Za-z0-9+/]*=*$/.test(x[0]) && Number.isSafeInteger(x[1]) && x[1] >= 0 && x[1] <= 1000 && Number.isSafeInteger(x[2]) && x[2] >= 0 && x[2] <= 10_000_000 && (x[1] > 0 || x[2] === 0);
/** The filters a history token is bound to: its run. */
const historyFilters = (runId: string) => JSON.stringify({ runId });

/**
 * The position a `nextPageToken` of `runId`'s history names.
 * @throws {ApiError} invalid_request for a token this listing did not issue (another run's included)
 */
export function decodeHistoryToken(runId: string, token: string): HistoryPosition {
  return decodeListingToken(token, historyFilters(runId), isHistoryPosition, { refusal: "nextPageToken belongs to another run's history: send one this run's history answered" });
}

/**
 * A page of a run's Temporal history from `position` (its start when undefined): Temporal's own pages
 * (`GetWorkflowExecutionHistory`) read one after the other until `pageSize` events or the end.
 * Temporal sizes its pages in batches (the events one workflow task wrote), never split, so a page of
 * its may hold more events than the page here still lacks: the next position is then Temporal's token
 * of that page, the size it was asked for (the same request answers the same batches again) and how
 * many of its events were answered. At most `maxReads` of Temporal's pages are read: a page may hold
 * fewer events than `pageSize` and still have a `nextPageToken`, and the last page may be empty.
 * @param page.token the client's token, named in refusals
 * @param page.requestedAt when svc recorded the run (ISO 8601), when it did: a run Temporal does not
 *   know is then told apart from one its retention deleted ({@link TemporalHost.forgottenRun})
 * @throws {ApiError} not_found when Temporal does not know the run; invalid_request for a position
 *   Temporal refuses, or one past the events of its page; unavailable when Temporal does not answer
 */
export async function readHistoryPage(host: TemporalHost, runId: string, page: { pageSize: number; position?: HistoryPosition; token?: string; maxReads: number; requestedAt?: string }): Promise<{ events: HistoryEvent[]; nextPageToken?: string }> {
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let [from, asked, skip] = page.position ?? ["", 0, 0];
  let next: HistoryPosition | undefined;
  for (let reads = 0; ; reads++) {
    if (reads === page.maxReads) {
      next = [from, 0, 0];
      break;
    }
    // a page resumed inside Temporal's page is asked for with that page's size: the same batches
    const size = asked || page.pageSize - events.length;
    const token = from ? Buffer.from(from, "base64") : undefined;
    let response;
    try {
      response = await host.client.workflowService.getWorkflowExecutionHistory({ namespace: host.namespace, execution: { workflowId: runId }, maximumPageSize: size, nextPageToken: token });
    } catch (err) {
      const { WorkflowNotFoundError, isGrpcServiceError } = temporalClient();
      const grpc = isGrpcServiceError(err) ? err : undefined;
      if (token && (grpc?.code === GRPC_INVALID_ARGUMENT || grpc?.code === GRPC_NOT_FOUND)) throw new ApiError("invalid_request", `Temporal refused this nextPageToken (${grpc.details}): read the history from its start again`, { nextPageToken: page.token });
      if (err instanceof WorkflowNotFoundError || grpc?.code === GRPC_NOT_FOUND) throw new ApiError("not_found", host.forgottenRun(runId, page.requestedAt));
      throw new ApiError("unavailable", `Temporal did not answer: ${(err as Error).message}`);
    }
    const got = response.history?.events ?? [];
    if (skip > got.length) throw new ApiError("invalid_request", "nextPageToken points past the events of its page: send the one a page answered", { nextPageToken: page.token });
    const rest = got.slice(skip);
    const taken = rest.slice(0, page.pageSize - events.length);
    events.push(...taken);
    const after = response.nextPageToken?.length ? Buffer.from(response.nextPageToken).toString("base64") : undefined;
    if (taken.length < rest.length) next = [from, size, skip + taken.length];
    else if (after && events.length === page.pageSize) next = [after, 0, 0];
    if (next || !after) break;
    [from, asked, skip] = [after, 0, 0];
  }
  return { events: await historyEvents({ events }, host.payloadCodec), ...(next ? { nextPageToken: encodeListingToken(next, historyFilters(runId)) } : {}) };
}
