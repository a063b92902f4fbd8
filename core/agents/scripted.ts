/**
 * The scripted model (spec 4.3; issue 13): a deterministic `Model` with no network and no key, the
 * sandbox's default and the tests'. It follows a script of tool calls and text chosen from the LAST user
 * message (lower-cased) and the conversation before it, so the README's walk-through and the tests
 * publish real documents, sheets and decks through the real tool path.
 *
 * ## The script (one `step()` is one model call; the first matching rule wins)
 *
 * 1. The last message is a tool result: after a successful `read_artifact` that the turn has not yet
 *    published from, `publish_artifact` a document citing it (rule 3's second step); otherwise the closing
 *    text ("Published “T” as artifact:…", the deck check's outcome, "Found N invoice objects.", what
 *    failed). If the user message contains "fail" and `request.retry` is not true, the step throws
 *    `ModelError(…, false)` instead, after the publish happened, so a retried reply succeeds.
 * 2. "change", "revise", "update" or "edit" and a tool result before the message carries an `artifactId`
 *    → `publish_version` of the most recent one: its previous files (from the call that published them,
 *    or a read result's `content`) revised, same kind and title, with "Revises artifact:<id>@<version>.".
 * 3. An `artifact:` address → `read_artifact` of it, then a document that embeds it (when it names a part,
 *    `#…`) or links it, pinned with `@<version>` (the result's `version` when the address has none).
 * 4. "deck" or "slides" → a three-slide deck (title, stat, quote layouts), a fourth slide with 12px text
 *    when the message also says "warning" or "small" (the deck check then warns `small_text`).
 * 5. "sheet" or "table" → a sheet: `workbook.json` (a Data sheet, a bar chart) and `sheets/Data.csv`.
 * 6. "document", "report", "review" or "write" → a document: `document.md`.
 * 7. "invoices" or "objects" → `read_objects` `{ objectTypeId: "invoice" }`.
 * 8. Otherwise: a short text saying what it can do.
 *
 * A tool is only called when `request.tools` has it; otherwise the step says in text that it lacks it.
 * Titles: the words after "titled" (to a period or the end), else quoted text, else "Report",
 * "Revenue sheet" or "Deck". Tool call ids are `call_<step>_<i>`, where step = the number of assistant
 * messages in the request + 1. Usage counts words (string leaves of messages and tool inputs).
 * Text streams word by word; "slowly" in the message makes each chunk wait 150 ms.
 */
import { abortError, ModelError, type Model, type ModelMessage, type ModelRequest, type ModelStep, type ToolCall } from "./model";

/** Options of a `ScriptedModel`. */
export interface ScriptedModelOptions {
  /** Milliseconds to wait before each streamed word (default 0; 150 when the user message says "slowly"). */
  chunkDelayMs?: number;
}

/** A file of a publish input, as the `publish_artifact` and `publish_version` tools take it. */
interface FileInput {
  path: string;
  content: string;
  contentType?: string;
}
type Kind = "document" | "sheet" | "slides" | "file";
type ToolMessage = Extract<ModelMessage, { role: "tool" }>;
type Json = Record<string, unknown>;
/** What one step does: the text it streams, then at most one tool call. */
interface Plan {
  text: string;
  call?: { name: string; input: Json };
}

/** How long each chunk waits when the user message contains "slowly", in milliseconds. */
const SLOW_CHUNK_MS = 150;
const ADDRESS = /artifact:art_[A-Za-z0-9]+(?:@\d+)?(?:\/[^\s#()<>[\]"'`]*)?(?:#[^\s()<>[\]"'`]*)?/;
const MONTHS: Array<[string, string, number]> = [
  ["2026-01-31", "January", 1200], ["2026-02-28", "February", 1350], ["2026-03-31", "March", 1480],
  ["2026-04-30", "April", 1610], ["2026-05-31", "May", 1590], ["2026-06-30", "June", 1720],
];
const WORKBOOK = {
  sheets: [{ name: "Data", columns: { Month: "date", Amount: { type: "currency", currency: "USD" } } }],
  charts: [{ name: "Amount by month", type: "bar", sheet: "Data", x: "Month", y: ["Amount"] }],
};
const HELP =
  "I’m the scripted model. I can publish a document, a sheet or a deck, publish the next version of an artifact " +
  "published here when you ask for a change, read an artifact by its address and cite it pinned to its version, " +
  "and look up invoice objects. Try “write a report titled Q3 review”.";

/**
 * The deterministic scripted model (id `"scripted"`); see the module comment for the script.
 * Same request, same step: no randomness, no clock, no network.
 */
export class ScriptedModel implements Model {
  readonly id = "scripted";

  constructor(private readonly options: ScriptedModelOptions = {}) {}

  /**
   * One step of the script: streams its text word by word through `onText`, then answers the step.
   * @throws ModelError (not retryable) on the "fail" rule when `request.retry` is not true
   * @throws an error named `AbortError` when `request.signal` is (or becomes) aborted
   */
  async step(request: ModelRequest, onText: (delta: string) => void | Promise<void>): Promise<ModelStep> {
    throwIfAborted(request.signal);
    const plan = decide(request);
    const step = request.messages.filter((m) => m.role === "assistant").length + 1;
    const toolCalls: ToolCall[] = plan.call ? [{ id: `call_${step}_0`, name: plan.call.name, input: plan.call.input }] : [];
    const delay = lastUserText(request.messages).toLowerCase().includes("slowly") ? SLOW_CHUNK_MS : (this.options.chunkDelayMs ?? 0);
    for (const chunk of plan.text.match(/\S+\s*/g) ?? []) {
      if (delay > 0) await sleep(delay, request.signal);
      throwIfAborted(request.signal);
      await onText(chunk);
    }
    throwIfAborted(request.signal);
    return {
      text: plan.text,
      toolCalls,
      usage: { inputTokens: inputWords(request.messages), outputTokens: words(plan.text) + words(plan.call?.input) },
      finishReason: toolCalls.length > 0 ? "tool-calls" : "stop",
    };
  }
}

/** Picks this step's plan from the conversation (the script's rules, in order). */
function decide(request: ModelRequest): Plan {
  const messages = request.messages;
  const userAt = messages.findLastIndex((m) => m.role === "user");
  const original = lastUserText(messages);
  const msg = original.toLowerCase();
  const tool = (name: string, input: Json, text: string, doing: string): Plan =>
    request.tools.some((t) => t.name === name) ? { text, call: { name, input } } : { text: `I would ${doing}, but this agent lacks the ${name} tool, so I can’t do that here.` };
  const last = messages.at(-1);

  if (last?.role === "tool") {
    const results = trailingResults(messages);
    const read = results.find((r) => r.toolName === "read_artifact" && !r.isError);
    const turn = messages.slice(userAt + 1);
    const published = turn.some((m) => m.role === "assistant" && m.toolCalls.some((c) => c.name === "publish_artifact"));
    if (read && !published) {
      const address = str(obj(callOf(messages, read.toolCallId)?.input).address) ?? str(obj(read.result).address) ?? "";
      const title = titleOf(original) ?? "Report";
      return tool("publish_artifact", { kind: "document", title, files: [md(citingDocument(title, address, obj(read.result)))] }, `I’ll publish a document titled “${title}” that cites it.`, "publish the document");
    }
    if (msg.includes("fail") && request.retry !== true) throw new ModelError("The scripted model failed on purpose (the message asked for it)", false);
    return { text: results.map((r) => closing(r, messages)).join(" ") };
  }
  if (last?.role === "assistant") return { text: "That is all for this message." };

  const title = titleOf(original);
  if (/\b(chang|revis|updat|edit)/.test(msg)) {
    const previous = latestArtifact(messages.slice(0, Math.max(userAt, 0)));
    if (previous) {
      const { input, prevTitle, pin } = revision(previous, original);
      return tool("publish_version", input, `I’ll publish the next version of “${prevTitle}”, revising ${pin}.`, "publish a new version");
    }
  }
  const address = ADDRESS.exec(original)?.[0].replace(/[.,;:!?]+$/, "");
  if (address) return tool("read_artifact", { address }, `I’ll read ${address} first, to pin the version I cite.`, `read ${address}`);
  if (/\bdecks?\b|\bslides?\b/.test(msg)) {
    const t = title ?? "Deck";
    return tool("publish_artifact", { kind: "slides", title: t, files: [deck(t, /warning|small/.test(msg))] }, `I’ll publish a deck titled “${t}”.`, "publish a deck");
  }
  if (/sheet|\btables?\b/.test(msg)) {
    const t = title ?? "Revenue sheet";
    const files = [{ path: "workbook.json", content: `${JSON.stringify(WORKBOOK, null, 2)}\n`, contentType: "application/json" }, { path: "sheets/Data.csv", content: csv(3), contentType: "text/csv" }];
    return tool("publish_artifact", { kind: "sheet", title: t, files }, `I’ll publish a sheet titled “${t}”.`, "publish a sheet");
  }
  if (/\b(document|report|review|writ)/.test(msg)) {
    const t = title ?? "Report";
    return tool("publish_artifact", { kind: "document", title: t, files: [md(documentMd(t))] }, `I’ll publish a document titled “${t}”.`, "publish a document");
  }
  if (/\b(invoices?|objects?)\b/.test(msg)) return tool("read_objects", { objectTypeId: "invoice" }, "I’ll look up the invoice objects.", "look up the invoices");
  return { text: HELP };
}

/** The text of the last user message ("" when there is none). */
function lastUserText(messages: ModelMessage[]): string {
  const m = messages.findLast((x) => x.role === "user");
  return m?.role === "user" ? m.text : "";
}

/** The tool results after the last assistant message. */
function trailingResults(messages: ModelMessage[]): ToolMessage[] {
  const from = messages.findLastIndex((m) => m.role !== "tool") + 1;
  return messages.slice(from) as ToolMessage[];
}

/** The tool call with this id, from the assistant messages. */
function callOf(messages: ModelMessage[], id: string): ToolCall | undefined {
  for (const m of messages) if (m.role === "assistant") for (const c of m.toolCalls) if (c.id === id) return c;
  return undefined;
}

const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** The title a message asks for: after "titled" (a quoted run, or up to a period or the end), else quoted text. */
function titleOf(text: string): string | undefined {
  const titled = /\btitled\s+(?:["“‘']([^"”’']+)["”’']|(.+?)\s*(?:\.(?:\s|$)|$))/is.exec(text);
  const quoted = /["“]([^"”]+)["”]/.exec(text);
  const t = (titled?.[1] ?? titled?.[2] ?? quoted?.[1])?.replace(/\s+/g, " ").trim();
  return t || undefined;
}

/** The closing sentence for one tool result. */
function closing(r: ToolMessage, messages: ModelMessage[]): string {
  const result = obj(r.result);
  const input = obj(callOf(messages, r.toolCallId)?.input);
  if (r.isError) return `The ${r.toolName} call failed: ${errorText(r.result).replace(/\.$/, "")}.`;
  if (r.toolName === "read_objects") {
    const data = Array.isArray(result.data) ? result.data : [];
    return `Found ${data.length} ${str(input.objectTypeId) ?? "matching"} objects.`;
  }
  if (r.toolName === "run_action") return `The action ${str(input.actionId) ?? ""} finished${str(result.status) ? ` with status ${str(result.status)}` : ""}.`;
  if (r.toolName === "read_artifact") return `Read ${str(result.address) ?? str(input.address) ?? "the artifact"}${num(result.version) ? ` (version ${num(result.version)})` : ""}.`;
  const address = str(result.address);
  if (!address) return `The ${r.toolName} call finished.`;
  const title = str(result.title) ?? str(input.title) ?? "the artifact";
  return [`Published “${title}” as ${address}.`, deckSentence(result)].filter(Boolean).join(" ");
}

/** The deck check's outcome as a sentence, or "" when the result is not a deck's. */
function deckSentence(result: Json): string {
  if (result.deckCheck === undefined && result.kind !== "slides") {
    // not a deck: only warnings such as dependent_broken are worth a sentence
    const warnings = Array.isArray(result.warnings) ? result.warnings.map(obj) : [];
    return warnings.length ? `It published with ${warnings.length} warning${warnings.length === 1 ? "" : "s"}: ${warnings.map((w) => str(w.code) ?? "warning").join(", ")}.` : "";
  }
  const check = obj(result.deckCheck);
  const warnings = Array.isArray(result.warnings) ? result.warnings.map(obj) : undefined;
  if (check.checked === false) return `The deck was published unchecked: ${(str(check.reason) ?? "no reason given").replace(/\.$/, "")}.`;
  if (warnings && warnings.length > 0) {
    const list = warnings.map((w) => (num(w.slide) ? `${str(w.code) ?? "warning"} on slide ${num(w.slide)}` : (str(w.code) ?? "warning")));
    return `The deck check found ${warnings.length} warning${warnings.length === 1 ? "" : "s"}: ${list.join(", ")}.`;
  }
  return check.checked === true || warnings ? "The deck check passed with no warnings." : "";
}

/** What a failed tool result says: its text, its `message`, its `error.message`, or its JSON. */
function errorText(result: unknown): string {
  if (typeof result === "string") return result;
  const o = obj(result);
  return str(o.message) ?? str(obj(o.error).message) ?? JSON.stringify(result) ?? "unknown error";
}

/** The most recent successful tool result carrying an `artifactId`, with its call. */
interface PreviousArtifact {
  id: string;
  result: Json;
  input: Json;
}
function latestArtifact(messages: ModelMessage[]): PreviousArtifact | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "tool" || m.isError) continue;
    const id = str(obj(m.result).artifactId);
    if (id) return { id, result: obj(m.result), input: obj(callOf(messages, m.toolCallId)?.input) };
  }
  return undefined;
}

/** The `publish_version` input revising `previous` for the request `request` (same kind, same title). */
function revision(previous: PreviousArtifact, request: string): { input: Json; prevTitle: string; pin: string } {
  const version = num(previous.result.version);
  const pin = `artifact:${previous.id}${version ? `@${version}` : ""}`;
  const prevTitle = str(previous.result.title) ?? str(previous.input.title) ?? "Report";
  const given = Array.isArray(previous.input.files) ? previous.input.files.map(obj).filter((f) => str(f.path) && typeof f.content === "string") : [];
  const content = str(previous.result.content);
  const files: FileInput[] = given.length > 0 ? given.map((f) => ({ ...(f as unknown as FileInput) })) : [md(content ?? documentMd(prevTitle))];
  const changes = `## Changes\n\n${request.split("\n").map((l) => `> ${l}`).join("\n")}\n\nRevises ${pin}.\n`;
  const kind = kindOf(files);
  const at = (path: RegExp) => files.find((f) => path.test(f.path));
  if (kind === "document") {
    const doc = at(/\.md$/)!;
    doc.content = `${doc.content.trimEnd()}\n\n${changes}`;
  } else if (kind === "sheet") {
    const sheet = at(/\.csv$/);
    if (sheet) sheet.content = csv(sheet.content.trim().split("\n").length);
  } else if (kind === "slides") {
    const index = at(/^index\.html$/)!;
    const slide = `<section class="slide">\n  <h2>Changes</h2>\n  <p>“${escapeHtml(request)}”</p>\n  <p>Revises <a href="${pin}">the previous version</a>.</p>\n</section>\n`;
    index.content = index.content.includes("</body>") ? index.content.replace("</body>", `${slide}</body>`) : `${index.content}${slide}`;
  } else {
    files[0]!.content = `${files[0]!.content.trimEnd()}\n\nChanges: ${request}\nRevises ${pin}.\n`;
  }
  return { input: { artifactId: previous.id, title: prevTitle, files }, prevTitle, pin };
}

/** The kind a set of files is: `document.md` → document, `workbook.json` → sheet, `index.html` → slides, else file. */
function kindOf(files: FileInput[]): Kind {
  const paths = files.map((f) => f.path);
  if (paths.includes("workbook.json")) return "sheet";
  if (paths.includes("index.html")) return "slides";
  if (paths.some((p) => p.endsWith(".md"))) return "document";
  return "file";
}

/** A document file. */
const md = (content: string): FileInput => ({ path: "document.md", content, contentType: "text/markdown" });

/** The sample document: heading, lede, summary, a note callout and a small table. */
function documentMd(title: string): string {
  const rows = MONTHS.slice(0, 3).map(([, name, amount]) => `| ${name} | ${amount.toLocaleString("en-US")} |`);
  return `# ${title}

The amount grew in each of the first three months of 2026, from 1,200 USD in January to 1,480 USD in March.

## Summary

- The amount rose by 23% over the quarter.
- March was the strongest month.

> [!NOTE]
> The figures are sample data written by the scripted model.

| Month | Amount (USD) |
|:------|-------------:|
${rows.join("\n")}
`;
}

/** The document citing `address` (read as `result`), pinned to its version. */
function citingDocument(title: string, address: string, result: Json): string {
  const m = /^artifact:(art_[A-Za-z0-9]+)(@\d+)?(.*)$/.exec(address);
  const version = m?.[2] ? Number(m[2].slice(1)) : num(result.version);
  const pinned = m && !m[2] && version ? `artifact:${m[1]}@${version}${m[3]}` : address;
  const cite = pinned.includes("#") ? `![Source](${pinned})` : `See the [source](${pinned}).`;
  const what = str(result.title) ? `“${str(result.title)}”` : "the source";
  const when = version ? `pinned to version ${version}, so this document keeps showing what it showed when it was written` : "following its latest version";
  return `# ${title}

This document cites ${what}, ${when}.

## Source

${cite}

> [!NOTE]
> An address with \`@<version>\` stays on that version; without it, it follows the latest.
`;
}

/** The sample CSV with a header and the first `rows` months (dates YYYY-MM-DD, raw numbers). */
function csv(rows: number): string {
  const picked = MONTHS.slice(0, Math.min(Math.max(rows, 1), MONTHS.length));
  return ["Month,Amount", ...picked.map(([date, , amount]) => `${date},${amount}`)].join("\n") + "\n";
}

/** The sample deck: title, stat and quote slides (text ≥ 24px); with `small`, a fourth slide with 12px text. */
function deck(title: string, small: boolean): FileInput {
  const fine = small
    ? `<section class="slide">\n  <h2>Fine print</h2>\n  <p style="font-size:12px">Figures are sample data from the scripted model and are not audited.</p>\n</section>\n`
    : "";
  const t = escapeHtml(title);
  const content = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${t}</title>
</head>
<body>
<section class="slide title">
  <h1>${t}</h1>
  <p>The first quarter of 2026 in three slides</p>
</section>
<section class="slide stat">
  <h2>The amount grew 23%</h2>
  <p class="value">4,030 USD</p>
  <p>Total from January to March</p>
</section>
<section class="slide quote">
  <blockquote>Small steps, every month, add up to a quarter.</blockquote>
  <p class="author">The scripted model</p>
</section>
${fine}</body>
</html>
`;
  return { path: "index.html", content, contentType: "text/html" };
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** Words in a value: whitespace-separated runs in its strings (messages, inputs, results), 1 per number or boolean. */
function words(value: unknown): number {
  if (typeof value === "string") return value.match(/\S+/g)?.length ?? 0;
  if (typeof value === "number" || typeof value === "boolean") return 1;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + words(v), 0);
  if (value && typeof value === "object") return Object.values(value).reduce((n: number, v) => n + words(v), 0);
  return 0;
}

/** Words of the request's messages: user and assistant text, tool call inputs, tool results. */
function inputWords(messages: ModelMessage[]): number {
  return messages.reduce((n, m) => n + (m.role === "tool" ? words(m.result) : m.role === "user" ? words(m.text) : words(m.text) + words(m.toolCalls.map((c) => c.input))), 0);
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError();
}

/** Waits `ms` milliseconds; rejects with an `AbortError` as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
