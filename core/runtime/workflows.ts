import * as v from "valibot";
import { WorkflowRunErrorSchema } from "../sdk/records";
import { inject, injectable } from "../di";
import { has, type Principal } from "../auth/permissions";
import { mayAnswer } from "./intervention-assignees";
import { Database } from "../store/db";
import { EventLog } from "../events/log";
import { ProjectRegistry } from "../project/registry";
import { TemporalHost } from "../temporal/host";
import type { Actor } from "../events/catalog";
import { ApiError } from "../errors";
import { newId, nowIso } from "../ids";
import { parseOrThrow } from "../http/validation";
import { ANOTHER_CALLERS_TOKEN, decodeListingToken, encodeListingToken, isTextPair } from "../http/listing-token";
import { PendingActivitySchema, RunLinksSchema, WorkflowTaskFailureSchema, runStateFromRow, type StartRow } from "./run-state";
import { RunStarter } from "./run-starter";
import { temporalClient, temporalCommon } from "../temporal/sdk";
import { decodeHistoryToken, readHistoryPage, type HistoryEvent } from "./run-history";

/** Run states of a workflow run (spec 3: states beyond the events are ours to name). */
export const WORKFLOW_RUN_STATUSES = ["queued", "running", "waiting", "completed", "failed", "cancelled", "timed_out"] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];

/** A node of a run, from its node events. */
export const WorkflowNodeStateSchema = v.object({
  name: v.string(),
  status: v.picklist(["running", "completed", "failed", "cancelled"]),
  startedAt: v.string(),
  finishedAt: v.optional(v.string()),
});
export type WorkflowNodeState = v.InferOutput<typeof WorkflowNodeStateSchema>;

/** An intervention as the API shows it. */
export const InterventionStateSchema = v.object({
  id: v.string(),
  runId: v.string(),
  workflowId: v.string(),
  name: v.string(),
  prompt: v.string(),
  assignees: v.object({ identities: v.optional(v.array(v.string())), permission: v.optional(v.string()) }),
  answerSchema: v.optional(v.unknown()),
  status: v.picklist(["open", "submitted", "cancelled", "expired"]),
  requestedAt: v.string(),
  expiresAt: v.optional(v.string()),
  resolvedAt: v.optional(v.string()),
  answer: v.optional(v.unknown()),
  by: v.optional(v.object({ type: v.string(), id: v.string() })),
  reason: v.optional(v.string()),
});
export type InterventionState = v.InferOutput<typeof InterventionStateSchema>;

/** A run as the search lists it (`GET /api/workflow-runs`). */
export type RunSummary = { runId: string; workflowId: string; status: string; startedAt: string; finishedAt?: string };

/** Where a run search continues: runs started before `at`, or at `at` and not among `seen` (run ids). */
export interface RunSearchPosition {
  at: string;
  seen: string[];
}

/** A run search's filters ({@link WorkflowRuns.search}); `after` continues a search from its last page. */
export interface RunSearch {
  workflowIds: string[];
  status?: string;
  startedAfter?: string;
  startedBefore?: string;
  pageSize: number;
  after?: RunSearchPosition;
}

/** The state of a workflow run (`GET /api/workflow-runs/:runId`). */
export const WorkflowRunStateSchema = v.object({
  runId: v.string(),
  workflowId: v.string(),
  status: v.picklist(WORKFLOW_RUN_STATUSES),
  input: v.unknown(),
  result: v.optional(v.unknown()),
  error: v.optional(WorkflowRunErrorSchema),
  queuedAt: v.string(),
  startedAt: v.optional(v.pipe(v.string(), v.description("When Temporal started the run (as the run list shows it); absent while the run is queued"))),
  finishedAt: v.optional(v.string()),
  nodes: v.array(WorkflowNodeStateSchema),
  interventions: v.array(InterventionStateSchema),
  pendingActivities: v.optional(v.array(PendingActivitySchema)),
  workflowTaskFailure: v.optional(WorkflowTaskFailureSchema),
  links: RunLinksSchema,
});
export type WorkflowRunState = v.InferOutput<typeof WorkflowRunStateSchema>;

/** A run found by {@link WorkflowRuns.search}. */
export const WorkflowRunSummarySchema = v.object({
  runId: v.string(),
  workflowId: v.string(),
  status: v.pipe(
    v.picklist(["running", "completed", "failed", "cancelled", "timed_out"]),
    v.description("As Temporal's visibility knows it: a queued or waiting run is `running` here (read the run for its exact status)"),
  ),
  startedAt: v.string(),
  finishedAt: v.optional(v.string()),
});

interface InterventionRow {
  id: string;
  run_id: string;
  workflow_id: string;
  name: string;
  prompt: string;
  assignees: string;
  answer_schema: string | null;
  status: InterventionState["status"];
  requested_at: string;
  expires_at: string | null;
  resolved_at: string | null;
  answer: string | null;
  resolved_by: string | null;
  reason: string | null;
}

function toIntervention(r: InterventionRow): InterventionState {
  return {
    id: r.id,
    runId: r.run_id,
    workflowId: r.workflow_id,
    name: r.name,
    prompt: r.prompt,
    assignees: JSON.parse(r.assignees),
    ...(r.answer_schema ? { answerSchema: JSON.parse(r.answer_schema) } : {}),
    status: r.status,
    requestedAt: r.requested_at,
    ...(r.expires_at ? { expiresAt: r.expires_at } : {}),
    ...(r.resolved_at ? { resolvedAt: r.resolved_at } : {}),
    ...(r.answer ? { answer: JSON.parse(r.answer) } : {}),
    ...(r.resolved_by ? { by: JSON.parse(r.resolved_by) } : {}),
    ...(r.reason ? { reason: r.reason } : {}),
  };
}

/** `s` as a string literal of a Temporal visibility query (quotes dropped: ids and types never hold one). */
const visibilityLiteral = (s: string) => `'${s.replace(/'/g, "")}'`;

/**
 * The workflow ids that have runs in the store, one index seek each (`workflow_runs_by_workflow`,
 * migration 020: a recursive walk from each id to the next, where `SELECT DISTINCT` read every run).
 */
export const WORKFLOW_IDS_WITH_RUNS = `WITH RECURSIVE ids(id) AS (
  SELECT min(workflow_id) FROM workflow_runs
  UNION ALL SELECT (SELECT min(workflow_id) FROM workflow_runs WHERE workflow_id > ids.id) FROM ids WHERE ids.id IS NOT NULL
) SELECT id FROM ids WHERE id IS NOT NULL`;

/** Open interventions after a position `(requested_at, id)`, oldest first: parameters requested_at, id, limit (migration 022). */
export const OPEN_INTERVENTIONS_PAGE = "SELECT * FROM interventions WHERE status = 'open' AND (requested_at, id) > (?, ?) ORDER BY requested_at, id LIMIT ?";
/** The first page of {@link OPEN_INTERVENTIONS_PAGE}: parameter limit. */
export const OPEN_INTERVENTIONS_FIRST_PAGE = "SELECT * FROM interventions WHERE status = 'open' ORDER BY requested_at, id LIMIT ?";
/** How many interventions are open and when the oldest was requested: read from `interventions_open_by_time` alone (a covering scan, migration 022). */
export const OPEN_INTERVENTIONS_SUMMARY = "SELECT count(*) AS open, min(requested_at) AS oldest FROM interventions WHERE status = 'open'";

/**
 * Workflow runs over Temporal (spec 4.1, 4.3): a run is a Temporal execution whose workflow id is the
 * runId and whose workflow type is the designer's workflow id.
 */
@injectable()
export class WorkflowRuns {
  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(ProjectRegistry) private readonly project: ProjectRegistry,
    @inject(TemporalHost) private readonly temporal: TemporalHost,
    @inject(RunStarter) private readonly starter: RunStarter,
  ) {}

  private host(): TemporalHost {
    return this.temporal;
  }

  /**
   * Queues a run (spec 4.3): validates the input, then ONE transaction writes the run row
   * (`start_status` pending) and `workflow.run.queued`; the answer follows the commit. The
   * {@link RunStarter} starts it on Temporal afterwards (workflow id = runId, type = the workflow id), so
   * the answer never waits for Temporal and a Temporal outage leaves runs queued rather than refused.
   * Sending the same `runId` again answers the same run without queuing another.
   * @throws {ApiError} not_found (workflow), invalid_request (input), conflict (runId of a run of another
   *   workflow, or of a run with another input), shutting_down (nothing is queued once shutdown began)
   */
  async start(workflowId: string, input: unknown, actor: Actor | undefined, runId = newId("run")): Promise<{ runId: string }> {
    if (!this.starter.accepting) throw new ApiError("shutting_down", "The server is shutting down; the run was not queued");
    const definition = this.project.workflow(workflowId);
    const parsed = parseOrThrow(definition.input, input ?? {}, "input");
    const queued = this.events.prepare([{ type: "workflow.run.queued", payload: { workflowId, runId }, idempotencyKey: `${runId}:queued`, correlationId: runId, actor }]);
    const inserted = await this.db.transaction(async (tx) => {
      const { changes } = await tx.run("INSERT INTO workflow_runs (run_id, workflow_id, input, actor, requested_at, start_status) VALUES (?, ?, ?, ?, ?, 'pending') ON CONFLICT (run_id) DO NOTHING", [runId, workflowId, JSON.stringify(parsed), actor ? JSON.stringify(actor) : null, nowIso()]);
      if (changes === 0) {
        const row = (await tx.get<{ workflow_id: string; input: string }>("SELECT workflow_id, input FROM workflow_runs WHERE run_id = ?", [runId]))!;
        if (row.workflow_id !== workflowId) throw new ApiError("conflict", `runId ${runId} belongs to a run of ${row.workflow_id}`);
        // a retry sends the same input; another input under the same runId is another run, not this one again
        if (row.input !== JSON.stringify(parsed)) throw new ApiError("conflict", `runId ${runId} belongs to a run with another input; send the same input to read it again, or another runId for a new run`, { runId });
        return false;
      }
      // the queued event's key is looked up like any other: a new run row does not make it unused (a
      // client may append an event with that key through POST /api/events)
      await this.events.writeInTx(tx, queued);
      return true;
    });
    if (inserted) {
      this.starter.poke("workflow_runs", runId);
      // the drain to the stream is not awaited: the answer does not need it (under load it waited up to its 250 ms cap)
      void this.events.drain();
    }
    return { runId };
  }

  /** The workflow id of a recorded run. @throws {ApiError} not_found */
  async workflowOf(runId: string): Promise<string> {
    const row = await this.db.get<{ workflow_id: string }>("SELECT workflow_id FROM workflow_runs WHERE run_id = ?", [runId]);
    if (!row) throw new ApiError("not_found", `No workflow run "${runId}"`);
    return row.workflow_id;
  }

  /** Reads a run's state from Temporal and its recorded events. @throws {ApiError} not_found */
  async get(runId: string): Promise<WorkflowRunState> {
    const row = await this.db.get<{ workflow_id: string; input: string } & StartRow>("SELECT workflow_id, input, requested_at, start_status, start_error, start_finished_at FROM workflow_runs WHERE run_id = ?", [runId]);
    if (!row) throw new ApiError("not_found", `No workflow run "${runId}"`);
    const events = await this.events.read({ runId, topics: ["workflows"], limit: 1000 });
    const nodes = new Map<number, WorkflowNodeState>();
    for (const e of events) {
      const n = Number(/:node:(\d+):/.exec(e.idempotencyKey ?? "")?.[1]);
      if (!n) continue;
      if (e.type === "workflow.run.node.started") nodes.set(n, { name: String(e.payload.node), status: "running", startedAt: e.occurredAt });
      else if (e.type === "workflow.run.node.finished" && nodes.has(n)) Object.assign(nodes.get(n)!, { status: e.payload.status, finishedAt: e.occurredAt });
    }
    const interventions = await this.interventions(runId);
    const { status, ...base } = await runStateFromRow(this.host(), runId, row, events.some((e) => e.type === "workflow.run.started"));
    return {
      runId,
      workflowId: row.workflow_id,
      status: status === "running" && interventions.some((i) => i.status === "open") ? "waiting" : status,
      input: JSON.parse(row.input),
      ...base,
      nodes: [...nodes.values()],
      interventions,
    };
  }

  /** A run's interventions, oldest first. */
  async interventions(runId: string): Promise<InterventionState[]> {
    const rows = await this.db.all<InterventionRow>("SELECT * FROM interventions WHERE run_id = ? ORDER BY requested_at, id", [runId]);
    return rows.map(toIntervention);
  }

  /**
   * Open interventions across runs that the principal may answer, oldest first, a page at a time
   * (`GET /api/interventions`, spec 4.1): keyset on `(requested_at, id)` along
   * `interventions_open_by_time` (migration 022), read {@link WorkflowRuns.OPEN_INTERVENTIONS_CHUNK}
   * rows at a time until the page is full, since who may answer is decided here, not in SQL. One page
   * reads at most {@link WorkflowRuns.OPEN_INTERVENTIONS_READS_PER_PAGE} times: a caller who may answer
   * few of many open interventions gets a shorter page (even an empty one) with a `nextPageToken`.
   * @param page.pageSize 1 to 200; `page.nextPageToken` from the page before (bound to the caller)
   * @throws {ApiError} invalid_request for a token this listing did not issue (another caller's included)
   */
  async openFor(principal: Principal, page: { pageSize: number; nextPageToken?: string }): Promise<{ data: InterventionState[]; nextPageToken?: string }> {
    const filters = JSON.stringify({ caller: principal.id });
    let after = page.nextPageToken === undefined ? undefined : decodeListingToken(page.nextPageToken, filters, isTextPair, ANOTHER_CALLERS_TOKEN);
    const data: InterventionState[] = [];
    let last: InterventionRow | undefined;
    let reads = 0;
    for (;;) {
      const rows = await this.db.all<InterventionRow>(after ? OPEN_INTERVENTIONS_PAGE : OPEN_INTERVENTIONS_FIRST_PAGE, [...(after ?? []), WorkflowRuns.OPEN_INTERVENTIONS_CHUNK]);
      for (const row of rows) {
        const intervention = toIntervention(row);
        if (!mayAnswer(principal, intervention.assignees)) continue;
        // one more than the page: there is a next page, and it starts after the page's last
        if (data.length === page.pageSize) return { data, nextPageToken: encodeListingToken([last!.requested_at, last!.id], filters) };
        data.push(intervention);
        last = row;
      }
      if (rows.length < WorkflowRuns.OPEN_INTERVENTIONS_CHUNK) return { data };
      after = [rows.at(-1)!.requested_at, rows.at(-1)!.id];
      // a caller who may answer few of many open interventions: the page ends where the reads stopped
      if (++reads === WorkflowRuns.OPEN_INTERVENTIONS_READS_PER_PAGE) return { data, nextPageToken: encodeListingToken(after, filters) };
    }
  }

  /**
   * How many interventions are open, for anyone, and when the oldest of them was requested (an ISO
   * timestamp; undefined when none is open): the metrics' `svc_interventions_open`. One covering scan
   * of `interventions_open_by_time`, which holds the open ones only: a few ms per 100,000 open.
   */
  async openInterventionsSummary(): Promise<{ open: number; oldestRequestedAt?: string }> {
    const row = await this.db.get<{ open: number; oldest: string | null }>(OPEN_INTERVENTIONS_SUMMARY);
    return { open: row?.open ?? 0, ...(row?.oldest ? { oldestRequestedAt: row.oldest } : {}) };
  }

  /** How many open interventions {@link openFor} reads at a time while filling a page. */
  static OPEN_INTERVENTIONS_CHUNK = 200;
  /** How many reads of {@link WorkflowRuns.OPEN_INTERVENTIONS_CHUNK} one page of {@link openFor} makes at most. */
  static OPEN_INTERVENTIONS_READS_PER_PAGE = 5;

  private async openIntervention(runId: string, name: string, principal: Principal, action: "submit" | "cancel"): Promise<InterventionState> {
    const rows = await this.db.all<InterventionRow>("SELECT * FROM interventions WHERE run_id = ? AND name = ? ORDER BY requested_at DESC, id DESC LIMIT 1", [runId, name]);
    const current = rows[0] ? toIntervention(rows[0]) : undefined;
    if (!current) throw new ApiError("not_found", `Run ${runId} has no intervention "${name}"`);
    if (!mayAnswer(principal, current.assignees) && !(action === "cancel" && has(principal, `run:workflow:${current.workflowId}`))) {
      throw new ApiError("forbidden", `This identity may not ${action} intervention "${name}"`, { assignees: current.assignees });
    }
    if (current.status !== "open") throw new ApiError("conflict", `Intervention "${name}" is already ${current.status}`, { status: current.status });
    return current;
  }

  private async update(runId: string, update: "submitIntervention" | "cancelIntervention", args: unknown): Promise<void> {
    try {
      await this.host().client.workflow.getHandle(runId).executeUpdate(update, { args: [args] as [unknown] });
    } catch (err) {
      const { WorkflowNotFoundError, WorkflowUpdateFailedError } = temporalClient();
      const { ApplicationFailure } = temporalCommon();
      const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === "InvalidAnswer") throw new ApiError("invalid_request", cause.message, { issues: cause.details?.[0] });
      if (cause instanceof ApplicationFailure && cause.type === "NotOpen") throw new ApiError("conflict", cause.message);
      if (err instanceof WorkflowNotFoundError) throw new ApiError("conflict", `Run ${runId} is no longer running`);
      // An update Temporal dropped (its workflow task was refused: the run was closing, a cancel arrived) was
      // never applied: a run's update writes its outcome only after Temporal accepted it. When the run has
      // ended meanwhile, or the intervention is no longer open, that is the answer.
      const ended = await this.endedInstead(runId, args);
      if (ended) throw new ApiError("conflict", ended);
      throw new ApiError("unavailable", `Temporal did not take the update: ${(err as Error).message}`);
    }
  }

  /** Why an update that Temporal did not take cannot be taken any more (run closed, intervention resolved), else undefined. */
  private async endedInstead(runId: string, args: unknown): Promise<string | undefined> {
    const interventionId = (args as { interventionId?: string }).interventionId;
    const row = interventionId ? await this.db.get<{ status: string; name: string }>("SELECT status, name FROM interventions WHERE id = ?", [interventionId]) : undefined;
    if (row && row.status !== "open") return `Intervention "${row.name}" is already ${row.status}`;
    const closed = await this.closedState(runId).catch(() => undefined);
    return closed ? `Run ${runId} is no longer running (${closed})` : undefined;
  }

  /**
   * How the run's Temporal execution ended, in words (`completed`, `failed`, `timed out`, …), or undefined
   * while it runs. @throws what the client's `describe` throws (WorkflowNotFoundError, transport errors)
   */
  private async closedState(runId: string): Promise<string | undefined> {
    const { status } = await this.host().client.workflow.getHandle(runId).describe();
    return status.name === "RUNNING" ? undefined : status.name.toLowerCase().replace(/_/g, " ");
  }

  /**
   * Submits an answer (a Temporal update whose validator checks the answer; a refused one leaves no
   * trace in history). Answers the intervention once the update completed: in runs started since
   * `svc-durable-decisions`, once the submission is written (events and index row).
   * @throws {ApiError} not_found, forbidden (not an assignee), conflict (not open, or the run ended or
   *   was cancelled first: nothing of the answer was recorded), invalid_request (answer fails the schema),
   *   unavailable (Temporal did not take it and the intervention is still open: nothing was recorded)
   */
  async submit(runId: string, name: string, answer: unknown, principal: Principal): Promise<InterventionState> {
    const current = await this.openIntervention(runId, name, principal, "submit");
    await this.update(runId, "submitIntervention", { name, interventionId: current.id, answer, by: { type: principal.type, id: principal.id } });
    return (await this.recorded(current.id, "submitted")) ?? { ...current, status: "submitted", answer, by: { type: principal.type, id: principal.id }, resolvedAt: nowIso() };
  }

  /**
   * The intervention as recorded once it ended `status` (answer as validated, `resolvedAt`, `by`), or
   * undefined when its row does not say so yet (runs started before `svc-durable-decisions` write it after
   * the update completes: the caller composes it then).
   */
  private async recorded(interventionId: string, status: "submitted" | "cancelled"): Promise<InterventionState | undefined> {
    const row = await this.db.get<InterventionRow>("SELECT * FROM interventions WHERE id = ?", [interventionId]);
    return row?.status === status ? toIntervention(row) : undefined;
  }

  /** Cancels an open intervention (assignees, or holders of `run:workflow:<id>`). */
  async cancelIntervention(runId: string, name: string, principal: Principal, reason?: string): Promise<InterventionState> {
    const current = await this.openIntervention(runId, name, principal, "cancel");
    await this.update(runId, "cancelIntervention", { name, interventionId: current.id, by: { type: principal.type, id: principal.id }, ...(reason ? { reason } : {}) });
    return (await this.recorded(current.id, "cancelled")) ?? { ...current, status: "cancelled", by: { type: principal.type, id: principal.id }, ...(reason ? { reason } : {}), resolvedAt: nowIso() };
  }

  /**
   * Requests cancellation of a run; its open interventions end `cancelled`. A run not started on
   * Temporal yet ends `cancelled` at once (with `workflow.run.finished`) and is never started: the
   * decision is taken while the starter holds off that run.
   * @throws {ApiError} conflict (the run is not running), unavailable (Temporal did not cancel it)
   */
  async cancel(runId: string): Promise<void> {
    if (await this.starter.exclusive("workflow_runs", runId, () => this.starter.end("workflow_runs", runId, { status: "cancelled" }))) return;
    const row = await this.db.get<{ start_status: string }>("SELECT start_status FROM workflow_runs WHERE run_id = ?", [runId]);
    if (row && row.start_status !== "started") throw new ApiError("conflict", `Run ${runId} is not running (${row.start_status === "cancelled" ? "cancelled" : "failed"} before it started)`);
    let closed: string | undefined;
    try {
      // Temporal takes a cancel request for a closed execution without an error: ask first (a run that
      // closes between the two calls ignores the request)
      closed = await this.closedState(runId);
      if (!closed) await this.host().client.workflow.getHandle(runId).cancel();
    } catch (err) {
      if (err instanceof temporalClient().WorkflowNotFoundError) throw new ApiError("conflict", `Run ${runId} is not running`);
      throw new ApiError("unavailable", `Temporal did not cancel the run: ${(err as Error).message}`);
    }
    if (closed) throw new ApiError("conflict", `Run ${runId} is not running (it is ${closed})`, { runId });
  }

  /**
   * The run's Temporal history, a page at a time (`GET /api/workflow-runs/:runId/history`; read by
   * {@link readHistoryPage}, ./run-history.ts); empty for a run not started on Temporal.
   * @param page.pageSize 1 to 1000 events; `page.nextPageToken` from the page before
   * @throws {ApiError} not_found when Temporal does not know the run; invalid_request for a token this
   *   listing did not issue (another run's included), or one Temporal no longer takes; unavailable when
   *   Temporal does not answer
   */
  async history(runId: string, page: { pageSize: number; nextPageToken?: string }): Promise<{ runId: string; events: HistoryEvent[]; nextPageToken?: string }> {
    const position = page.nextPageToken === undefined ? undefined : decodeHistoryToken(runId, page.nextPageToken);
    // a run not started on Temporal has no history (and its id may name another execution: never read that)
    const row = await this.db.get<{ start_status: string; requested_at: string }>("SELECT start_status, requested_at FROM workflow_runs WHERE run_id = ?", [runId]);
    if (row && row.start_status !== "started") return { runId, events: [] };
    return { runId, ...(await readHistoryPage(this.host(), runId, { pageSize: page.pageSize, position, token: page.nextPageToken, maxReads: WorkflowRuns.HISTORY_READS_PER_PAGE, requestedAt: row?.requested_at })) };
  }

  /** How many of Temporal's history pages {@link history} reads for one page at most ({@link readHistoryPage}'s `maxReads`). */
  static HISTORY_READS_PER_PAGE = 20;

  /**
   * Runs of this runtime's task queue by workflow, status and start time, newest first: Temporal
   * visibility for runs started there, and the store for runs that are not (still waiting for the
   * {@link RunStarter}: `running`; refused or cancelled before their start: `failed`, `cancelled`),
   * whose `startedAt` is when they were queued. At most `pageSize` runs, and `next` when there are
   * more: the position to pass as `after` for the following page (keyset on `startedAt`, with the ids
   * already listed at that instant, so runs started in the same ms are neither repeated nor skipped).
   * @param q.status one of the API's statuses (queued and waiting are reported as running)
   */
  async search(q: RunSearch): Promise<{ data: RunSummary[]; next?: RunSearchPosition }> {
    if (q.workflowIds.length === 0) return { data: [] };
    // a page past the position: what started before it, or at it and not listed yet (one page more of
    // each source than asked, to skip those listed)
    const extra = q.after ? q.after.seen.length : 0;
    const found = await this.searchFrom({ ...q, pageSize: q.pageSize + extra + 1 });
    const after = q.after;
    const rest = after ? found.filter((r) => r.startedAt < after.at || (r.startedAt === after.at && !after.seen.includes(r.runId))) : found;
    const data = rest.slice(0, q.pageSize);
    if (rest.length <= q.pageSize) return { data };
    const at = data.at(-1)!.startedAt;
    const seen = [...(after?.at === at ? after.seen : []), ...data.filter((r) => r.startedAt === at).map((r) => r.runId)];
    return { data, next: { at, seen } };
  }

  /**
   * The workflows this data dir has runs of that the project no longer defines (renamed or removed), with
   * how many of those runs are still open on Temporal: such a run cannot go on (its next workflow task
   * fails, "This worker has no workflow"), and no identity holds `run:workflow:<id>` for it unless the
   * project still grants it. Read from the store's run rows and Temporal's visibility (one query).
   * @throws when Temporal does not answer
   */
  async openRunsOfUndefinedWorkflows(): Promise<Array<{ workflowId: string; open: number; runIds: string[] }>> {
    const defined = this.project.workflows;
    const ids = (await this.db.all<{ id: string }>(WORKFLOW_IDS_WITH_RUNS)).map((r) => r.id).filter((id) => !defined.has(id));
    if (ids.length === 0) return [];
    const host = this.host();
    const byWorkflow = new Map<string, string[]>();
    for await (const w of host.client.workflow.list({ query: `TaskQueue = ${visibilityLiteral(host.taskQueue)} AND ExecutionStatus = 'Running' AND WorkflowType IN (${ids.map(visibilityLiteral).join(", ")})` })) {
      byWorkflow.set(w.type, [...(byWorkflow.get(w.type) ?? []), w.workflowId]);
    }
    return [...byWorkflow].map(([workflowId, runIds]) => ({ workflowId, open: runIds.length, runIds }));
  }

  /** Runs newest first from Temporal and the store (see {@link WorkflowRuns.search}), at or before `q.after.at`. */
  private async searchFrom(q: RunSearch): Promise<RunSummary[]> {
    const host = this.host();
    const clauses = [`TaskQueue = ${visibilityLiteral(host.taskQueue)}`];
    // the store first: a run started between the two reads is then in both (Temporal's answer wins), never in neither
    const unstarted = await this.unstartedRuns(q);
    clauses.push(`WorkflowType IN (${q.workflowIds.map(visibilityLiteral).join(", ")})`);
    const statuses: Record<string, string> = { running: "Running", queued: "Running", waiting: "Running", completed: "Completed", failed: "Failed", cancelled: "Canceled", timed_out: "TimedOut" };
    if (q.status) clauses.push(`ExecutionStatus = ${visibilityLiteral(statuses[q.status] ?? "Running")}`);
    if (q.startedAfter) clauses.push(`StartTime >= ${visibilityLiteral(new Date(q.startedAfter).toISOString())}`);
    if (q.startedBefore) clauses.push(`StartTime < ${visibilityLiteral(new Date(q.startedBefore).toISOString())}`);
    // Temporal keeps start times finer than the ms of `startedAt`: everything within the position's ms
    if (q.after) clauses.push(`StartTime < ${visibilityLiteral(new Date(Date.parse(q.after.at) + 1).toISOString())}`);
    const out: RunSummary[] = [];
    for await (const w of host.client.workflow.list({ query: clauses.join(" AND "), pageSize: q.pageSize })) {
      const name = w.status.name;
      out.push({ runId: w.workflowId, workflowId: w.type, status: name === "RUNNING" ? "running" : name === "COMPLETED" ? "completed" : name === "CANCELLED" || name === "TERMINATED" ? "cancelled" : name === "TIMED_OUT" ? "timed_out" : "failed", startedAt: w.startTime.toISOString(), ...(w.closeTime ? { finishedAt: w.closeTime.toISOString() } : {}) });
      if (out.length >= q.pageSize) break;
    }
    const listed = new Set(out.map((r) => r.runId));
    return [...out, ...unstarted.filter((r) => !listed.has(r.runId))].sort((a, b) => (a.startedAt < b.startedAt ? 1 : a.startedAt > b.startedAt ? -1 : a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0)).slice(0, q.pageSize);
  }

  /** {@link WorkflowRuns.search}'s runs that Temporal does not hold: not started yet, or ended before their start. */
  private async unstartedRuns(q: RunSearch): Promise<RunSummary[]> {
    const startStatuses: Record<string, string[]> = { running: ["pending"], queued: ["pending"], waiting: ["pending"], failed: ["failed"], cancelled: ["cancelled"], completed: [], timed_out: [] };
    const wanted = q.status ? (startStatuses[q.status] ?? []) : ["pending", "failed", "cancelled"];
    if (wanted.length === 0) return [];
    const where = [`start_status IN (${wanted.map(() => "?").join(", ")})`, `workflow_id IN (${q.workflowIds.map(() => "?").join(", ")})`];
    const params: Array<string | number> = [...wanted, ...q.workflowIds];
    if (q.startedAfter) {
      where.push("requested_at >= ?");
      params.push(new Date(q.startedAfter).toISOString());
    }
    if (q.startedBefore) {
      where.push("requested_at < ?");
      params.push(new Date(q.startedBefore).toISOString());
    }
    if (q.after) {
      where.push("requested_at <= ?");
      params.push(q.after.at);
    }
    const rows = await this.db.all<{ run_id: string; workflow_id: string; start_status: string; requested_at: string; start_finished_at: string | null }>(
      `SELECT run_id, workflow_id, start_status, requested_at, start_finished_at FROM workflow_runs WHERE ${where.join(" AND ")} ORDER BY requested_at DESC LIMIT ?`,
      [...params, q.pageSize],
    );
    return rows.map((r) => ({
      runId: r.run_id,
      workflowId: r.workflow_id,
      status: r.start_status === "pending" ? "running" : r.start_status,
      startedAt: r.requested_at,
      ...(r.start_finished_at ? { finishedAt: r.start_finished_at } : {}),
    }));
  }
}
