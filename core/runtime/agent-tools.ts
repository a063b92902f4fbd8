/**
 * The tools an agent's reply may call (spec 4.3), each acting as the conversation's user: read objects
 * they may see, run actions they may run, publish an artifact or its next version (deck checks' warnings
 * and screenshots come back as the result), read an artifact by address. A tool that refuses (no
 * permission, invalid input, an invalid version) answers an error result the model sees; it does not
 * fail the reply.
 */
import { Readable } from "node:stream";
import * as v from "valibot";
import { inject, injectable } from "../di";
import { ApiError } from "../errors";
import { can, has, type Principal } from "../auth/permissions";
import { OntologyStore } from "../ontology/store";
import { ArtifactStore } from "../artifacts/store";
import { ARTIFACT_KINDS } from "../artifacts/content";
import { SheetData } from "../artifacts/sheet-data";
import type { VersionOutline } from "../artifacts/resolve";
import { FileStore } from "../files/file-store";
import { FILE_UPLOAD_MAX_BYTES } from "../files/limits";
import { contentTypeOf } from "../artifacts/content";
import { AGENT_TOOLS, type AgentTool } from "../sdk/connector";
import type { ToolCall, ToolDefinition } from "../agents/model";
import { ActionRunner } from "./actions";

const FilesInput = {
  type: "array",
  minItems: 1,
  maxItems: 50,
  description: "The version's files: path inside the artifact and the file's text content",
  items: { type: "object", properties: { path: { type: "string" }, content: { type: "string" }, contentType: { type: "string" } }, required: ["path", "content"] },
};

/** The tools' definitions as the model sees them (JSON Schema inputs). */
export const TOOL_DEFINITIONS: Readonly<Record<AgentTool, ToolDefinition>> = {
  read_objects: {
    name: "read_objects",
    description: "Read objects of one type that the user may see (a page, newest first).",
    inputSchema: { type: "object", properties: { objectTypeId: { type: "string" }, pageSize: { type: "integer", minimum: 1, maximum: 50 } }, required: ["objectTypeId"] },
  },
  run_action: {
    name: "run_action",
    description: "Run an action the user may run; answers the finished run record.",
    inputSchema: { type: "object", properties: { actionId: { type: "string" }, params: { type: "object" }, subject: { type: "object", properties: { objectTypeId: { type: "string" }, primaryId: { type: "string" } } } }, required: ["actionId", "params"] },
  },
  publish_artifact: {
    name: "publish_artifact",
    description: "Publish a new artifact for the user: document (document.md), sheet (workbook.json + sheets/<name>.csv), slides (index.html with <section class=\"slide\"> per slide) or file. Answers its pinned address, warnings, and for decks the deck check.",
    inputSchema: { type: "object", properties: { kind: { type: "string", enum: [...ARTIFACT_KINDS] }, title: { type: "string" }, files: FilesInput }, required: ["kind", "title", "files"] },
  },
  publish_version: {
    name: "publish_version",
    description: "Publish the next version of an artifact you published (a change request). Answers the new version's pinned address and warnings.",
    inputSchema: { type: "object", properties: { artifactId: { type: "string" }, title: { type: "string" }, files: FilesInput }, required: ["artifactId", "files"] },
  },
  read_artifact: {
    name: "read_artifact",
    description: "Read what an artifact address points at (artifact:<id>[@<version>][/<file>][#<part>]): the version, and the document's text, the sheets' first rows or the deck's slide titles.",
    inputSchema: { type: "object", properties: { address: { type: "string" } }, required: ["address"] },
  },
};

const FileEntries = v.pipe(v.array(v.object({ path: v.string(), content: v.string(), contentType: v.optional(v.string()) })), v.minLength(1), v.maxLength(50));
const INPUTS = {
  read_objects: v.object({ objectTypeId: v.string(), pageSize: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(50))) }),
  run_action: v.object({ actionId: v.string(), params: v.record(v.string(), v.unknown()), subject: v.optional(v.object({ objectTypeId: v.string(), primaryId: v.string() })) }),
  publish_artifact: v.object({ kind: v.picklist(ARTIFACT_KINDS), title: v.pipe(v.string(), v.minLength(1), v.maxLength(200)), files: FileEntries }),
  publish_version: v.object({ artifactId: v.string(), title: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))), files: FileEntries }),
  read_artifact: v.object({ address: v.string() }),
} satisfies Record<AgentTool, v.GenericSchema>;

/** Where a tool call runs: the user it acts as, and the call's place in the run (its idempotency key). */
export interface ToolContext {
  principal: Principal;
  agentId: string;
  runId: string;
  step: number;
  index: number;
}

/** What a publish answers the model (and the run records as published). */
export interface PublishResult {
  artifactId: string;
  version: number;
  title: string;
  kind: string;
  address: string;
  warnings: Array<{ code: string; message: string; slide?: number }>;
  deckCheck?: { checked: true; screenshots: Array<{ slide: number; url: string }> } | { checked: false; reason: string };
}

/** Runs agents' tool calls (spec 4.3) as the conversation's user. */
@injectable()
export class AgentTools {
  constructor(
    @inject(OntologyStore) private readonly ontology: OntologyStore,
    @inject(ActionRunner) private readonly actions: ActionRunner,
    @inject(ArtifactStore) private readonly artifacts: ArtifactStore,
    @inject(FileStore) private readonly files: FileStore,
    @inject(SheetData) private readonly sheets: SheetData,
  ) {}

  /** The definitions of the tools an agent declared (all of them by default). */
  definitions(tools: readonly AgentTool[] | undefined): ToolDefinition[] {
    return (tools ?? AGENT_TOOLS).map((t) => TOOL_DEFINITIONS[t]);
  }

  /**
   * Runs one tool call. Publishing is keyed by the call (`agent:<runId>:<step>:<index>`), so running the
   * same call again answers the version it published instead of publishing another.
   * @throws {ApiError} invalid_request (unknown tool, bad input), forbidden (the user may not), or what the tool refused with
   */
  async execute(call: ToolCall, ctx: ToolContext): Promise<unknown> {
    const name = call.name as AgentTool;
    if (!(AGENT_TOOLS as readonly string[]).includes(name)) throw new ApiError("invalid_request", `No tool "${call.name}"; tools are: ${AGENT_TOOLS.join(", ")}`);
    const parsed = v.safeParse(INPUTS[name], call.input);
    if (!parsed.success) throw new ApiError("invalid_request", `${call.name}: ${v.getDotPath(parsed.issues[0]) ?? "input"} ${parsed.issues[0].message}`);
    const reader = { kind: "identity" as const, id: ctx.principal.id };
    switch (name) {
      case "read_objects": {
        const input = parsed.output as v.InferOutput<(typeof INPUTS)["read_objects"]>;
        if (!has(ctx.principal, can.view(input.objectTypeId))) throw new ApiError("forbidden", `You may not view objects of type "${input.objectTypeId}"`);
        const page = await this.ontology.query({ objectTypeId: input.objectTypeId, pageSize: input.pageSize ?? 20 });
        return { data: page.data, ...(page.nextPageToken ? { more: true } : {}) };
      }
      case "run_action": {
        const input = parsed.output as v.InferOutput<(typeof INPUTS)["run_action"]>;
        if (!has(ctx.principal, can.runAction(input.actionId))) throw new ApiError("forbidden", `You may not run action "${input.actionId}"`);
        // as POST /api/actions/:actionId: running an action on an object needs viewing its type
        if (input.subject && !has(ctx.principal, can.view(input.subject.objectTypeId))) throw new ApiError("forbidden", `You may not view objects of type "${input.subject.objectTypeId}"`);
        return this.actions.run({ actionId: input.actionId, params: input.params, subject: input.subject ? { kind: "object", ...input.subject } : undefined, runId: `run_${ctx.runId}_${ctx.step}_${ctx.index}`, actor: { type: ctx.principal.type, id: ctx.principal.id } } as never);
      }
      case "publish_artifact":
      case "publish_version": {
        const input = parsed.output as { kind?: (typeof ARTIFACT_KINDS)[number]; title?: string; artifactId?: string; files: Array<{ path: string; content: string; contentType?: string }> };
        const files = [];
        for (const f of input.files) {
          const ref = await this.files.upload(Readable.from([Buffer.from(f.content, "utf8")]), { name: f.path.split("/").pop(), declaredContentType: f.contentType ?? contentTypeOf(f.path), maxBytes: FILE_UPLOAD_MAX_BYTES, createdBy: ctx.principal.id });
          files.push({ path: f.path, file: { id: ref.id } });
        }
        const { artifact, version } = await this.artifacts.publish({
          ...(input.artifactId ? { artifactId: input.artifactId } : { kind: input.kind, title: input.title }),
          ...(input.artifactId && input.title ? { title: input.title } : {}),
          files,
          author: reader,
          publishedBy: `agent:${ctx.agentId}`,
          publishKey: `agent:${ctx.runId}:${ctx.step}:${ctx.index}`,
        });
        const checks = (version.outline as VersionOutline).checks;
        const result: PublishResult = {
          artifactId: artifact.id,
          version: version.version,
          title: version.title,
          kind: artifact.kind,
          address: `artifact:${artifact.id}@${version.version}`,
          warnings: version.warnings.map((w) => ({ code: w.code, message: w.message, ...(w.slide !== undefined ? { slide: w.slide } : {}) })),
          ...(checks ? { deckCheck: checks.checked ? { checked: true as const, screenshots: checks.slides.map((s) => ({ slide: s.number, url: `/api/artifacts/${artifact.id}/versions/${version.version}/checks/${s.number}` })) } : { checked: false as const, reason: checks.reason } } : {}),
        };
        return result;
      }
      case "read_artifact": {
        const input = parsed.output as { address: string };
        const resolution = await this.artifacts.resolve(reader, input.address);
        const version = await this.artifacts.version(reader, resolution.artifact.id, resolution.version);
        const outline = version.outline as VersionOutline;
        let content: unknown;
        if (version.kind === "document") {
          const entry = version.files.find((f) => f.path === "document.md");
          content = entry ? (await this.files.text(entry.file.id)).slice(0, 20_000) : undefined;
        } else if (version.kind === "sheet") {
          content = await Promise.all((outline.sheets ?? []).map(async (s) => ({ sheet: s.name, columns: s.columns, rows: (await this.sheets.table(reader, version.artifactId, version.version, s.name)).rows.slice(0, 20), totalRows: s.rows })));
        } else if (version.kind === "slides") {
          content = outline.slides;
        }
        return { ...resolution, ...(content !== undefined ? { content } : {}) };
      }
    }
  }
}
