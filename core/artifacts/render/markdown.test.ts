import { DomUtils, parseDocument } from "htmlparser2";
import type { Element } from "domhandler";
import { rehypeGithubAlerts } from "rehype-github-alerts";
import rehypeStringify from "rehype-stringify";
import remarkParse from "remark-parse";
import remarkRehype from "remark-rehype";
import { unified } from "unified";
import { describe, expect, it } from "vitest";
import { readDocument } from "../content";
import { renderDocument, renderSection, type DocumentRenderOptions } from "./markdown";
import { isFigureText } from "./figures";

/** Options that record every call; `embed` answers from `embeds` (address → HTML) when given. */
function options(extra: Partial<DocumentRenderOptions> = {}) {
  const calls = { image: [] as string[], link: [] as string[], embed: [] as Array<[string, string]>, addressImage: [] as string[] };
  const opts: DocumentRenderOptions = {
    imageUrl: (path) => (calls.image.push(path), `/v/2/files/${path}`),
    linkUrl: (address) => (calls.link.push(address), `/artifacts/open?a=${encodeURIComponent(address)}`),
    ...extra,
  };
  return { opts, calls };
}

const html = async (md: string, extra: Partial<DocumentRenderOptions> = {}) => (await renderDocument(md, options(extra).opts)).html;
const dom = (h: string) => parseDocument(h);
const all = (h: string, pred: (el: Element) => boolean) => DomUtils.findAll(pred, dom(h).children);
const byTag = (h: string, tag: string) => all(h, (el) => el.name === tag);
const classes = (el: Element) => (el.attribs.class ?? "").split(/\s+/).filter(Boolean);

/** The sandbox's document (sandbox/artifacts.ts documentMd), with a sheet id. */
const SHEET = "art_01SHEET";
const SANDBOX_DOC = `# Q3 billing review

Revenue grew every month of the quarter but one, and margins held near 37%. This review walks through
the numbers, the invoices still open, and what we change for Q4.

![Sandbox billing](images/logo.svg "Sandbox billing, internal")

## Highlights

- Revenue for Q3: **651,100 USD**, up 12% on Q2.
- Margin stayed between 37% and 39%.
- [x] Monthly statements automated
- [ ] Overdue scan tuned for enterprise customers

> [!NOTE]
> The chart below follows the latest version of the revenue sheet; the table after it is pinned to
> version 1, as it was when this review was written.

## Revenue

![Revenue and costs by month](artifact:${SHEET}#chart=Revenue%20by%20month)

### By month

![Q2 as first published](artifact:${SHEET}@1#Revenue!A1:D4)

| Month | Revenue (USD) | Margin |
|:------|--------------:|-------:|
| July | 214,800 | 37.7% |
| August | 209,900 | 37.5% |
| September | 226,400 | 39.1% |

## Open invoices

Acme's INV-1002 (15,000 USD) waits for approval[^approval]. See [the whole sheet](artifact:${SHEET}) or
[its margin chart](artifact:${SHEET}#chart=Margin).

[^approval]: Invoices above 5,000 USD need a holder of \`approve:invoice\`.
`;

describe("renderDocument: safety (raw HTML is never rendered)", () => {
  it("drops script, event handlers, javascript: links and other raw HTML", async () => {
    const out = await html(`# T

<script>alert(1)</script>

Inline <img src=x onerror="alert(1)"> and <a href="javascript:alert(2)" onclick="x()">raw link</a>.

<iframe src="https://evil.example"></iframe>

<div style="position:fixed" onmouseover="alert(3)">block</div>

[md link](javascript:alert(4)) and [upper](JAVASCRIPT:alert(5)) and ![img](javascript:alert(6)) and ![data](data:image/svg+xml,<svg/onload=alert(7)>)

<svc-embed data-slot="0"></svc-embed>
`);
    expect(out).not.toMatch(/<script/i);
    expect(out).not.toMatch(/onerror|onclick|onmouseover|onload/i);
    expect(out).not.toMatch(/javascript:/i);
    expect(out).not.toMatch(/<iframe|<svc-embed|style=/i);
    expect(out).toContain("md link");
    expect(byTag(out, "img")).toEqual([]); // the javascript: and data: images became their alt text
  });

  it("sanitizes what the caller's URL callbacks return (only embed HTML is trusted)", async () => {
    const out = await html("[a](artifact:art_1) ![b](images/b.png)", { linkUrl: () => "javascript:alert(1)", imageUrl: () => "javascript:alert(2)" });
    expect(out).not.toContain("javascript:");
  });

  it("renders GFM: strikethrough, autolinks, tables, task lists", async () => {
    const out = await html("~~gone~~ www.example.com and https://example.org/x\n\n| a |\n|---|\n| x |\n\n- [x] done\n- [ ] todo\n");
    expect(out).toContain("<del>gone</del>");
    expect(out).toContain('<a href="http://www.example.com" rel="noopener noreferrer">www.example.com</a>');
    expect(out).toContain('<a href="https://example.org/x" rel="noopener noreferrer">');
    expect(byTag(out, "table")).toHaveLength(1);
    const boxes = byTag(out, "input");
    expect(boxes).toHaveLength(2);
    for (const box of boxes) expect(box.attribs).toMatchObject({ type: "checkbox", disabled: "" });
    expect(boxes.map((b) => "checked" in b.attribs)).toEqual([true, false]);
    expect(out).toContain('<ul class="contains-task-list">');
    expect(out).toContain('<li class="task-list-item">');
  });
});

describe("renderDocument: callouts (spec 2.9)", () => {
  it.each(["NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION"])("> [!%s] becomes GitHub alert markup with its classes", async (kind) => {
    const out = await html(`> [!${kind}]\n> Body *text*.\n>\n> Second paragraph.\n`);
    const alert = all(out, (el) => el.name === "div" && classes(el).includes("markdown-alert"));
    expect(alert).toHaveLength(1);
    expect(classes(alert[0]!)).toEqual(["markdown-alert", `markdown-alert-${kind.toLowerCase()}`]);
    const title = all(out, (el) => el.name === "p" && classes(el).includes("markdown-alert-title"));
    expect(DomUtils.textContent(title).trim()).toBe(kind[0] + kind.slice(1).toLowerCase());
    expect(byTag(out, "svg")).toHaveLength(1);
    expect(out).toContain("<em>text</em>");
    expect(out).toContain("<p>Second paragraph.</p>");
    expect(out).not.toContain(`[!${kind}]`);
    expect(out).not.toContain("<blockquote");
  });

  it("keeps its alert options when another processor attaches rehype-github-alerts with others", async () => {
    const other = unified().use(remarkParse).use(remarkRehype).use(rehypeGithubAlerts, { alerts: [{ keyword: "NOTE", icon: "<i></i>", title: "Other" }] }).use(rehypeStringify).freeze();
    expect(String(await other.process("> [!NOTE]\n> x\n"))).toContain("Other");
    const out = await html("> [!TIP]\n> Still a tip.\n");
    expect(out).toContain('<div class="markdown-alert markdown-alert-tip"><p class="markdown-alert-title"><svg class="octicon octicon-light-bulb mr-2"');
    expect(out).toContain("</svg>Tip</p>");
  });

  it("leaves ordinary quotes and unknown markers as quotes", async () => {
    const out = await html("> Just a quote.\n\n> [!FOO]\n> Not an alert.\n");
    expect(byTag(out, "blockquote")).toHaveLength(2);
    expect(out).not.toContain("markdown-alert");
  });
});

describe("renderDocument: headings, title, lede, outline", () => {
  it("gives headings GitHub ids (duplicates -1), without a user-content- prefix, the same as readDocument", async () => {
    const md = "# Title\n\n## Q3 results\n\n## Q3 results\n\n### Café & *crème* `code`!\n\n## Logo ![alt](images/l.png) and a call[^n]\n\n#### Deep one\n\n[^n]: note\n";
    const { html: out, outline } = await renderDocument(md, options().opts);
    const ids = all(out, (el) => /^h[1-6]$/.test(el.name) && el.attribs.id !== "footnote-label").map((el) => el.attribs.id);
    expect(ids).toEqual(["title", "q3-results", "q3-results-1", "café--crème-code", "logo-alt-and-a-call", "deep-one"]);
    expect(ids).toEqual(["title", ...(await readDocument(md)).sections.map((s) => s.slug)]);
    expect(out).not.toMatch(/id="user-content-(?!fn)/);
    expect(outline).toEqual([
      { depth: 2, slug: "q3-results", text: "Q3 results" },
      { depth: 2, slug: "q3-results-1", text: "Q3 results" },
      { depth: 3, slug: "café--crème-code", text: "Café & crème code!" },
      { depth: 2, slug: "logo-alt-and-a-call", text: "Logo alt and a call" },
    ]);
  });

  it("gives nested headings ids without shifting the top-level slugs readDocument knows", async () => {
    const md = "> ## Notes\n\n## Notes\n\n- ## Notes\n";
    const out = await html(md);
    const ids = byTag(out, "h2").map((h) => h.attribs.id);
    expect(ids).toEqual(["notes-1", "notes", "notes-2"]);
    expect((await readDocument(md)).sections.map((s) => s.slug)).toEqual(["notes"]);
  });

  it("classes the first # heading doc-title and the paragraph right after it doc-lede", async () => {
    const { html: out, title, lede } = await renderDocument("Intro text.\n\n# The title\n\nThe lede, *short*.\n\nBody.\n\n# Second h1\n\nNot a lede.\n", options().opts);
    expect(out).toContain('<h1 id="the-title" class="doc-title">The title</h1>');
    expect(out).toContain('<p class="doc-lede">The lede, <em>short</em>.</p>');
    expect(out).toContain('<h1 id="second-h1">Second h1</h1>');
    expect(all(out, (el) => classes(el).includes("doc-lede"))).toHaveLength(1);
    expect({ title, lede }).toEqual({ title: "The title", lede: "The lede, short." });
  });

  it("gives no lede when something else directly follows the title", async () => {
    const md = "# T\n\n- a list\n\nA paragraph.\n";
    const r = await renderDocument(md, options().opts);
    expect(r.html).not.toContain("doc-lede");
    expect(r.lede).toBeUndefined();
    expect((await readDocument(md)).lede).toBeUndefined();
  });
});

describe("renderDocument: ids", () => {
  it("lists every element id of the HTML, exactly as written there, and no text that looks like one", async () => {
    const md = "# T\n\nProse with `id=\"forecast\"` in it[^it's].\n\n## By month\n\n### Détails\n\n[^it's]: A note.\n";
    const r = await renderDocument(md, options().opts);
    const inHtml = DomUtils.findAll((el) => el.attribs.id !== undefined, dom(r.html).children).map((el) => el.attribs.id!);
    expect([...r.ids].sort()).toEqual([...inHtml].sort());
    expect(r.ids).toEqual(expect.arrayContaining(["t", "by-month", "détails", "user-content-fn-it's", "user-content-fnref-it's"]));
    expect(r.ids).not.toContain("forecast");
    expect(r.html).toContain('id="forecast"'); // the prose's text, which a search of the HTML would have taken for an id
  });
});

describe("renderDocument: footnotes", () => {
  it("links calls and back-references to ids that exist, prefixed once", async () => {
    const out = await html("# T\n\nOne[^a], again[^a], two[^b].\n\n## Footnotes\n\n[^a]: First *note*.\n[^b]: Second note.\n[^unused]: Never called.\n");
    const doc = dom(out);
    const ids = new Set(DomUtils.findAll((el) => el.attribs.id !== undefined, doc.children).map((el) => el.attribs.id));
    const hrefs = DomUtils.findAll((el) => el.name === "a" && (el.attribs.href ?? "").startsWith("#"), doc.children).map((a) => a.attribs.href!.slice(1));
    expect(hrefs.length).toBe(3 + 3); // three calls, three back-references
    for (const h of hrefs) expect(ids.has(h), h).toBe(true);
    for (const a of DomUtils.findAll((el) => el.attribs["aria-describedby"] !== undefined, doc.children)) expect(ids.has(a.attribs["aria-describedby"]!)).toBe(true);
    expect(out).not.toContain("user-content-user-content");
    expect(out).toContain('id="user-content-fn-a"');
    expect(out).toContain('<section data-footnotes class="footnotes">');
    expect(out).not.toContain("Never called");
    expect(ids.has("footnotes")).toBe(true); // the author's heading keeps its slug beside the footnote label
  });
});

describe("renderDocument: images, figures and embeds (spec 2.9)", () => {
  it("makes a titled image alone in its paragraph a figure; an untitled one stays an image", async () => {
    const { opts, calls } = options();
    const { html: out } = await renderDocument('![Logo](./images/logo.svg "Our logo")\n\n![Plain](images/a%20b.png)\n\nText with ![inline](img/i.png "t") image.\n', opts);
    expect(out).toContain('<figure><img src="/v/2/files/images/logo.svg" alt="Logo"><figcaption>Our logo</figcaption></figure>');
    expect(out).toContain('<p><img src="/v/2/files/images/a%20b.png" alt="Plain"></p>');
    expect(out).toContain('<img src="/v/2/files/img/i.png" alt="inline" title="t">');
    expect(calls.image).toEqual(["images/logo.svg", "images/a b.png", "img/i.png"]);
    expect(byTag(out, "figure")).toHaveLength(1);
  });

  it("keeps external http(s) images, shows alt text for images that leave the artifact", async () => {
    const { opts, calls } = options();
    const { html: out } = await renderDocument('![Ext](https://cdn.example.com/x.png "Remote")\n\nA ![up](../outside.png) b\n', opts);
    expect(out).toContain('<figure><img src="https://cdn.example.com/x.png" alt="Ext"><figcaption>Remote</figcaption></figure>');
    expect(out).toContain("<p>A up b</p>");
    expect(calls.image).toEqual([]);
  });

  it("shows an address alone in its paragraph in place: embed HTML, then the alt as caption; embed called in document order", async () => {
    const seen: Array<[string, string]> = [];
    const embed = async (address: string, alt: string) => {
      seen.push([address, alt]);
      await new Promise((r) => setTimeout(r, address.includes("Margin") ? 5 : 0));
      return `<div class="embed-chart" style="height:300px">${address.includes("Margin") ? "M" : "R"}</div><p class="embed-source">Follows the latest version</p>`;
    };
    const out = await html(`![Revenue](artifact:${SHEET}#chart=Margin)\n\n![](artifact:${SHEET}#chart=Revenue%20by%20month)\n`, { embed });
    expect(seen).toEqual([[`artifact:${SHEET}#chart=Margin`, "Revenue"], [`artifact:${SHEET}#chart=Revenue%20by%20month`, ""]]);
    expect(out).toContain('<figure class="embed"><div class="embed-chart" style="height:300px">M</div><p class="embed-source">Follows the latest version</p><figcaption>Revenue</figcaption></figure>');
    expect(out).toContain('<figure class="embed"><div class="embed-chart" style="height:300px">R</div><p class="embed-source">Follows the latest version</p></figure>');
    expect(out).not.toContain("svc-embed");
  });

  it("renders a link card when embed is omitted or answers undefined", async () => {
    for (const extra of [{}, { embed: () => undefined }]) {
      const { opts, calls } = options(extra);
      const { html: out } = await renderDocument(`![Pinned table](artifact:${SHEET}@1#Revenue!A1:D4)\n`, opts);
      expect(out).toBe(`<figure class="embed embed-link"><a href="/artifacts/open?a=${encodeURIComponent(`artifact:${SHEET}@1#Revenue!A1:D4`)}" class="artifact-link">Pinned table</a></figure>`);
      expect(calls.link).toEqual([`artifact:${SHEET}@1#Revenue!A1:D4`]);
    }
  });

  it("passes canonical addresses to the callbacks", async () => {
    const { opts, calls } = options();
    await renderDocument("[x](artifact:art_1/Donn%C3%A9es/%41.csv)\n", opts);
    expect(calls.link).toEqual(["artifact:art_1/Données/A.csv"]);
  });

  it("uses addressImageUrl for an address image that is not alone, else its alt text", async () => {
    const withUrl = await html("Logo: ![the logo](artifact:art_2/images/l.png) here", { addressImageUrl: (a) => `/img?a=${encodeURIComponent(a)}` });
    expect(withUrl).toContain('<img src="/img?a=artifact%3Aart_2%2Fimages%2Fl.png" alt="the logo">');
    expect(await html("Logo: ![the logo](artifact:art_2/images/l.png) here")).toBe("<p>Logo: the logo here</p>");
    expect(await html("Logo: ![the logo](artifact:art_2/images/l.png) here", { addressImageUrl: () => undefined })).toBe("<p>Logo: the logo here</p>");
  });

  it("renders independent documents concurrently without mixing their embeds", async () => {
    const a = renderDocument("![A](artifact:art_A)\n", options({ embed: async () => "<b>from A</b>" }).opts);
    const b = renderDocument("![B](artifact:art_B)\n", options({ embed: () => "<b>from B</b>" }).opts);
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.html).toContain("from A");
    expect(rb.html).toContain("from B");
    expect(ra.html).not.toContain("from B");
  });

  it("rejects when embed throws", async () => {
    await expect(renderDocument("![A](artifact:art_A)\n", options({ embed: async () => { throw new Error("resolver down"); } }).opts)).rejects.toThrow("resolver down");
  });
});

describe("renderDocument: links", () => {
  it("opens addresses through linkUrl with class artifact-link; external links get rel", async () => {
    const { opts, calls } = options();
    const { html: out } = await renderDocument(`[sheet](artifact:${SHEET}) [ref][r] [ext](https://example.com "T") [mail](mailto:a@b.c) [anchor](#x) [rel](other.md) [proto](//cdn.example.com/a)\n\n[r]: artifact:${SHEET}#chart=Margin\n`, opts);
    expect(out).toContain(`<a href="/artifacts/open?a=artifact%3A${SHEET}" class="artifact-link">sheet</a>`);
    expect(out).toContain(`<a href="/artifacts/open?a=artifact%3A${SHEET}%23chart%3DMargin" class="artifact-link">ref</a>`);
    expect(out).toContain('<a href="https://example.com" title="T" rel="noopener noreferrer">ext</a>');
    expect(out).toContain('<a href="mailto:a@b.c">mail</a>');
    expect(out).toContain('<a href="#x">anchor</a>');
    expect(out).toContain('<a href="other.md">rel</a>');
    expect(out).toContain('<a href="//cdn.example.com/a" rel="noopener noreferrer">proto</a>');
    expect(calls.link).toEqual([`artifact:${SHEET}`, `artifact:${SHEET}#chart=Margin`]);
    expect(out).not.toContain("artifact:");
  });

  it("renders a link to an address that does not parse as its text", async () => {
    expect(await html("See [broken](artifact:nope) here.")).toBe("<p>See broken here.</p>");
  });
});

describe("renderDocument: tables", () => {
  it("right-aligns columns of figures, leaves mixed and text columns, keeps the author's alignment, wraps the table", async () => {
    const md = `| Name | Amount | Share | Delta | Budget | Mixed | Pinned | Code |
|------|--------|-------|-------|--------|-------|:-------|-----:|
| a | 214,800 | 37.7% | -3 | USD 5,000 | 12 | 1 | A1 |
| b | $1.2M | 0.5% | +12 | 5,000 EUR | n/a yet | 2 | B2 |
| c | 1,000.25 | — | (1,200) | €3.4k | 7 | 3 | C3 |
`;
    const out = await html(md);
    const [wrap] = all(out, (el) => el.name === "div" && classes(el).includes("table-wrap"));
    expect(wrap && DomUtils.getChildren(wrap).some((c) => (c as Element).name === "table")).toBe(true);
    const rows = byTag(out, "tr").map((tr) => DomUtils.getChildren(tr).filter((c): c is Element => (c as Element).name === "th" || (c as Element).name === "td"));
    for (const row of rows) {
      expect(row.map((c) => c.attribs.align ?? null)).toEqual([null, "right", "right", "right", "right", null, "left", "right"]);
      expect(row.map((c) => classes(c).includes("num"))).toEqual([false, true, true, true, true, false, false, false]);
    }
  });

  it("knows a figure when it sees one", () => {
    for (const t of ["214,800", "37.7%", "$1.2M", "-3", "USD 5,000", "5,000 USD", "+12%", "(1,200)", "€3.4k", "−0.5", "1 234 567", "2024", "0.75", "12 bn", "£10"]) expect(isFigureText(t), t).toBe(true);
    for (const t of ["", "—", "n/a", "Q3", "A1", "2024-07-01", "12:30", "1.2.3", "abc", "USD", "$", "%", "12 MB", "v2", "3 items"]) expect(isFigureText(t), t).toBe(false);
  });
});

describe("renderSection (spec 2.7 #<heading_slug>)", () => {
  const md = `# Doc

Lede.

## Alpha

A text[^f] with [a ref][r].

### Alpha detail

![Chart](artifact:${SHEET}#chart=Margin)

## Beta

Beta text.

[r]: https://example.com/r
[^f]: The footnote.
`;

  it("takes the heading and what follows up to the next heading of the same or a higher level", async () => {
    const { opts } = options();
    const alpha = (await renderSection(md, "alpha", opts))!;
    expect(alpha.startsWith('<h2 id="alpha">Alpha</h2>')).toBe(true);
    expect(alpha).toContain('<h3 id="alpha-detail">Alpha detail</h3>');
    expect(alpha).not.toContain("Beta");
    expect(alpha).not.toContain("Lede");
    expect(alpha).toContain('<a href="https://example.com/r" rel="noopener noreferrer">a ref</a>');
    const ids = new Set(all(alpha, (el) => el.attribs.id !== undefined).map((el) => el.attribs.id));
    for (const a of all(alpha, (el) => el.name === "a" && (el.attribs.href ?? "").startsWith("#"))) expect(ids.has(a.attribs.href!.slice(1))).toBe(true);
    expect(alpha).toContain("The footnote.");

    const detail = (await renderSection(md, "alpha-detail", opts))!;
    expect(detail.startsWith('<h3 id="alpha-detail">')).toBe(true);
    expect(detail).not.toContain("A text");
    const beta = (await renderSection(md, "beta", opts))!;
    expect(beta).toBe('<h2 id="beta">Beta</h2>\n<p>Beta text.</p>');
    expect(await renderSection(md, "gamma", opts)).toBeUndefined();
  });

  it("renders nested embeds as links without calling embed", async () => {
    const calls: string[] = [];
    const { opts } = options({ embed: (a) => (calls.push(a), "<div>embedded</div>") });
    const detail = (await renderSection(md, "alpha-detail", opts))!;
    expect(calls).toEqual([]);
    expect(detail).toContain(`<figure class="embed embed-link"><a href="/artifacts/open?a=${encodeURIComponent(`artifact:${SHEET}#chart=Margin`)}" class="artifact-link">Chart</a></figure>`);
    expect(detail).not.toContain("embedded");
  });
});

describe("the sandbox's document, end to end", () => {
  it("renders every convention of spec 2.9", async () => {
    const embedded: string[] = [];
    const { opts, calls } = options({ embed: (a, alt) => (embedded.push(a), a.includes("chart=") ? `<div class="chart" data-alt="${alt}"></div><p class="embed-source">Revenue sheet · latest version</p>` : undefined) });
    const r = await renderDocument(SANDBOX_DOC, opts);
    const read = await readDocument(SANDBOX_DOC);
    expect(r.title).toBe(read.title);
    expect(r.lede).toBe(read.lede);
    expect(r.outline.map((o) => o.slug)).toEqual(read.sections.filter((s) => s.depth === 2 || s.depth === 3).map((s) => s.slug));
    expect(r.outline).toEqual([
      { depth: 2, slug: "highlights", text: "Highlights" },
      { depth: 2, slug: "revenue", text: "Revenue" },
      { depth: 3, slug: "by-month", text: "By month" },
      { depth: 2, slug: "open-invoices", text: "Open invoices" },
    ]);
    const out = r.html;
    expect(out.startsWith('<h1 id="q3-billing-review" class="doc-title">Q3 billing review</h1>\n<p class="doc-lede">Revenue grew')).toBe(true);
    expect(out).toContain('<figure><img src="/v/2/files/images/logo.svg" alt="Sandbox billing"><figcaption>Sandbox billing, internal</figcaption></figure>');
    expect(calls.image).toEqual(["images/logo.svg"]);
    expect(all(out, (el) => el.name === "input").every((i) => "disabled" in i.attribs)).toBe(true);
    expect(out).toContain('<div class="markdown-alert markdown-alert-note"><p class="markdown-alert-title">');
    expect(embedded).toEqual([`artifact:${SHEET}#chart=Revenue%20by%20month`, `artifact:${SHEET}@1#Revenue!A1:D4`]);
    expect(out).toContain('<figure class="embed"><div class="chart" data-alt="Revenue and costs by month"></div><p class="embed-source">Revenue sheet · latest version</p><figcaption>Revenue and costs by month</figcaption></figure>');
    expect(out).toContain('<figure class="embed embed-link"><a href="/artifacts/open?a=');
    expect(out).toContain('<div class="table-wrap"><table>');
    expect(out).toContain('<th align="right" class="num">Revenue (USD)</th>');
    expect(out).toContain('<td align="right" class="num">37.7%</td>');
    expect(out).toContain('<td align="left">July</td>');
    expect(all(out, (el) => classes(el).includes("artifact-link"))).toHaveLength(3);
    expect(out).toContain('<section data-footnotes class="footnotes">');
    expect(out).not.toContain("artifact:art_"); // every address became a caller URL (only the trusted embed HTML could hold one)
    expect(out).not.toContain("[!NOTE]");
  });
});

describe("performance", () => {
  /** A 2,000-line report: prose, lists, tables, callouts, images, embeds, links, footnotes. */
  function bigDocument(seed: string): string {
    const lines = [`# Annual review ${seed}`, "", "The year in numbers, section by section.", ""];
    for (let i = 0; lines.length < 2000; i++) {
      lines.push(
        `## Region ${i}`,
        "",
        `Revenue in region ${i} grew for the third year running, driven by **enterprise renewals** and a`,
        `steady flow of new accounts; see [the sheet](artifact:art_${i}#Revenue!A1:C3), [the CRM](https://crm.example.com/${i})`,
        `and the footnote[^r${i}] for how we count. Churn stayed _below_ target and ~~pricing~~ packaging changed.`,
        "",
        "| Quarter | Revenue | Margin | Owner |",
        "|---|---|---|---|",
        `| Q1 | ${1000 + i},400 | 37.${i % 10}% | Ana |`,
        `| Q2 | ${1100 + i},900 | 38.1% | Ben |`,
        "",
        `> [!${["NOTE", "TIP", "WARNING"][i % 3]}]`,
        `> Figures for region ${i} are provisional until the audit closes.`,
        "",
        `- [x] Close the books for region ${i}`,
        `- [ ] Review pricing with the regional lead`,
        `- Plain item with \`code\` and www.example.com/${i}`,
        "",
        `![Revenue by month, region ${i}](artifact:art_${i}#chart=Revenue)`,
        "",
        `![Team photo](images/team-${i}.jpg "The regional team")`,
        "",
        `[^r${i}]: Counted at invoice date, net of credits, region ${i}.`,
        "",
      );
    }
    return lines.join("\n");
  }

  it("renders a 2,000-line document whole, the same HTML every time (the render cache keeps parsed documents)", async () => {
    const md = bigDocument("a");
    expect(md.split("\n").length).toBeGreaterThanOrEqual(2000);
    const { opts } = options({ embed: (a) => `<div class="chart">${a.length}</div>` });
    const first = await renderDocument(md, opts);
    for (let k = 0; k < 3; k++) expect((await renderDocument(md, opts)).html).toBe(first.html);
    expect(first.outline.length).toBeGreaterThan(80);
  });
});

describe("the parse cache", () => {
  it("never carries one render's URLs or embeds into another", async () => {
    const md = `# T\n\n[s](artifact:art_1) ![i](images/a.png)\n\n![E](artifact:art_2)\n`;
    const a = await html(md, { linkUrl: () => "/one", imageUrl: () => "/img-one", embed: () => "<b>one</b>" });
    const b = await html(md, { linkUrl: () => "/two", imageUrl: () => "/img-two" });
    expect(a).toContain('href="/one"');
    expect(a).toContain("<b>one</b>");
    expect(b).not.toMatch(/one/);
    expect(b).toContain('href="/two"');
    expect(b).toContain('<figure class="embed embed-link">');
    await renderSection(md, "t", options().opts);
    expect(await html(md, { linkUrl: () => "/one", imageUrl: () => "/img-one", embed: () => "<b>one</b>" })).toBe(a);
  });

  it("resolves reference-style links and images, alone or inline", async () => {
    const { opts, calls } = options();
    const { html: out } = await renderDocument('![Logo][logo]\n\nSee [the sheet][s] and ![icon][logo].\n\n[logo]: ./images/logo.svg "Our logo"\n[s]: artifact:art_9\n', opts);
    expect(out).toContain('<figure><img src="/v/2/files/images/logo.svg" alt="Logo"><figcaption>Our logo</figcaption></figure>');
    expect(out).toContain('<a href="/artifacts/open?a=artifact%3Aart_9" class="artifact-link">the sheet</a>');
    expect(out).toContain('<img src="/v/2/files/images/logo.svg" alt="icon" title="Our logo">');
    expect(calls.image).toEqual(["images/logo.svg", "images/logo.svg"]);
  });
});
