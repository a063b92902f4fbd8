import * as v from "valibot";
import { inject, injectable } from "../di";
import { Database, type SqlWriter } from "../store/db";
import { ProjectRegistry } from "../project/registry";
import { EventLog } from "../events/log";
import { EVENT_STREAM, type EventStream } from "../events/stream";
import type { DomainEventEnvelope, StoredDomainEvent, Topic } from "../events/catalog";
import { Lifecycle } from "../lifecycle";
import { LOGGER, type Logger } from "../logger";
import { CONFIG, type Config } from "../config";
import { compileObjectQuery } from "../ontology/query";
import { matchesWhere } from "../ontology/match";
import { isApiError, messageOf } from "../errors";
import { nowIso } from "../ids";
import { SerialPass } from "../serial-pass";
import { SubjectSchema } from "../sdk/records";
import type { RuleDefinition } from "../sdk/connector";

/** One subject a rule currently holds triggered (spec 2.4 `rule.triggered` not yet resolved). */
export const TriggeredSubjectSchema = v.object({
  subject: SubjectSchema,
  /** occurredAt of the `rule.triggered` event. */
  since: v.string(),
  /** id of the `rule.triggered` event. */
  eventId: v.string(),
});

/** A rule's definition as the API shows it (spec 2.4; `GET /api/project` `rules`, the base of `GET /api/rules`). */
export const RuleInfoSchema = v.object({
  id: v.string(),
  connectorId: v.string(),
  title: v.optional(v.string()),
  description: v.optional(v.string()),
  objectTypeId: v.string(),
  /** The condition, in the filter language of `POST /api/objects/query`. */
  where: v.record(v.string(), v.unknown()),
});
export type RuleInfo = v.InferOutput<typeof RuleInfoSchema>;

/** A rule as `GET /api/rules` answers it: its definition ({@link RuleInfoSchema}) and the subjects currently triggered. */
export const RuleStateSchema = v.object({
  ...RuleInfoSchema.entries,
  triggered: v.array(TriggeredSubjectSchema),
});
export type RuleState = v.InferOutput<typeof RuleStateSchema>;

/** A rule of the project as `ProjectRegistry.rules()` lists it. */
export interface RegisteredRule {
  id: string;
  connectorId: string;
  definition: RuleDefinition;
}

/**
 * The one mapping of a registered rule to {@link RuleInfo} (spec 2.4): id, connector, title and
 * description when the definition sets them (absent otherwise, never `undefined`), the subject type and
 * the `where` condition as declared. Pure; throws nothing.
 */
export function ruleInfo(rule: RegisteredRule): RuleInfo {
  return {
    id: rule.id,
    connectorId: rule.connectorId,
    ...(rule.definition.title !== undefined ? { title: rule.definition.title } : {}),
    ...(rule.definition.description !== undefined ? { description: rule.definition.description } : {}),
    objectTypeId: rule.definition.objectTypeId,
    where: rule.definition.where as Record<string, unknown>,
  };
}

/** The final state of one object in a commit: its properties, or null once deleted; `event` is the last one about it. */
interface SubjectChange {
  objectTypeId: string;
  primaryId: string;
  properties: Record<string, unknown> | null;
  event: StoredDomainEvent;
}

const CONSUMER = "rules";

/**
 * Evaluates the connectors' rules (spec 2.4 `rule.triggered`, `rule.resolved`) after each ontology
 * commit. It follows the event stream's `objects` topic from a stored checkpoint; per commit (events of
 * one `commitId`), each created, updated or deleted object of a rule's type is evaluated on the commit's
 * final state (the payload's `properties`; deleted = not matching) with {@link matchesWhere}. A subject
 * that starts matching gets `rule.triggered`, one that stops `rule.resolved` (payload `{ ruleId,
 * subject }`; origin `{ kind: "runtime", ruleId }` and no actor: system code, spec 2.3; correlationId and
 * causationId from the object event). The per-(rule, subject) state, the rule events (into the outbox)
 * and the checkpoint are written in ONE transaction, so each commit is evaluated exactly once across
 * crashes and a subject never gets the same event twice in a row.
 *
 * With no checkpoint yet it starts at the oldest retained event. If the checkpoint has expired (pruned
 * while the service was down) it re-evaluates every object of the rules' types against the current
 * rows and continues from the newest event. A rule added later sees only objects touched after it.
 *
 * @throws Error at construction when a rule names an unknown type or property or operator
 */
@injectable()
export class RuleEngine {
  private readonly rules: RegisteredRule[];
  private readonly byType = new Map<string, RegisteredRule[]>();
  private stopped = true;
  private readonly passes = new SerialPass(
    async () => {
      while (!this.stopped && (await this.step()) > 0);
    },
    { stopped: () => this.stopped, onError: (err) => this.log.error({ err }, "rule evaluation failed; it is retried from the stored checkpoint") },
  );
  /**
   * Wakes a pass for appends of `objects` events only (any append after a failed pass, to retry it):
   * the engine reads nothing else, and its checkpoint moves only with them, so under a load without
   * object writes (action runs, webhooks that write nothing) the checkpoint falls behind the stream's
   * in-memory tail and every pass would be a read of SQLite that finds nothing.
   */
  private readonly onAppended = (topics?: ReadonlySet<Topic>) => {
    if (!topics || topics.has("objects") || this.passes.failed) void this.poke();
  };
  /**
   * The stored checkpoint as this engine last read or committed it (undefined: not read yet). The
   * engine is the checkpoint's only writer, so each pass needs no read of it (one reader statement per
   * append saved); it follows only committed transactions (`tx.afterCommit`).
   */
  private checkpoint: { cursor: string | undefined } | undefined;

  constructor(
    @inject(Database) private readonly db: Database,
    @inject(EventLog) private readonly events: EventLog,
    @inject(EVENT_STREAM) private readonly stream: EventStream,
    @inject(ProjectRegistry) project: ProjectRegistry,
    @inject(Lifecycle) lifecycle: Lifecycle,
    @inject(LOGGER) private readonly log: Logger,
    @inject(CONFIG) config: Config,
  ) {
    this.rules = project.rules();
    for (const rule of this.rules) {
      try {
        compileObjectQuery(project.definition, { objectTypeId: rule.definition.objectTypeId, where: rule.definition.where });
      } catch (err) {
        throw new Error(`Rule "${rule.id}" of connector "${rule.connectorId}": ${messageOf(err)}`);
      }
      this.byType.set(rule.definition.objectTypeId, [...(this.byType.get(rule.definition.objectTypeId) ?? []), rule]);
    }
    lifecycle.every(config.outboxRecoveryMs, () => this.poke());
    lifecycle.hook("close", () => this.stop());
  }

  /**
   * Catches up with the stream (awaited), then follows it (each append pokes a pass). Does nothing when
   * the project declares no rules.
   */
  async start(): Promise<void> {
    if (this.rules.length === 0 || !this.stopped) return;
    this.stopped = false;
    this.stream.notifier.on("appended", this.onAppended);
    await this.poke();
  }

  /** Stops following the stream and waits for the pass in progress (its transaction is whole or absent). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stream.notifier.off("appended", this.onAppended);
    await this.passes.idle();
  }

  /**
   * Runs passes until the checkpoint reaches the end of the stream ({@link SerialPass}: concurrent
   * calls share one pass, a call during a pass schedules one more). Never throws: a failed step is
   * logged, leaves nothing written, and is retried by the next append or the recovery timer.
   */
  poke(): Promise<void> {
    return this.passes.poke();
  }

  /**
   * Processes one batch after the checkpoint: evaluates it, then commits the state, the rule events
   * and the new checkpoint in one transaction, then drains the outbox. A batch that is full stops before
   * the commit it ends in (unless that commit fills the whole batch), so a commit is evaluated whole.
   *
   * @returns how many stream events it consumed (0 = caught up)
   */
  async step(limit = 500): Promise<number> {
    this.checkpoint ??= { cursor: (await this.db.get<{ cursor: string }>("SELECT cursor FROM rule_checkpoints WHERE consumer = ?", [CONSUMER]))?.cursor };
    const { cursor } = this.checkpoint;
    let batch: StoredDomainEvent[];
    try {
      batch = await this.stream.read({ afterCursor: cursor, topics: ["objects"], limit });
    } catch (err) {
      if (!isApiError(err) || err.code !== "cursor_expired") throw err;
      await this.reconcile();
      return 1;
    }
    if (batch.length === 0) return 0;
    let take = batch.length;
    const lastCommit = batch[take - 1]!.commitId;
    if (take === limit && lastCommit !== undefined) {
      let i = take;
      while (i > 0 && batch[i - 1]!.commitId === lastCommit) i--;
      if (i > 0) take = i;
    }
    const consumed = batch.slice(0, take);
    await this.db.transaction(async (tx) => {
      const envelopes: DomainEventEnvelope[] = [];
      for (const group of commits(consumed)) {
        for (const change of group.values()) envelopes.push(...(await this.evaluate(tx, change)));
      }
      await this.events.writeInTx(tx, envelopes);
      await this.saveCheckpoint(tx, consumed[consumed.length - 1]!.cursor);
    });
    await this.events.drain();
    return consumed.length;
  }

  /**
   * The rules with their condition and triggered subjects; `visible(objectTypeId)` says which types'
   * subjects the caller may see (the others are left out, spec 5).
   */
  async list(visible: (objectTypeId: string) => boolean): Promise<RuleState[]> {
    const rows = await this.db.all<{ rule_id: string; object_type_id: string; primary_id: string; triggered_at: string; event_id: string }>(
      "SELECT rule_id, object_type_id, primary_id, triggered_at, event_id FROM rule_states ORDER BY rule_id, triggered_at, primary_id",
    );
    return this.rules.map((r) => ({
      ...ruleInfo(r),
      triggered: visible(r.definition.objectTypeId)
        ? rows
            .filter((row) => row.rule_id === r.id && row.object_type_id === r.definition.objectTypeId)
            .map((row) => ({ subject: { kind: "object" as const, objectTypeId: row.object_type_id, primaryId: row.primary_id }, since: row.triggered_at, eventId: row.event_id }))
        : [],
    }));
  }

  /** Evaluates every rule of the change's type on its final state; answers the rule events (state rows written). */
  private async evaluate(tx: SqlWriter, change: SubjectChange): Promise<DomainEventEnvelope[]> {
    const out: DomainEventEnvelope[] = [];
    for (const rule of this.byType.get(change.objectTypeId) ?? []) {
      const matches = change.properties !== null && matchesWhere(rule.definition.where, change.primaryId, change.properties);
      const envelope = await this.transition(tx, rule, change.objectTypeId, change.primaryId, matches, {
        correlationId: change.event.correlationId,
        causationId: change.event.id,
        idempotencyKey: `rule:${rule.id}:${change.event.id}`,
      });
      if (envelope) out.push(envelope);
    }
    return out;
  }

  /** Moves one (rule, subject) to `matches`; answers the event when that is a change, else undefined. */
  private async transition(
    tx: SqlWriter,
    rule: RegisteredRule,
    objectTypeId: string,
    primaryId: string,
    matches: boolean,
    envelope: { correlationId?: string; causationId?: string; idempotencyKey: string },
  ): Promise<DomainEventEnvelope | undefined> {
    const key = [rule.id, objectTypeId, primaryId];
    const was = await tx.get<{ n: number }>("SELECT 1 AS n FROM rule_states WHERE rule_id = ? AND object_type_id = ? AND primary_id = ?", key);
    if (matches === (was !== undefined)) return undefined;
    const e = this.events.envelope({
      type: matches ? "rule.triggered" : "rule.resolved",
      payload: { ruleId: rule.id, subject: { kind: "object", objectTypeId, primaryId } },
      origin: { kind: "runtime", ruleId: rule.id },
      ...envelope,
    });
    if (matches) await tx.run("INSERT INTO rule_states (rule_id, object_type_id, primary_id, triggered_at, event_id) VALUES (?, ?, ?, ?, ?)", [...key, e.occurredAt, e.id]);
    else await tx.run("DELETE FROM rule_states WHERE rule_id = ? AND object_type_id = ? AND primary_id = ?", key);
    return e;
  }

  /**
   * The checkpoint expired (events were pruned while the service was down): re-evaluates every object
   * of the rules' types (and every triggered subject) against the current rows, then continues from the
   * newest event.
   */
  private async reconcile(): Promise<void> {
    this.log.warn("the rules' checkpoint has expired; re-evaluating every object of the rules' types");
    const latest = await this.stream.latestCursor();
    const at = nowIso();
    await this.db.transaction(async (tx) => {
      const envelopes: DomainEventEnvelope[] = [];
      for (const rule of this.rules) {
        const type = rule.definition.objectTypeId;
        const rows = await tx.all<{ primary_id: string; properties: string }>("SELECT primary_id, properties FROM objects WHERE object_type_id = ?", [type]);
        const held = await tx.all<{ primary_id: string }>("SELECT primary_id FROM rule_states WHERE rule_id = ? AND object_type_id = ?", [rule.id, type]);
        const matching = new Set(rows.filter((r) => matchesWhere(rule.definition.where, r.primary_id, JSON.parse(r.properties))).map((r) => r.primary_id));
        for (const id of new Set([...matching, ...held.map((h) => h.primary_id)])) {
          const e = await this.transition(tx, rule, type, id, matching.has(id), { correlationId: `rules:reconcile:${at}`, idempotencyKey: `rule:${rule.id}:reconcile:${at}:${id}` });
          if (e) envelopes.push(e);
        }
      }
      await this.events.writeInTx(tx, envelopes);
      if (latest !== undefined) await this.saveCheckpoint(tx, latest);
      else {
        await tx.run("DELETE FROM rule_checkpoints WHERE consumer = ?", [CONSUMER]);
        tx.afterCommit(() => (this.checkpoint = { cursor: undefined }));
      }
    });
    await this.events.drain();
  }

  private async saveCheckpoint(tx: SqlWriter, cursor: string): Promise<void> {
    await tx.run("INSERT INTO rule_checkpoints (consumer, cursor, updated_at) VALUES (?, ?, ?) ON CONFLICT (consumer) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at", [CONSUMER, cursor, nowIso()]);
    tx.afterCommit(() => (this.checkpoint = { cursor }));
  }
}

/**
 * Splits stream events into commits (consecutive events of one `commitId`; an event without one is a
 * commit of its own) and answers, per commit, each object's final state keyed `type\0id`.
 */
function commits(events: readonly StoredDomainEvent[]): Array<Map<string, SubjectChange>> {
  const out: Array<Map<string, SubjectChange>> = [];
  let current: Map<string, SubjectChange> | undefined;
  let currentId: string | undefined;
  for (const e of events) {
    if (!current || e.commitId === undefined || e.commitId !== currentId) {
      current = new Map();
      out.push(current);
      currentId = e.commitId;
    }
    const p = e.payload as { objectTypeId?: string; primaryId?: string; properties?: Record<string, unknown> };
    if (p.objectTypeId === undefined || p.primaryId === undefined) continue;
    const properties = e.type === "object.deleted" ? null : (p.properties ?? {});
    current.set(`${p.objectTypeId}\u0000${p.primaryId}`, { objectTypeId: p.objectTypeId, primaryId: p.primaryId, properties, event: e });
  }
  return out;
}
