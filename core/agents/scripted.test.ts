import { describe, expect, it } from "vitest";
import { ModelError, type ModelMessage, type ModelRequest, type ModelStep, type ToolDefinition } from "./model";
import { ScriptedModel } from "./scripted";

const TOOLS: ToolDefinition[] = ["publish_artifact", "publish_version", "read_artifact", "read_objects", "run_action"].map((name) => ({
  name,
  description: name,
  inputSchema: { type: "object" },
}));

/** One step; the deltas it streamed are returned beside it. */
async function step(messages: ModelMessage[], extra: Partial<ModelRequest> = {}, model = new ScriptedModel()) {
  const deltas: string[] = [];
  const result = await model.step({ system: "You are a test agent.", messages, tools: TOOLS, ...extra }, (d) => {
    deltas.push(d);
  });
  return { ...result, deltas };
}

type Files = Array<{ path: string; content: string; contentType?: string }>;
const filesOf = (s: ModelStep): Files => (s.toolCalls[0]!.input as { files: Files }).files;
const file = (s: ModelStep, path: string) => filesOf(s).find((f) => f.path === path)!.content;

/** A stand-in for the runtime's tools: publishes get `art_<n>` addresses, reads answer fixed data. */
function fakeTools() {
  let next = 1;
  const versions = new Map<string, number>();
  return (name: string, input: any): { result: unknown; isError?: boolean } => {
    if (name === "publish_artifact") {
      const id = `art_${next++}`;
      versions.set(id, 1);
      return { result: { artifactId: id, address: `artifact:${id}@1`, title: input.title, version: 1 } };
    }
    if (name === "publish_version") {
      const v = (versions.get(input.artifactId) ?? 0) + 1;
      versions.set(input.artifactId, v);
      return { result: { artifactId: input.artifactId, address: `artifact:${input.artifactId}@${v}`, title: input.title, version: v } };
    }
    if (name === "read_artifact") return { result: { artifactId: "art_SRC", address: input.address, kind: "sheet", title: "Revenue", version: 3 } };
    if (name === "read_objects") return { result: { data: [{ id: "inv_1" }, { id: "inv_2" }, { id: "inv_3" }] } };
    return { result: "unknown tool", isError: true };
  };
}

/** Runs a whole reply as the runtime would: steps until one asks for no tool. */
async function reply(history: ModelMessage[], text: string, tools = fakeTools(), extra: Partial<ModelRequest> = {}) {
  const messages: ModelMessage[] = [...history, { role: "user", text }];
  const steps: Array<ModelStep & { deltas: string[] }> = [];
  for (let i = 0; i < 5; i++) {
    const s = await step(messages, extra);
    steps.push(s);
    messages.push({ role: "assistant", text: s.text, toolCalls: s.toolCalls });
    if (s.toolCalls.length === 0) return { steps, messages };
    for (const c of s.toolCalls) messages.push({ role: "tool", toolCallId: c.id, toolName: c.name, ...tools(c.name, c.input) });
  }
  throw new Error("the script did not end");
}

describe("ScriptedModel", () => {
  it("publishes a document, streaming its text in several deltas, then closes with the address", async () => {
    const { steps } = await reply([], "Please write a report titled Q3 review. Thanks");
    expect(steps).toHaveLength(2);
    const [first, last] = steps;
    expect(first!.finishReason).toBe("tool-calls");
    expect(first!.toolCalls).toMatchObject([{ id: "call_1_0", name: "publish_artifact", input: { kind: "document", title: "Q3 review" } }]);
    const md = file(first!, "document.md");
    expect(md).toMatch(/^# Q3 review\n\n\S/);
    expect(md).toContain("## Summary");
    expect(md).toContain("> [!NOTE]");
    expect(md).toMatch(/\| Month \| Amount \(USD\) \|\n\|:-+\|-+:\|\n\| January \| 1,200 \|/);
    expect(first!.deltas.length).toBeGreaterThan(1);
    expect(first!.deltas.join("")).toBe(first!.text);
    expect(last).toMatchObject({ text: "Published “Q3 review” as artifact:art_1@1.", toolCalls: [], finishReason: "stop" });
    expect(last!.deltas.length).toBeGreaterThan(1);
  });

  it("takes quoted titles and defaults per kind", async () => {
    expect((await step([{ role: "user", text: "Write a document “Board notes” for me" }])).toolCalls[0]!.input).toMatchObject({ title: "Board notes" });
    expect((await step([{ role: "user", text: 'a deck titled "Q3 in short" and more' }])).toolCalls[0]!.input).toMatchObject({ title: "Q3 in short" });
    expect((await step([{ role: "user", text: "a table please" }])).toolCalls[0]!.input).toMatchObject({ kind: "sheet", title: "Revenue sheet" });
    expect((await step([{ role: "user", text: "make some slides" }])).toolCalls[0]!.input).toMatchObject({ kind: "slides", title: "Deck" });
  });

  it("publishes a sheet: the workbook, its chart and a CSV with raw values", async () => {
    const s = await step([{ role: "user", text: "Make a sheet of revenue" }]);
    expect(s.toolCalls[0]).toMatchObject({ name: "publish_artifact", input: { kind: "sheet", title: "Revenue sheet" } });
    expect(JSON.parse(file(s, "workbook.json"))).toEqual({
      sheets: [{ name: "Data", columns: { Month: "date", Amount: { type: "currency", currency: "USD" } } }],
      charts: [{ name: "Amount by month", type: "bar", sheet: "Data", x: "Month", y: ["Amount"] }],
    });
    const lines = file(s, "sheets/Data.csv").trim().split("\n");
    expect(lines[0]).toBe("Month,Amount");
    expect(lines.slice(1)).toHaveLength(3);
    for (const line of lines.slice(1)) expect(line).toMatch(/^\d{4}-\d{2}-\d{2},\d+$/);
  });

  it("publishes a three-slide deck with the kit's layouts, and says the deck check passed", async () => {
    const s = await step([{ role: "user", text: "Build a deck about Q1" }]);
    const html = file(s, "index.html");
    expect(s.toolCalls[0]).toMatchObject({ name: "publish_artifact", input: { kind: "slides", title: "Deck" } });
    expect(html.match(/<section class="slide/g)).toHaveLength(3);
    for (const layout of ["title", "stat", "quote"]) expect(html).toContain(`<section class="slide ${layout}">`);
    expect(html).toContain('<p class="value">');
    expect(html).not.toMatch(/font-size/);
    const done = await step([
      { role: "user", text: "Build a deck about Q1" },
      { role: "assistant", text: s.text, toolCalls: s.toolCalls },
      { role: "tool", toolCallId: "call_1_0", toolName: "publish_artifact", result: { artifactId: "art_D", address: "artifact:art_D@1", title: "Deck", version: 1, warnings: [], deckCheck: { checked: true } } },
    ]);
    expect(done.text).toBe("Published “Deck” as artifact:art_D@1. The deck check passed with no warnings.");
  });

  it("adds a slide with 12px text when asked for a warning, and reports the check's warnings or why it was unchecked", async () => {
    const user: ModelMessage = { role: "user", text: "A deck with small print, titled Risks" };
    const s = await step([user]);
    const html = file(s, "index.html");
    expect(html.match(/<section class="slide/g)).toHaveLength(4);
    expect(html).toContain('<p style="font-size:12px">');
    const close = (result: unknown) => step([user, { role: "assistant", text: s.text, toolCalls: s.toolCalls }, { role: "tool", toolCallId: "call_1_0", toolName: "publish_artifact", result }]);
    const base = { artifactId: "art_D", address: "artifact:art_D@1", title: "Risks", version: 1 };
    const warnings = [{ code: "small_text", message: "Text under 18px", slide: 4 }, { code: "contrast", message: "low", slide: 2 }];
    expect((await close({ ...base, warnings, deckCheck: { checked: true } })).text).toBe(
      "Published “Risks” as artifact:art_D@1. The deck check found 2 warnings: small_text on slide 4, contrast on slide 2.",
    );
    expect((await close({ ...base, warnings: [], deckCheck: { checked: false, reason: "no browser on this machine" } })).text).toBe(
      "Published “Risks” as artifact:art_D@1. The deck was published unchecked: no browser on this machine.",
    );
    expect((await step([{ role: "user", text: "slides with a warning please" }])).toolCalls[0]!.input).toMatchObject({ kind: "slides" });
    expect(file(await step([{ role: "user", text: "slides with a warning please" }]), "index.html")).toContain("font-size:12px");
  });

  it("answers a change request after a publish with publish_version of that artifact, pinning the previous version", async () => {
    const tools = fakeTools();
    const first = await reply([], "write a report titled Q3 review", tools);
    const second = await reply(first.messages, "Please revise it: mention April too", tools);
    const steps = second.steps;
    expect(steps).toHaveLength(2);
    const call = steps[0]!.toolCalls[0]!;
    expect(call).toMatchObject({ id: "call_3_0", name: "publish_version", input: { artifactId: "art_1", title: "Q3 review" } });
    const md = file(steps[0]!, "document.md");
    const before = file(first.steps[0]!, "document.md");
    expect(md.startsWith(before.trimEnd())).toBe(true);
    expect(md).toContain("## Changes\n\n> Please revise it: mention April too\n\nRevises artifact:art_1@1.");
    expect(steps[1]!.text).toBe("Published “Q3 review” as artifact:art_1@2.");
    // a second change revises version 2, keeping the first revision's pinned address
    const third = await reply(second.messages, "update it again", tools);
    expect(third.steps[0]!.toolCalls[0]).toMatchObject({ id: "call_5_0", name: "publish_version", input: { artifactId: "art_1", title: "Q3 review" } });
    const md3 = file(third.steps[0]!, "document.md");
    expect(md3).toContain("Revises artifact:art_1@1.");
    expect(md3).toContain("Revises artifact:art_1@2.");
  });

  it("revises a sheet or a deck as the same kind", async () => {
    const tools = fakeTools();
    const sheet = await reply([], "a sheet please", tools);
    const next = await step([...sheet.messages, { role: "user", text: "change it: one more month" }]);
    expect(next.toolCalls[0]).toMatchObject({ name: "publish_version", input: { artifactId: "art_1", title: "Revenue sheet" } });
    expect(file(next, "sheets/Data.csv").trim().split("\n")).toHaveLength(5);
    expect(file(next, "workbook.json")).toBe(file(sheet.steps[0]!, "workbook.json"));
    const deck = await reply([], "a deck please", tools);
    const revised = await step([...deck.messages, { role: "user", text: "update the deck" }]);
    expect(revised.toolCalls[0]).toMatchObject({ name: "publish_version", input: { artifactId: "art_2" } });
    expect(file(revised, "index.html").match(/<section class="slide/g)).toHaveLength(4);
    expect(file(revised, "index.html")).toContain('href="artifact:art_2@1"');
  });

  it("does not revise when nothing was published before: the change words alone pick no artifact", async () => {
    const s = await step([{ role: "user", text: "update the report" }]);
    expect(s.toolCalls[0]).toMatchObject({ name: "publish_artifact", input: { kind: "document" } });
  });

  it("reads an artifact address, then publishes a document that embeds its part pinned to the read version", async () => {
    const { steps } = await reply([], "Write about artifact:art_SRC#chart=Amount%20by%20month.");
    expect(steps.map((s) => s.toolCalls.map((c) => c.name))).toEqual([["read_artifact"], ["publish_artifact"], []]);
    expect(steps[0]!.toolCalls[0]).toEqual({ id: "call_1_0", name: "read_artifact", input: { address: "artifact:art_SRC#chart=Amount%20by%20month" } });
    expect(steps[1]!.toolCalls[0]).toMatchObject({ id: "call_2_0", input: { kind: "document", title: "Report" } });
    expect(file(steps[1]!, "document.md")).toContain("![Source](artifact:art_SRC@3#chart=Amount%20by%20month)");
    expect(steps[2]!.text).toBe("Published “Report” as artifact:art_1@1.");
  });

  it("links an address without a part, and keeps a version the address already pins", async () => {
    const linked = await reply([], "summarize artifact:art_SRC titled Notes");
    expect(file(linked.steps[1]!, "document.md")).toContain("[source](artifact:art_SRC@3)");
    expect(linked.steps[1]!.toolCalls[0]!.input).toMatchObject({ title: "Notes" });
    const pinned = await reply([], "look at artifact:art_SRC@1 please");
    expect(file(pinned.steps[1]!, "document.md")).toContain("[source](artifact:art_SRC@1)");
  });

  it("fails once after publishing when asked, and succeeds when the reply is retried", async () => {
    const tools = fakeTools();
    const user: ModelMessage = { role: "user", text: "write a report and then fail" };
    const first = await step([user]);
    const messages: ModelMessage[] = [user, { role: "assistant", text: first.text, toolCalls: first.toolCalls }, { role: "tool", toolCallId: "call_1_0", toolName: "publish_artifact", ...tools("publish_artifact", first.toolCalls[0]!.input) }];
    const error = await step(messages).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ name: "ModelError", retryable: false, message: "The scripted model failed on purpose (the message asked for it)" });
    const retried = await reply([], "write a report and then fail", tools, { retry: true });
    expect(retried.steps.at(-1)).toMatchObject({ text: "Published “Report” as artifact:art_2@1.", finishReason: "stop" });
  });

  it("streams slowly when asked, and stops with an AbortError when the signal fires mid-reply", async () => {
    const controller = new AbortController();
    const deltas: string[] = [];
    const started = Date.now();
    const run = new ScriptedModel().step({ system: "", messages: [{ role: "user", text: "write a report slowly" }], tools: TOOLS, signal: controller.signal }, (d) => {
      deltas.push(d);
      if (deltas.length === 2) controller.abort();
    });
    await expect(run).rejects.toMatchObject({ name: "AbortError" });
    expect(deltas).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    const aborted = AbortSignal.abort();
    await expect(step([{ role: "user", text: "hello" }], { signal: aborted })).rejects.toMatchObject({ name: "AbortError" });
  });

  it("waits chunkDelayMs before each chunk", async () => {
    const started = Date.now();
    const s = await step([{ role: "user", text: "write a report" }], {}, new ScriptedModel({ chunkDelayMs: 20 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(20 * s.deltas.length - 5);
  });

  it("answers plain text when no rule matches, and says so when a tool it needs is missing", async () => {
    const s = await step([{ role: "user", text: "Hello there" }]);
    expect(s).toMatchObject({ toolCalls: [], finishReason: "stop" });
    expect(s.text).toContain("publish a document, a sheet or a deck");
    expect(s.deltas.length).toBeGreaterThan(1);
    const lacking = await step([{ role: "user", text: "write a report" }], { tools: TOOLS.filter((t) => t.name !== "publish_artifact") });
    expect(lacking.toolCalls).toEqual([]);
    expect(lacking.text).toContain("lacks the publish_artifact tool");
  });

  it("reads invoices, counts them, and says what failed on an error result", async () => {
    const { steps } = await reply([], "How many invoices are there?");
    expect(steps[0]!.toolCalls).toEqual([{ id: "call_1_0", name: "read_objects", input: { objectTypeId: "invoice" } }]);
    expect(steps[1]!.text).toBe("Found 3 invoice objects.");
    const failed = await reply([], "write a report", () => ({ result: { error: { code: "artifact_invalid", message: "document.md is empty." } }, isError: true }));
    expect(failed.steps[1]!.text).toBe("The publish_artifact call failed: document.md is empty.");
  });

  it("counts words as tokens", async () => {
    const s = await step([{ role: "user", text: "three word message" }]);
    expect(s.usage.inputTokens).toBe(3);
    expect(s.usage.outputTokens).toBe(s.text.split(/\s+/).filter(Boolean).length);
  });

  it("is deterministic: the same conversation gives the same steps and deltas", async () => {
    const run = async () => {
      const tools = fakeTools();
      const a = await reply([], "deck with a warning titled Q1", tools);
      const b = await reply(a.messages, "revise it with the final numbers", tools);
      return [...a.steps, ...b.steps];
    };
    const [one, two] = [await run(), await run()];
    expect(one.length).toBe(4);
    expect(two).toEqual(one);
  });
});
