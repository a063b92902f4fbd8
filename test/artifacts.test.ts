/**
 * Artifacts over real HTTP (spec 2.7–2.11, 4.1, 4.3, 7, 8, 9): versions built from files uploaded with
 * POST /api/files, checked whole before they publish, owner-only reads, every address form resolved.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_TOKEN, client, startApp, tokenFor, uploadFile } from "./helpers";
import { ensureChromium } from "./setup/chromium";
import type { App } from "../core/app";
import { HandlerRunner } from "../core/runtime/handler";
import { Database } from "../core/store/db";

let app: App;
let dev: ReturnType<typeof client>;
let alice: ReturnType<typeof client>;
beforeAll(async () => {
  app = await startApp();
  dev = client(app);
  alice = client(app, await tokenFor(app, "alice"));
});
afterAll(() => app?.close());

const put = (content: string | Uint8Array, name: string, type = "application/octet-stream", token = DEV_TOKEN) => uploadFile(app, content, name, type, token);
const publish = (body: unknown, c = dev) => c.post("/api/artifacts", body);

const WORKBOOK = {
  sheets: [{ name: "Revenue", columns: { Month: "date", Revenue: { type: "currency", currency: "USD" }, Share: { type: "percent", decimals: 1 }, Link: "link" } }],
  charts: [{ name: "Revenue by month", type: "bar", sheet: "Revenue", x: "Month", y: ["Revenue"] }],
};
const CSV = "Month,Revenue,Share,Link\n2026-07-31,214800,0.41,https://example.com/a\n2026-08-31,209900,0.4,https://example.com/b\n2026-09-30,226400,0.43,https://example.com/c\n";

async function sheet(csv = CSV, workbook: unknown = WORKBOOK, extra: Array<{ path: string; file: { id: string } }> = []) {
  return publish({ kind: "sheet", title: "Revenue", files: [{ path: "workbook.json", file: await put(JSON.stringify(workbook), "workbook.json", "application/json") }, { path: "sheets/Revenue.csv", file: await put(csv, "Revenue.csv", "text/csv") }, ...extra] });
}
async function document(md: string, extra: Array<{ path: string; file: { id: string } }> = []) {
  return publish({ kind: "document", title: "Review", files: [{ path: "document.md", file: await put(md, "document.md", "text/markdown") }, ...extra] });
}

describe("publishing versions (spec 2.7, 3, 9)", () => {
  it("publishes version 1, then version 2, and never changes a published version", async () => {
    const first = await document("# Q3\n\nThe lede.\n\n## Highlights\n\nText.\n");
    expect(first.status).toBe(200);
    expect(first.body.artifact).toEqual({ id: expect.stringMatching(/^art_/), kind: "document", title: "Review", owner: "dev", latestVersion: 1, createdAt: expect.any(String), updatedAt: expect.any(String) });
    expect(first.body.version).toMatchObject({ version: 1, outline: { title: "Q3", lede: "The lede.", sections: [{ slug: "highlights", title: "Highlights", depth: 2 }] }, warnings: [] });
    const id = first.body.artifact.id;
    const v1 = (await dev.get(`/api/artifacts/${id}/versions/1`)).body;
    const second = await dev.post(`/api/artifacts/${id}/versions`, { title: "Review, revised", files: [{ path: "document.md", file: await put("# Q3, revised\n\n## Highlights\n", "document.md", "text/markdown") }] });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ artifactId: id, version: 2, title: "Review, revised" });
    expect((await dev.get(`/api/artifacts/${id}/versions/1`)).body).toEqual(v1);
    expect((await dev.get(`/api/artifacts/${id}`)).body).toMatchObject({ latestVersion: 2, title: "Review, revised" });
    expect((await dev.get(`/api/artifacts/${id}/versions`)).body.data.map((v: any) => v.version)).toEqual([1, 2]);
    // the version input may carry its kind (spec 2.7): the artifact's, never another (nothing published)
    const third = await dev.post(`/api/artifacts/${id}/versions`, { kind: "document", files: [{ path: "document.md", file: await put("# Q3, third\n", "document.md", "text/markdown") }] });
    expect(third.body).toMatchObject({ version: 3 });
    const other = await dev.post(`/api/artifacts/${id}/versions`, { kind: "sheet", files: [{ path: "document.md", file: await put("# Q3, fourth\n", "document.md", "text/markdown") }] });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: "conflict", message: `Artifact "${id}" is a document: its versions are too (kind "sheet" was sent); publish a new artifact for a sheet`, details: { kind: "sheet", artifactKind: "document" } });
    expect((await dev.get(`/api/artifacts/${id}`)).body.latestVersion).toBe(3);
    const missing = await dev.get(`/api/artifacts/${id}/versions/7`);
    expect(missing).toMatchObject({ status: 404, body: { error: { message: `Artifact ${id} has no version 7; latest is 3` } } });
    for (const method of ["PUT", "PATCH", "DELETE"]) expect((await dev.call(method, `/api/artifacts/${id}/versions/1`)).status).toBe(405);
    // the message names the path as requested, not the route's template
    expect((await dev.call("DELETE", `/api/artifacts/${id}/versions/1`)).body.error).toMatchObject({
      code: "method_not_allowed",
      message: `DELETE is not allowed on /api/artifacts/${id}/versions/1; use GET, HEAD`,
      details: { allow: ["GET", "HEAD"], route: "/api/artifacts/:artifactId/versions/:version" },
    });
    // HEAD wherever GET is (RFC 9110 9.3.2): the GET's status and headers, no body
    const head = await fetch(`${app.url}/api/artifacts/${id}/versions/1`, { method: "HEAD", headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect([head.status, head.headers.get("content-type"), await head.text()]).toEqual([200, "application/json; charset=utf-8", ""]);
    expect((await fetch(`${app.url}/api/artifacts/${id}/versions/7`, { method: "HEAD", headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status).toBe(404);
  });

  it("serves a version's files by path with the file headers", async () => {
    const logo = await put("<svg xmlns='http://www.w3.org/2000/svg'/>", "logo.svg", "image/svg+xml");
    const res = await document("# Doc\n\n![Logo](images/logo.svg)\n", [{ path: "images/logo.svg", file: logo }]);
    const got = await fetch(`${app.url}/api/artifacts/${res.body.artifact.id}/versions/1/files/images/logo.svg`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(got.status).toBe(200);
    expect(got.headers.get("x-content-type-options")).toBe("nosniff");
    expect(got.headers.get("content-disposition")).toMatch(/^attachment/); // SVG is active content
    expect((await fetch(`${app.url}/api/artifacts/${res.body.artifact.id}/versions/1/files/nope.png`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status).toBe(404);
  });

  it("lists the caller's artifacts newest first, filtered by kind, page by page", async () => {
    for (const n of [1, 2, 3]) await publish({ kind: "file", title: `Attachment ${n}`, files: [{ path: `a${n}.txt`, file: await put(`a${n}`, `a${n}.txt`, "text/plain") }] });
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await dev.get(`/api/artifacts?kind=file&pageSize=2${token ? `&nextPageToken=${token}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.data.every((a: any) => a.kind === "file")).toBe(true);
      seen.push(...page.body.data.map((a: any) => a.title));
      token = page.body.nextPageToken;
    } while (token);
    expect(seen.slice(0, 3)).toEqual(["Attachment 3", "Attachment 2", "Attachment 1"]);
    // a token is bound to its listing: another kind's, or another caller's, is refused rather than read as a position
    const first = await dev.get("/api/artifacts?kind=file&pageSize=1");
    expect(await dev.get(`/api/artifacts?kind=document&pageSize=1&nextPageToken=${first.body.nextPageToken}`)).toMatchObject({ status: 400, body: { error: { code: "invalid_request", message: expect.stringContaining("another kind") } } });
    expect((await alice.get(`/api/artifacts?kind=file&pageSize=1&nextPageToken=${first.body.nextPageToken}`)).status).toBe(400);
  });

  it("lists an artifact's versions oldest first, page by page, each page's token bound to its artifact", async () => {
    const first = await document("# v1\n");
    const id = first.body.artifact.id;
    for (const n of [2, 3, 4, 5]) expect((await dev.post(`/api/artifacts/${id}/versions`, { files: [{ path: "document.md", file: await put(`# v${n}\n`, "document.md", "text/markdown") }] })).status).toBe(200);
    const seen: number[] = [];
    const tokens: string[] = [];
    let token: string | undefined;
    do {
      const page = await dev.get(`/api/artifacts/${id}/versions?pageSize=2${token ? `&nextPageToken=${token}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.data.map((v: any) => v.version));
      token = page.body.nextPageToken;
      if (token) tokens.push(token);
    } while (token);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(tokens).toHaveLength(2); // the last page (version 5) says no more
    // without pageSize, one page of up to 50
    const whole = (await dev.get(`/api/artifacts/${id}/versions`)).body;
    expect(whole.data.map((v: any) => v.version)).toEqual([1, 2, 3, 4, 5]);
    expect(whole).not.toHaveProperty("nextPageToken");
    // another artifact's token, or an edited one, is refused rather than read as a position
    const other = (await document("# other\n")).body.artifact.id;
    expect(await dev.get(`/api/artifacts/${other}/versions?nextPageToken=${tokens[0]}`)).toMatchObject({ status: 400, body: { error: { code: "invalid_request", message: expect.stringContaining("another artifact's versions") } } });
    expect((await dev.get(`/api/artifacts/${id}/versions?nextPageToken=${tokens[0]!.slice(0, -2)}`)).status).toBe(400);
    expect((await dev.get(`/api/artifacts/${id}/versions?pageSize=201`)).status).toBe(400);
  });
});

describe("only the owner opens an artifact (spec 4.3)", () => {
  it("answers 404 to everyone else, never 403, and lists nothing of it", async () => {
    const mine = await document("# Mine\n");
    const id = mine.body.artifact.id;
    for (const path of [`/api/artifacts/${id}`, `/api/artifacts/${id}/versions`, `/api/artifacts/${id}/versions/1`, `/api/artifacts/${id}/versions/1/files/document.md`, `/api/artifacts/resolve?address=artifact:${id}`]) {
      expect((await alice.get(path)).status, path).toBe(404);
    }
    expect((await alice.post(`/api/artifacts/${id}/versions`, { files: [{ path: "document.md", file: await put("# Hers\n", "document.md", "text/markdown", (await tokenFor(app, "alice"))) }] })).status).toBe(404);
    expect((await alice.get("/api/artifacts")).body.data.map((a: any) => a.id)).not.toContain(id);
  });

  it("does not let an author publish files someone else uploaded", async () => {
    const hers = await put("# Hers\n", "document.md", "text/markdown", await tokenFor(app, "alice"));
    const res = await publish({ kind: "document", title: "Taken", files: [{ path: "document.md", file: hers }] });
    expect(res).toMatchObject({ status: 422, body: { error: { code: "artifact_invalid", details: { problems: [{ file: "document.md", message: expect.stringContaining("no file") }] } } } });
  });

  it("refuses system code (ctx.artifacts.publish) publishing for an owner that is no user identity, naming the owner, and stores no artifact", async () => {
    const sdk = app.container.resolve(HandlerRunner).artifacts("test:owner");
    const file = await sdk.upload("# Orphan\n", { name: "document.md", contentType: "text/markdown" });
    const db = app.container.resolve(Database);
    const count = async () => (await db.get<{ n: number }>("SELECT count(*) AS n FROM artifacts"))!.n;
    const before = await count();
    for (const [owner, why] of [["nobody-at-all", "is no identity of the project"], ["constructor", "is no identity of the project"], ["ops-bot", "is a service account"]] as const) {
      await expect(sdk.publish({ kind: "document", title: "Orphan", files: [{ path: "document.md", file }], owner }), owner).rejects.toMatchObject({
        code: "invalid_request",
        message: `The artifact's owner "${owner}" ${why}: an owner is a user identity id (users: dev, alice, auditor)`,
      });
    }
    expect(await count()).toBe(before);
    const published = await sdk.publish({ kind: "document", title: "Alice's", files: [{ path: "document.md", file }], owner: "alice" });
    expect((await alice.get(`/api/artifacts/${published.artifact.id}`)).body).toMatchObject({ owner: "alice", title: "Alice's" });
  });
});

describe("checks before a version is published (spec 4.3, 7, 8): the whole version, nothing half-published", () => {
  const problems = (res: { status: number; body: any }) => {
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("artifact_invalid");
    return res.body.error.details.problems.map((p: any) => p.message);
  };

  it("refuses bad paths and the wrong layout, listing every problem in one answer", async () => {
    const f = await put("x", "x.txt", "text/plain");
    const res = await publish({ kind: "document", title: "Bad", files: [{ path: "../x.txt", file: f }, { path: "/abs.txt", file: f }, { path: "a.txt", file: f }, { path: "a.txt", file: f }] });
    expect(problems(res)).toEqual([
      'files[0].path "../x.txt": a path has no empty, . or .. segment',
      'files[1].path "/abs.txt": paths are relative (no leading /)',
      'files[3].path "a.txt" appears twice',
      "A document needs document.md",
    ]);
    expect(res.body.error.details.totalProblems).toBe(4);
    expect(problems(await publish({ kind: "file", title: "Two", files: [{ path: "a.txt", file: f }, { path: "b.txt", file: f }] }))).toEqual(["A file artifact holds exactly one file, not 2"]);
    // a refused path is reported once, not again as a missing file of the layout
    expect(problems(await publish({ kind: "file", title: "Abs", files: [{ path: "/a", file: f }] }))).toEqual(['files[0].path "/a": paths are relative (no leading /)']);
    expect(problems(await publish({ kind: "sheet", title: "Abs", files: [{ path: "/workbook.json", file: f }] }))).toEqual(['files[0].path "/workbook.json": paths are relative (no leading /)']);
    expect(problems(await publish({ kind: "sheet", title: "No workbook", files: [{ path: "sheets/a.csv", file: f }] }))).toEqual(["A sheet needs workbook.json (and one CSV per sheet under sheets/)"]);
    expect(problems(await publish({ kind: "slides", title: "No deck", files: [{ path: "deck.css", file: f }] }))).toEqual(['A deck needs index.html with one <section class="slide"> per slide']);
  });

  it("names file, row and column of a cell that does not match its column's type", async () => {
    const res = await sheet(CSV.replace("214800", '"214,800"').replace("0.4,", "40%,").replace("2026-09-30", "2026-09-31"));
    expect(problems(res)).toEqual([
      'sheets/Revenue.csv row 2, column "Revenue" (B): expected an amount in USD as a number without symbols or separators, got "214,800"',
      'sheets/Revenue.csv row 3, column "Share" (C): expected a fraction such as 0.125 (for 12.5%) without a % sign, got "40%"',
      'sheets/Revenue.csv row 4, column "Month" (A): expected a real calendar date as YYYY-MM-DD, got "2026-09-31"',
    ]);
    expect(res.body.error.details.problems[0]).toMatchObject({ file: "sheets/Revenue.csv", row: 2, column: "Revenue", columnLetter: "B" });
  });

  it("keeps a document's images to files of the version and artifact addresses (spec 2.9)", async () => {
    expect(problems(await document("# D\n\n![x](https://example.com/x.png)\n\n![y](img/missing.png)\n"))).toEqual([
      'document.md line 3: images must be files in this version or artifact addresses, not "https://example.com/x.png"',
      'document.md line 5: image "img/missing.png" is not a file of this version',
    ]);
    // reference-style images ([id] with a definition) are the images their definitions give
    const notes = await put("plain text", "notes.txt", "text/plain");
    expect(problems(await document("# D\n\n![a][gone]\n\n![b][ext]\n\n![c][NOTES]\n\n![d](notes.txt)\n\n[gone]: img/gone.png\n[ext]: https://example.com/x.png\n[notes]: notes.txt\n", [{ path: "notes.txt", file: notes }]))).toEqual([
      'document.md line 3: image "img/gone.png" is not a file of this version',
      'document.md line 5: images must be files in this version or artifact addresses, not "https://example.com/x.png"',
      'document.md line 7: image "notes.txt" is not an image file (png, jpg, gif, webp, avif, svg, bmp or ico)',
      'document.md line 9: image "notes.txt" is not an image file (png, jpg, gif, webp, avif, svg, bmp or ico)',
    ]);
    // a reference without a definition is text, and a definition no reference uses is a link (not an image)
    const png = await put("\x89PNG", "logo.png", "image/png");
    const ok = await document("# D\n\n![a][logo] and ![b][nothing]\n\n[logo]: logo.png\n[unused]: notes.txt\n", [{ path: "logo.png", file: png }, { path: "notes.txt", file: notes }]);
    expect(ok.status).toBe(200);
  });

  it("refuses a text file it would read above 5 MiB, in the refusal's usual form", async () => {
    const res = await document("# Big\n\n" + "x".repeat(5 * 1024 * 1024));
    expect(problems(res)).toEqual(["document.md is 5,242,887 bytes; the text files a version's checks read (document.md, index.html, CSS, JSON) are at most 5 MiB (5,242,880 bytes)"]);
    expect(res.body.error.message).toMatch(/^The version was not published: document.md is 5,242,887 bytes/);
  });

  it("takes a document's lede as plain text: no raw HTML, no image alt text (spec 2.9)", async () => {
    const html = await document('# Notes\n\nSee <a href="https://example.com">the site</a> for **details**.\n');
    expect(html.body.version.outline.lede).toBe("See the site for details.");
    const png = await put("\x89PNG", "chart.png", "image/png");
    const image = await document("# Notes\n\n![Q4 revenue](chart.png)\n\nText.\n", [{ path: "chart.png", file: png }]);
    expect(image.status).toBe(200);
    expect(image.body.version.outline).not.toHaveProperty("lede");
  });

  it("keeps a deck to its own files and the allowed CDNs (spec 2.10)", async () => {
    const html = `<html><head><link rel="stylesheet" href="deck.css"><script src="https://evil.example.com/x.js"></script><script src="https://cdn.jsdelivr.net/npm/echarts@6/dist/echarts.min.js"></script></head><body><section class="slide"><img src="missing.png"><a href="https://example.com">fine</a></section></body></html>`;
    const res = await publish({ kind: "slides", title: "Deck", files: [{ path: "index.html", file: await put(html, "index.html", "text/html") }, { path: "deck.css", file: await put("body{background:url(bg.png)}", "deck.css", "text/css") }] });
    expect(problems(res)).toEqual([
      'index.html line 1: a deck loads only its own files and cdn.jsdelivr.net, cdnjs.cloudflare.com, unpkg.com, fonts.googleapis.com, fonts.gstatic.com, not "https://evil.example.com/x.js"',
      'index.html line 1: "missing.png" is not a file of this version',
      'deck.css: "bg.png" is not a file of this version',
    ]);
    // CSS cannot load artifact addresses (the frame rewrites them only in the HTML): refused, with the way that works
    const target = (await document("# Target\n")).body.artifact.id;
    const styled = `<html><head><style>.a{background:url(artifact:${target}/document.md)}</style></head><body><section class="slide" style="background-image:url('artifact:${target}/document.md')"></section></body></html>`;
    const css = await put(`.b{background:url("artifact:${target}/document.md")}`, "deck.css", "text/css");
    expect(problems(await publish({ kind: "slides", title: "Styled", files: [{ path: "index.html", file: await put(styled, "index.html", "text/html") }, { path: "deck.css", file: css }] }))).toEqual([
      `index.html line 1: CSS cannot load an artifact address ("artifact:${target}/document.md"): show another artifact's image with <img src="artifact:…">, or add the image to this deck's files`,
      `index.html line 1: CSS cannot load an artifact address ("artifact:${target}/document.md"): show another artifact's image with <img src="artifact:…">, or add the image to this deck's files`,
      `deck.css: CSS cannot load an artifact address ("artifact:${target}/document.md"): show another artifact's image with <img src="artifact:…">, or add the image to this deck's files`,
    ]);
    // every srcset candidate and an SVG <image> are checked as images; an artifact address there is refused (the frame rewrites <img src> only)
    const pictures = [
      `<html><body><section class="slide">`,
      `<img src="logo.png" srcset="logo.png 1x, logo@2x.png 2x, https://evil.example.com/l.png 3x">`,
      `<picture><source type="image/avif" srcset="wide.avif 1600w, narrow.avif 800w"><img src="logo.png" alt=""></picture>`,
      `<svg width="10" height="10"><image href="mark.png" width="10" height="10"/><image xlink:href="artifact:${target}/document.md"/></svg>`,
      `<img srcset="artifact:${target}/document.md 2x" src="logo.png">`,
      `<video poster="artifact:${target}/document.md" src="clip.mp4"></video><img srcset="x 2x,\nlogo.png\n3x">`,
      `</section></body></html>`,
    ].join("\n");
    const logo = await put(new Uint8Array([137, 80, 78, 71]), "logo.png", "image/png");
    expect(problems(await publish({ kind: "slides", title: "Pictures", files: [{ path: "index.html", file: await put(pictures, "index.html", "text/html") }, { path: "logo.png", file: logo }, { path: "narrow.avif", file: logo }] }))).toEqual([
      'index.html line 2: "logo@2x.png" is not a file of this version',
      'index.html line 2: a deck loads only its own files and cdn.jsdelivr.net, cdnjs.cloudflare.com, unpkg.com, fonts.googleapis.com, fonts.gstatic.com, not "https://evil.example.com/l.png"',
      'index.html line 3: "wide.avif" is not a file of this version',
      'index.html line 4: "mark.png" is not a file of this version',
      `index.html line 4: an <image xlink:href> cannot load an artifact address ("artifact:${target}/document.md"): addresses work in <img src>, <a href> and <svc-embed src>; add the file to this deck instead`,
      `index.html line 5: an srcset cannot load an artifact address ("artifact:${target}/document.md"): addresses work in <img src>, <a href> and <svc-embed src>; add the file to this deck instead`,
      'index.html line 6: "clip.mp4" is not a file of this version',
      `index.html line 6: a <video poster> cannot load an artifact address ("artifact:${target}/document.md"): addresses work in <img src>, <a href> and <svc-embed src>; add the file to this deck instead`,
      'index.html line 6: "x" is not a file of this version',
    ]);
    const empty = await publish({ kind: "slides", title: "Empty", files: [{ path: "index.html", file: await put("<html><body><p>no slides</p></body></html>", "index.html", "text/html") }] });
    const seen = 'index.html has no <section class="slide"> a reader sees (none outside <template> and <noscript>, without hidden)';
    expect(problems(empty)).toEqual([seen]);
    // slides a browser never lays out: inert content, or hidden (each published as one blank slide)
    for (const body of ['<template><section class="slide"><h2>t</h2></section></template>', '<noscript><section class="slide"><h2>n</h2></section></noscript>', '<section class="slide" hidden><h2>h</h2></section>']) {
      const inert = await publish({ kind: "slides", title: "Inert", files: [{ path: "index.html", file: await put(`<html><body>${body}</body></html>`, "index.html", "text/html") }] });
      expect(problems(inert), body).toEqual([seen]);
    }
  });

  it("checks theme.json tokens (spec 2.11), but not in a file artifact", async () => {
    const theme = await put(JSON.stringify({ mode: "dim", tokens: { "--primary": "#12345", "--shadow": "0 0 1px red" } }), "theme.json", "application/json");
    const res = await document("# D\n", [{ path: "theme.json", file: theme }]);
    // a wrong mode does not hide the tokens' problems: every one is listed
    expect(problems(res)).toEqual([
      "theme.json mode: mode must be light or dark",
      'theme.json --primary must be a CSS color, got "#12345"',
      expect.stringMatching(/^theme.json sets --shadow, which is not a settable token/),
    ]);
    const tokens = await put(JSON.stringify({ tokens: { "--primary": "#12345", "--shadow": "0 0 1px red", "--radius": "8px", "--font-mono": "JetBrains Mono, monospace" } }), "theme.json", "application/json");
    expect(problems(await document("# D\n", [{ path: "theme.json", file: tokens }]))).toEqual([
      'theme.json --primary must be a CSS color, got "#12345"',
      expect.stringMatching(/^theme.json sets --shadow, which is not a settable token/),
    ]);
    const notTokens = await put(JSON.stringify({ mode: "dark", tokens: 5 }), "theme.json", "application/json");
    expect(problems(await document("# D\n", [{ path: "theme.json", file: notTokens }]))).toEqual([expect.stringMatching(/^theme\.json tokens: /)]);
    expect((await publish({ kind: "file", title: "Just a file", files: [{ path: "theme.json", file: theme }] })).status).toBe(200);
  });

  it("keeps the mode a version's theme pins in its outline (null when none), so the pages need not read theme.json again", async () => {
    const dark = await put(JSON.stringify({ mode: "dark", tokens: { "--primary": "#123456" } }), "theme.json", "application/json");
    const unpinned = await put(JSON.stringify({ tokens: { "--primary": "#123456" } }), "theme.json", "application/json");
    const modes = [];
    for (const extra of [[{ path: "theme.json", file: dark }], [{ path: "theme.json", file: unpinned }], []]) {
      const res = await document("# D\n\nText.\n", extra);
      expect(res.status, res.text).toBe(200);
      modes.push(res.body.version.outline.themeMode);
    }
    expect(modes).toEqual(["dark", null, null]);
  });

  it("publishes a sheet with a CSV no sheet names, with a warning naming the file", async () => {
    const res = await sheet(CSV, WORKBOOK, [{ path: "sheets/revenue-old.csv", file: await put(CSV, "revenue-old.csv", "text/csv") }]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.version.warnings).toEqual([
      { code: "sheet_file_unused", file: "sheets/revenue-old.csv", message: "sheets/revenue-old.csv is not the file of any sheet in workbook.json (its sheets: Revenue; the sheet named N reads sheets/N.csv): it is kept with the version, but no tab shows it" },
    ]);
    expect((await sheet()).body.version.warnings).toEqual([]);
  });

  it("publishes an empty document with a warning saying readers see nothing (blank, or only empty blocks), and one with content without", async () => {
    const empty = { code: "document_empty", file: "document.md", message: expect.stringMatching(/^document\.md shows nothing: it has no text, image or embed/) };
    for (const md of ["", "\n  \n", "#\n\n>\n\n- \n\n---\n\n<!-- a comment -->\n\n<div></div>\n\n[ref]: https://example.com\n"]) {
      const res = await document(md);
      expect(res.status, res.text).toBe(200);
      expect(res.body.version.warnings, JSON.stringify(md)).toEqual([empty]);
      // the next version is checked again: one with content has no warning
      const next = await dev.post(`/api/artifacts/${res.body.artifact.id}/versions`, { files: [{ path: "document.md", file: await put("# Filled\n", "document.md", "text/markdown") }] });
      expect(next.body.warnings).toEqual([]);
    }
    for (const md of ["Just a line.\n", "![A figure](images/a.svg)\n", "```\ncode\n```\n", "| A |\n|---|\n| 1 |\n"]) {
      const files = md.includes("images/") ? [{ path: "images/a.svg", file: await put("<svg xmlns='http://www.w3.org/2000/svg'/>", "a.svg", "image/svg+xml") }] : [];
      expect((await document(md, files)).body.version.warnings, md).toEqual([]);
    }
  });

  it("publishes a 100,000-row × 20-column sheet, and refuses 100,001 rows naming the limit", async () => {
    const columns = Array.from({ length: 20 }, (_, i) => `C${i + 1}`);
    const workbook = { sheets: [{ name: "Big", columns: Object.fromEntries(columns.map((c) => [c, "number"])) }] };
    const csv = (rows: number) => {
      const line = columns.map((_, i) => String(i * 1.5)).join(",") + "\n";
      return columns.join(",") + "\n" + line.repeat(rows);
    };
    const files = async (rows: number) => [{ path: "workbook.json", file: await put(JSON.stringify(workbook), "workbook.json", "application/json") }, { path: "sheets/Big.csv", file: await put(csv(rows), "Big.csv", "text/csv") }];
    const ok = await publish({ kind: "sheet", title: "Big", files: await files(100_000) });
    expect(ok.status).toBe(200);
    expect(ok.body.version.outline.sheets).toEqual([{ name: "Big", columns, rows: 100_000 }]);
    const over = await publish({ kind: "sheet", title: "Too big", files: await files(100_001) });
    expect(over.status).toBe(422);
    expect(over.body.error.details.problems.map((p: any) => p.message).join("\n")).toMatch(/100,000/);
  }, 120_000);
});

describe("addresses (spec 2.7, 4.3, 9)", () => {
  let sheetId: string;
  let docId: string;
  beforeAll(async () => {
    sheetId = (await sheet()).body.artifact.id;
    docId = (await document(`# Review\n\n## Q3 results\n\n![chart](artifact:${sheetId}#chart=Revenue%20by%20month)\n\n## Q3 results\n`)).body.artifact.id;
  });
  const resolve = (address: string, c = dev) => c.get(`/api/artifacts/resolve?address=${encodeURIComponent(address)}`);

  it("resolves every address form", async () => {
    const base = { artifact: { id: sheetId, kind: "sheet", title: "Revenue", latestVersion: 1 }, version: 1 };
    expect((await resolve(`artifact:${sheetId}`)).body).toEqual({ address: `artifact:${sheetId}`, ...base, follows: "latest" });
    expect((await resolve(`artifact:${sheetId}@1`)).body).toMatchObject({ follows: "fixed", version: 1 });
    expect((await resolve(`artifact:${sheetId}/sheets/Revenue.csv`)).body.file).toEqual({ path: "sheets/Revenue.csv", contentType: "text/csv", size: CSV.length });
    expect((await resolve(`artifact:${sheetId}#Revenue`)).body.part).toEqual({ kind: "sheet", sheet: "Revenue", columns: ["Month", "Revenue", "Share", "Link"], rows: 3 });
    expect((await resolve(`artifact:${sheetId}#Revenue!A2:B3`)).body.part).toEqual({ kind: "range", sheet: "Revenue", range: "A2:B3", columns: ["Month", "Revenue"], rows: [2, 3] });
    expect((await resolve(`artifact:${sheetId}#Revenue!B:C`)).body.part).toMatchObject({ kind: "range", range: "B:C", columns: ["Revenue", "Share"], rows: [1, 4] });
    expect((await resolve(`artifact:${sheetId}#chart=Revenue%20by%20month`)).body.part).toEqual({ kind: "chart", chart: "Revenue by month", sheet: "Revenue" });
    expect((await resolve(`artifact:${docId}#q3-results-1`)).body.part).toEqual({ kind: "section", slug: "q3-results-1", title: "Q3 results" });
    // the title's slug (its heading's anchor) is the whole document
    const whole = (await resolve(`artifact:${docId}#review`)).body;
    expect(whole).toMatchObject({ address: `artifact:${docId}#review`, artifact: { id: docId, kind: "document" }, follows: "latest" });
    expect(whole.part).toBeUndefined();
  });

  it("says what the target has instead when an address names nothing", async () => {
    expect((await resolve(`artifact:${sheetId}#chart=Costs`)).body.error.message).toBe(`artifact ${sheetId} has no chart "Costs"; its charts are: Revenue by month`);
    expect((await resolve(`artifact:${sheetId}@7`)).body.error.message).toBe(`Artifact ${sheetId} has no version 7; latest is 1`);
    expect((await resolve(`artifact:${sheetId}#Revenue!F2`)).body.error.message).toBe(`artifact ${sheetId} sheet "Revenue" has columns A to D (Month, Revenue, Share, Link), not F`);
    expect((await resolve(`artifact:${docId}#nope`)).body.error.message).toBe(`artifact ${docId} has no section "nope"; its sections are: q3-results, q3-results-1`);
    const malformed = await resolve(`artifact:${sheetId}#Revenue!A0`);
    expect(malformed).toMatchObject({ status: 400, body: { error: { code: "invalid_request", details: { position: expect.any(Number) } } } });
  });

  it("refuses a version whose address names nothing, saying what the target has", async () => {
    const res = await document(`# D\n\nSee [the costs](artifact:${sheetId}#chart=Costs).\n`);
    expect(res.status).toBe(422);
    expect(res.body.error.details.problems[0].message).toBe(`document.md line 3: artifact:${sheetId}#chart=Costs names nothing: artifact ${sheetId} has no chart "Costs"; its charts are: Revenue by month`);
    const other = await document(`# D\n\n[x](artifact:art_01ZZZZZZZZZZZZZZZZZZZZZZZZ)\n`);
    expect(other.body.error.details.problems[0].message).toMatch(/names nothing: No artifact "art_01ZZZZZZZZZZZZZZZZZZZZZZZZ"/);
  });

  it("resolves against what the author can read: another user's artifact names nothing", async () => {
    const aliceToken = await tokenFor(app, "alice");
    const res = await alice.post("/api/artifacts", { kind: "document", title: "Hers", files: [{ path: "document.md", file: await put(`# Hers\n\n[x](artifact:${sheetId})\n`, "document.md", "text/markdown", aliceToken) }] });
    expect(res.status).toBe(422);
    expect(res.body.error.details.problems[0].message).toMatch(/names nothing: No artifact/);
  });

  it("publishes with a warning naming the dependent when a new version removes what it shows (spec 4.3)", async () => {
    const renamed = { ...WORKBOOK, charts: [{ ...WORKBOOK.charts[0]!, name: "Revenue" }] };
    const res = await dev.post(`/api/artifacts/${sheetId}/versions`, { files: [{ path: "workbook.json", file: await put(JSON.stringify(renamed), "workbook.json", "application/json") }, { path: "sheets/Revenue.csv", file: await put(CSV, "Revenue.csv", "text/csv") }] });
    expect(res.status).toBe(200);
    expect(res.body.version).toBe(2);
    expect(res.body.warnings).toEqual([{ code: "dependent_broken", artifactId: docId, address: `artifact:${sheetId}#chart=Revenue%20by%20month`, reason: `artifact ${sheetId} has no chart "Revenue by month"; its charts are: Revenue`, message: `Artifact ${docId} shows artifact:${sheetId}#chart=Revenue%20by%20month, which this version no longer has: artifact ${sheetId} has no chart "Revenue by month"; its charts are: Revenue` }]);
    // the pinned address stays on version 1 forever
    expect((await resolve(`artifact:${sheetId}@1#chart=Revenue%20by%20month`)).status).toBe(200);
    expect((await resolve(`artifact:${sheetId}#chart=Revenue%20by%20month`)).status).toBe(404);
  });
});

describe("the sandbox's seeded artifacts", () => {
  it("has a sheet with charts, a document and a deck that reference each other", async () => {
    const list = (await dev.get("/api/artifacts?pageSize=200")).body.data as Array<{ id: string; kind: string; title: string; latestVersion: number }>;
    const byTitle = Object.fromEntries(list.map((a) => [a.title, a]));
    expect(byTitle["Revenue 2026"]).toMatchObject({ kind: "sheet", latestVersion: 2 });
    expect(byTitle["Q3 billing review"]).toMatchObject({ kind: "document", latestVersion: 1 });
    expect(byTitle["Q3 in four slides"]).toMatchObject({ kind: "slides", latestVersion: 1 });
    const deck = (await dev.get(`/api/artifacts/${byTitle["Q3 in four slides"]!.id}/versions/1`)).body;
    expect(deck.outline.slides).toHaveLength(4);
  });
});

describe("deck checks at publish time (spec 4.3)", () => {
  const deckFiles = async (slides: string) => [{ path: "index.html", file: await put(`<!doctype html><html lang="en"><head><title>Deck</title></head><body>${slides}</body></html>`, "index.html", "text/html") }];
  const SLIDES = '<section class="slide title"><h1>Checked deck</h1><p>A subtitle that reads well</p></section><section class="slide"><h2>Fine print</h2><p style="font-size:10px">This text is far too small to read from the back of the room</p></section>';
  let checked: App;
  beforeAll(async () => {
    ensureChromium();
    checked = await startApp({ env: { SVC_DECK_CHECKS: "true" } });
  }, 300_000);
  afterAll(() => checked?.close());

  it("lays a published deck out in Chromium: a warning per slide and rule, a screenshot of each slide", async () => {
    const c = client(checked);
    const form = async (content: string, name: string, type: string) => {
      const f = new FormData();
      f.append("file", new Blob([content], { type }), name);
      return (await (await fetch(`${checked.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}` }, body: f })).json()) as { id: string };
    };
    const res = await c.post("/api/artifacts", { kind: "slides", title: "Checked", files: [{ path: "index.html", file: await form(`<!doctype html><html lang="en"><head><title>Deck</title></head><body>${SLIDES}</body></html>`, "index.html", "text/html") }] });
    expect(res.status).toBe(200);
    const { version } = res.body;
    expect(version.warnings).toEqual([expect.objectContaining({ code: "small_text", slide: 2, message: expect.stringMatching(/^Slide 2: /) })]);
    expect(version.outline.checks).toMatchObject({ checked: true, slides: [{ number: 1 }, { number: 2 }] });
    const shot = await fetch(`${checked.url}/api/artifacts/${res.body.artifact.id}/versions/1/checks/2`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    expect(shot.status).toBe(200);
    expect(shot.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await shot.arrayBuffer()).subarray(1, 4).toString()).toBe("PNG");
    expect((await fetch(`${checked.url}/api/artifacts/${res.body.artifact.id}/versions/1/checks/3`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } })).status).toBe(404);
  });

  it("publishes a deck unchecked, and says so, when there is no browser", async () => {
    const bare = await startApp({ env: { SVC_DECK_CHECKS: "true", SVC_CHROMIUM_PATH: "/nonexistent/chromium" } });
    try {
      const c = client(bare);
      const f = new FormData();
      f.append("file", new Blob([`<html><body>${SLIDES}</body></html>`], { type: "text/html" }), "index.html");
      const file = (await (await fetch(`${bare.url}/api/files`, { method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}` }, body: f })).json()) as { id: string };
      const res = await c.post("/api/artifacts", { kind: "slides", title: "Unchecked", files: [{ path: "index.html", file }] });
      expect(res.status).toBe(200);
      expect(res.body.version.warnings).toEqual([{ code: "deck_unchecked", message: expect.stringMatching(/^The deck was published unchecked: /) }]);
      expect(res.body.version.outline.checks).toEqual({ checked: false, reason: expect.any(String) });
    } finally {
      await bare.close();
    }
  });
});
