import { describe, expect, it } from "vitest";
import { rewriteDeck, type DeckAddressHooks } from "./deck-frame";

const hooks = (readable: Set<string>): DeckAddressHooks & { calls: string[] } => {
  const calls: string[] = [];
  return {
    calls,
    link: async (a) => (calls.push(`link ${a}`), readable.has(a) ? `/artifacts/${a.slice(9)}` : undefined),
    image: async (a) => (calls.push(`image ${a}`), readable.has(a) ? `/img/${a.slice(9)}` : undefined),
    embed: async (a) => (calls.push(`embed ${a}`), readable.has(a) ? { html: "<svg></svg>", title: "Chart" } : undefined),
  };
};

describe("rewriteDeck", () => {
  it("resolves links, images and embeds for the reader and leaves everything else byte for byte", async () => {
    const source = `<!doctype html><html><head><link rel="stylesheet" href="deck.css"></head><body>
<section class="slide"><a class="x" href="artifact:art_1">doc</a> <a href="https://example.com">web</a>
<img src="artifact:art_2/logo.png" alt="Logo" class="logo"> <img src="local.png">
<svc-embed src="artifact:art_3#chart=A" title="Sales &amp; costs"></svc-embed>
<svc-embed src="artifact:art_4#chart=B"></svc-embed></section></body></html>`;
    const h = hooks(new Set(["artifact:art_1", "artifact:art_2/logo.png", "artifact:art_3#chart=A"]));
    const out = await rewriteDeck(source, h);
    expect(out).toContain(`<a class="x" href="/artifacts/art_1" data-svc-open target="_top">doc</a>`);
    expect(out).toContain(`<a href="https://example.com">web</a>`);
    expect(out).toContain(`<img alt="Logo" class="logo" src="/img/art_2/logo.png">`);
    expect(out).toContain(`<img src="local.png">`);
    expect(out).toContain(`<svc-embed src="artifact:art_3#chart=A" title="Sales &amp; costs" data-state="shown" data-title="Sales &amp; costs"><div class="svc-embed-body"><svg></svg></div></svc-embed>`);
    expect(out).toContain(`<svc-embed src="artifact:art_4#chart=B" data-state="unavailable"></svc-embed>`);
    expect(out.startsWith(`<!doctype html><html><head><link rel="stylesheet" href="deck.css"></head>`)).toBe(true);
  });

  it("turns what the reader cannot open into an empty box or a link without a target", async () => {
    const out = await rewriteDeck(`<a href="artifact:art_9">x</a><img src="artifact:art_9/a.png" alt="A">`, hooks(new Set()));
    expect(out).toBe(`<a data-state="unavailable" aria-disabled="true">x</a><svc-embed data-state="unavailable" role="img" aria-label="A"></svc-embed>`);
  });

  it("resolves each distinct address once and escapes what it writes", async () => {
    const h = hooks(new Set(['artifact:art_1"><script>']));
    const out = await rewriteDeck(`<a href='artifact:art_1"><script>'>a</a><a href='artifact:art_1"><script>'>b</a>`, h);
    expect(h.calls).toEqual([`link artifact:art_1"><script>`]);
    expect(out).not.toContain("<script>");
  });
});
