/** GET /api/events (spec 6.4) and its authorization scope (spec 5), in-process and over HTTP. */
import { expect, it } from "vitest";
import { DEV_TOKEN, client, describeMatrix, sandboxSuite, allEvents, startApp } from "./helpers";

const suite = sandboxSuite();

describeMatrix("events (spec 6.4, 5)", (transport) => {
  const dev = client(() => suite.app, DEV_TOKEN, transport);

  it("pages with the last cursor, oldest first, without gaps or repeats", async () => {
    const all = await allEvents(dev);
    expect(all.length).toBeGreaterThan(10);
    const paged: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await dev.get(`/api/events?limit=3${cursor ? `&afterCursor=${encodeURIComponent(cursor)}` : ""}`);
      if (res.body.count === 0) break;
      expect(res.body.count).toBe(res.body.events.length);
      paged.push(...res.body.events.map((e: any) => e.id));
      cursor = res.body.events.at(-1).cursor;
    }
    expect(paged).toEqual(all.map((e) => e.id));
    const topic = await dev.get("/api/events?topic=links&limit=1000");
    expect(topic.body.events.every((e: any) => e.topic === "links")).toBe(true);
    const type = await dev.get("/api/events?type=object.created&limit=1000");
    expect(type.body.count).toBeGreaterThanOrEqual(9);
    expect((await dev.get("/api/events?topic=gossip")).status).toBe(400);
  });

  it("refuses a query parameter the operation does not take (the WebSocket's types, a misspelt pageSize), which was dropped and answered unfiltered", async () => {
    const types = await dev.get("/api/events?types=action.failed");
    expect([types.status, types.body.error.code, types.body.error.details]).toEqual([400, "invalid_request", { parameter: "types" }]);
    expect(types.body.error.message).toBe('Unknown query parameter "types": GET /api/events takes topic, type, afterCursor, limit');
    expect((await dev.get("/api/objects?objectTypeId=customer&pagesize=1")).body.error?.details).toEqual({ parameter: "pagesize" });
    // an operation that takes no query parameter at all
    expect((await dev.get("/api/project?verbose=1")).status).toBe(400);
    expect((await dev.get("/api/events?type=action.failed&limit=1")).status).toBe(200);
  });

  it("refuses a cursor past the newest event (one it never issued), which would skip events in silence", async () => {
    const latest = (await dev.get("/api/events?limit=1000")).body.events.at(-1).cursor as string;
    const [tag, epoch, seq] = Buffer.from(latest, "base64url").toString().split(":");
    const ahead = Buffer.from(`${tag}:${epoch}:${Number(seq) + 1_000_000}`).toString("base64url");
    const res = await dev.get(`/api/events?afterCursor=${ahead}`);
    expect([res.status, res.body.error.message]).toEqual([400, "afterCursor is not a cursor of this event stream (it is past the newest event)"]);
    expect((await dev.get(`/api/events?afterCursor=${latest}`)).status).toBe(200);
  });

  it("names the page after a full one in a Link rel=next header, with the same filters, and none after a short page", async () => {
    const all = (await allEvents(dev)).filter((e) => e.type === "object.created");
    expect(all.length).toBeGreaterThanOrEqual(9);
    const first = await dev.get("/api/events?type=object.created&limit=2");
    expect(first.body.count).toBe(2);
    const paged: string[] = first.body.events.map((e: any) => e.id);
    let link = first.headers.get("link");
    let last = first;
    while (link) {
      const m = /^<([^>]+)>; rel="next"$/.exec(link);
      expect(m, link).not.toBeNull();
      const next = new URL(m![1]!, "http://svc.example");
      expect(next.pathname).toBe("/api/events");
      expect(next.searchParams.get("type")).toBe("object.created");
      expect(next.searchParams.get("limit")).toBe("2");
      expect(next.searchParams.get("afterCursor")).toBe(last.body.events.at(-1).cursor);
      last = await dev.get(`${next.pathname}${next.search}`);
      expect(last.status).toBe(200);
      paged.push(...last.body.events.map((e: any) => e.id));
      link = last.headers.get("link");
      if (last.body.count < 2) expect(link).toBeNull();
    }
    expect(paged).toEqual(all.map((e) => e.id));
    const short = await dev.get("/api/events?type=object.created&limit=1000");
    expect(short.body.count).toBe(all.length);
    expect(short.headers.get("link")).toBeNull();
  });

  it("scopes events to what the caller may view, and refuses a caller with no view permission", async () => {
    const seen = await allEvents(client(suite.app, suite.tokens.auditor, transport));
    expect(seen.length).toBeGreaterThan(0);
    for (const e of seen) {
      const types = [e.payload.objectTypeId, e.payload.sourceTypeId, e.payload.targetTypeId, e.payload.subject?.objectTypeId].filter(Boolean);
      expect(types.length, e.type).toBeGreaterThan(0);
      expect(types.every((t) => t === "customer"), e.type).toBe(true);
    }
    expect(seen.some((e) => e.type.startsWith("link."))).toBe(false);
    const alice = await allEvents(client(suite.app, suite.tokens.alice, transport));
    expect(alice.some((e) => e.type === "link.created")).toBe(true);
    expect(alice.some((e) => e.payload.actionId === "diagnostics.fail")).toBe(false);
    const none = await client(suite.app, suite.tokens.opsBot, transport).get("/api/events");
    expect(none.status).toBe(200); // ops-bot may run actions: it sees their events
    expect(none.body.events.every((e: any) => e.topic === "actions" && e.payload.actionId.startsWith("diagnostics."))).toBe(true);
  });
});

it("makes its Link headers absolute under SVC_API_PUBLIC_ORIGIN, a proxy's path prefix included, on the port bound with PORT=0", async () => {
  const prefixed = await startApp({ env: { SVC_API_PUBLIC_ORIGIN: "http://localhost:0/svc/" } });
  try {
    const port = new URL(prefixed.url).port;
    expect(prefixed.config.apiPublicOrigin).toBe(`http://localhost:${port}/svc`);
    const get = (path: string) => fetch(`${prefixed.url}${path}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } });
    // the seed's events fill a page of one: the next page's link is absolute
    const page = await get("/api/events?limit=1");
    expect(page.status).toBe(200);
    expect(page.headers.get("link")).toMatch(new RegExp(`^<http://localhost:${port}/svc/api/events\\?limit=1&afterCursor=[^>]+>; rel="next"$`));
    // a deprecated name's Link too, on an error answer as well
    const deprecated = await get("/api/schedules/no-such-schedule/dead-letters?limit=1");
    expect([deprecated.status, deprecated.headers.get("link")]).toEqual([404, `<http://localhost:${port}/svc/docs>; rel="deprecation"; type="text/html"`]);
  } finally {
    await prefixed.close();
  }
});
