import fs from "node:fs";
import vm from "node:vm";
import { describe, expect, inject, it } from "vitest";
import { escapeBeyondLatin1, withoutSourcesContent } from "./bundle";

describe("the workflow bundle's code (issue 15: one-byte in the workflow thread)", () => {
  it("escapes every unit above U+00FF without changing what the code computes", () => {
    // a comment, a string, an untagged template, a character class, an astral character under the u flag,
    // an identifier, and Latin-1 characters that stay as they are
    const source = [
      "// a comment — with a dash and an ellipsis …",
      "const naïveΔ = 'quote “x” → y';",
      "const cut = (s) => `${s.slice(0, 3)}…`;",
      "const blank = /^(?:|[-–—]|n\\/?a)$/i;",
      "const emoji = /^😀+$/u;",
      "({ text: naïveΔ, cut: cut('abcdef'), blanks: ['–', '—', 'x'].map((c) => blank.test(c)), emoji: [emoji.test('😀😀'), emoji.test('\\u{1F600}x')], latin: `× ø ·`, len: '😀'.length })",
    ].join("\n");
    const escaped = escapeBeyondLatin1(source);
    expect([...escaped].every((c) => c.charCodeAt(0) <= 0xff)).toBe(true);
    expect(escaped).toContain("× ø ·"); // Latin-1 is one-byte already
    expect(vm.runInNewContext(escaped)).toEqual(vm.runInNewContext(source));
    expect(vm.runInNewContext(escaped)).toEqual({ text: "quote “x” → y", cut: "abc…", blanks: [true, true, false], emoji: [true, false], latin: "× ø ·", len: 2 });
  });

  it("is one-byte: the suite's bundle (made by bundleWorkflows, as the build makes the prebuilt one) has no unit above U+00FF", () => {
    const code = fs.readFileSync(inject("workflowBundle"), "utf8");
    expect(code.length).toBeGreaterThan(100_000);
    const wide = code.match(/[^\u0000-\u00ff]/g) ?? [];
    expect(wide.slice(0, 5)).toEqual([]);
    // the engine's own text survives as escapes (truncated summaries end with an ellipsis)
    expect(code).toContain("\\u2026");
  });

  it("leaves the sources' text out of the inline source map and keeps what maps stack traces", () => {
    const code = fs.readFileSync(inject("workflowBundle"), "utf8");
    const mapOf = (c: string) => JSON.parse(Buffer.from(c.slice(c.lastIndexOf("base64,") + 7), "base64").toString("utf8")) as Record<string, unknown>;
    const before = mapOf(code);
    expect((before.sourcesContent as string[]).length).toBeGreaterThan(10);
    const slim = withoutSourcesContent(code);
    const after = mapOf(slim);
    expect(after.sourcesContent).toBeUndefined();
    expect({ ...after, sourcesContent: before.sourcesContent }).toEqual(before);
    const codeOf = (c: string) => c.slice(0, c.lastIndexOf("\n//# sourceMappingURL="));
    expect(codeOf(slim)).toBe(codeOf(code));
    expect(slim.length).toBeLessThan(code.length * 0.7);
    expect(withoutSourcesContent("const x = 1;")).toBe("const x = 1;");
  });
});
