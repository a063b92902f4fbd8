/**
 * RouteRegistry.dispatch decodes every route parameter once before the route's schema and handler see
 * it (h3 v2 leaves them percent-encoded, apart from the escapes it canonicalizes itself): a real h3 app,
 * requests through its fetch handler.
 */
import { H3 } from "h3";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { Lifecycle } from "../lifecycle";
import { RouteRegistry } from "./routes";
import { decodePathParams } from "./validation";

function appWithEchoRoute(): H3 {
  // every route here is auth: "none", so the authenticator is never called
  const routes = new RouteRegistry(() => Promise.reject(new Error("no authentication in this test")), new Lifecycle(), { error: () => undefined, warn: () => undefined });
  routes.add({
    method: "GET",
    path: "/echo/:name/files/**:path",
    summary: "Echo the route parameters",
    tags: ["test"],
    auth: "none",
    params: v.object({ name: v.string(), path: v.string() }),
    responses: { 200: { description: "The parameters as the handler got them" } },
    handler: ({ params }) => params,
  });
  const app = new H3();
  routes.mount(app);
  return app;
}

describe("route parameters", () => {
  const app = appWithEchoRoute();
  const get = async (path: string) => {
    const res = await app.fetch(new Request(`http://svc.test${path}`));
    return { status: res.status, body: (await res.json()) as any };
  };

  it("reach the handler decoded once: spaces, percent signs, slashes and non-ASCII text in a segment, a catch-all decoded whole", async () => {
    const name = "a b/50%/é";
    const res = await get(`/echo/${encodeURIComponent(name)}/files/dir%20one/${encodeURIComponent("x%2Fy.txt")}`);
    expect(res).toEqual({ status: 200, body: { name, path: "dir one/x%2Fy.txt" } });
    // an escaped escape stays one level escaped
    expect((await get(`/echo/${encodeURIComponent("%41")}/files/f`)).body.name).toBe("%41");
  });

  it("decodePathParams: a malformed escape is invalid_request naming the parameter (h3 answers such URLs 400 before routing: a guard)", () => {
    expect(decodePathParams({ a: "x%20y", b: "plain" })).toEqual({ a: "x y", b: "plain" });
    expect(() => decodePathParams({ a: "ok", b: "%E0%A4%A" })).toThrow(expect.objectContaining({ code: "invalid_request", details: { issues: [{ path: "path.b", message: "malformed percent-escape" }] } }));
  });
});

describe("named schemas in the OpenAPI document (RouteRegistry.component)", () => {
  const registry = () => new RouteRegistry(() => Promise.reject(new Error("no authentication in this test")), new Lifecycle(), { error: () => undefined, warn: () => undefined });
  const Item = v.object({ id: v.string(), tags: v.array(v.string()) });
  const Page = v.object({ data: v.array(Item), next: v.optional(Item) });

  it("writes a named schema once under components.schemas and a $ref wherever an operation holds it, nested ones included", () => {
    const routes = registry();
    routes.component("Item", Item);
    routes.component("Page", Page);
    routes.component("Item", Item); // the same schema under the same name again: allowed
    routes.add({ method: "GET", path: "/items", summary: "List", tags: ["test"], auth: "none", responses: { 200: { description: "A page", schema: Page } }, handler: () => ({ data: [] }) });
    routes.add({ method: "POST", path: "/items", summary: "Create", tags: ["test"], auth: "none", body: Item, responses: { 200: { description: "The item", schema: v.object({ item: Item }) } }, handler: ({ body }) => ({ item: body }) });
    const doc = routes.openapi({ title: "t", version: "1" }) as any;
    expect(doc.components.schemas.Item).toEqual({ type: "object", properties: { id: { type: "string" }, tags: { type: "array", items: { type: "string" } } }, required: ["id", "tags"] });
    expect(doc.components.schemas.Page).toEqual({ type: "object", properties: { data: { type: "array", items: { $ref: "#/components/schemas/Item" } }, next: { $ref: "#/components/schemas/Item" } }, required: ["data"] });
    expect(doc.paths["/items"].get.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Page" });
    expect(doc.paths["/items"].post.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Item" });
    expect(doc.paths["/items"].post.responses["200"].content["application/json"].schema).toEqual({ type: "object", properties: { item: { $ref: "#/components/schemas/Item" } }, required: ["item"] });
    expect(JSON.stringify(doc)).not.toContain("$defs");
  });

  it("refuses a name given to another schema, a name outside the pattern, the error body's name, and naming after mount", () => {
    const routes = registry();
    routes.component("Item", Item);
    expect(() => routes.component("Item", v.object({ id: v.string() }))).toThrow("Component Item is already another schema");
    expect(() => routes.component("Thing", Item)).toThrow("This schema is already component Item; it cannot also be Thing");
    expect(() => routes.component("An item", Item)).toThrow(/is not allowed/);
    expect(() => routes.component("Error", Item)).toThrow(/is not allowed/);
    routes.mount(new H3());
    expect(() => routes.component("Late", Item)).toThrow("Component Late named after the server started");
  });
});

describe("deprecated names (schemas.deprecated)", () => {
  const setup = (publicOrigin?: string) => {
    const warned: unknown[] = [];
    const routes = new RouteRegistry(() => Promise.reject(new Error("no authentication in this test")), new Lifecycle(), { error: () => undefined, warn: (o: unknown) => void warned.push(o) }, undefined, () => publicOrigin);
    routes.add({
      method: "GET",
      path: "/things",
      summary: "List",
      tags: ["test"],
      auth: "none",
      query: v.object({
        pageSize: v.optional(routes.schemas.queryInteger({ min: 1, max: 10 })),
        limit: v.pipe(v.optional(routes.schemas.queryInteger({ min: 1, max: 10, description: "The older name of pageSize" })), routes.schemas.deprecated({ since: "2026-11-29", use: "pageSize" })),
      }),
      responses: { 200: { description: "What the handler got" } },
      handler: ({ query }) => ({ n: query.pageSize ?? query.limit ?? 5 }),
    });
    routes.add({
      method: "POST",
      path: "/things",
      summary: "Create",
      tags: ["test"],
      auth: "none",
      body: v.union([v.strictObject({ kind: v.string() }), v.strictObject({ type: v.pipe(v.string(), routes.schemas.deprecated({ since: "2026-10-01", use: "kind" })) })]),
      responses: { 200: { description: "What the handler got" } },
      handler: ({ body }) => body,
    });
    const app = new H3();
    routes.mount(app);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await app.fetch(new Request(`http://svc.test${path}`, { method, ...(body ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}) }));
      return { status: res.status, deprecation: res.headers.get("deprecation"), link: res.headers.get("link"), body: (await res.json()) as any };
    };
    return { routes, call, warned };
  };

  it("documents a deprecated query parameter on the parameter, and a deprecated body property in its schema", () => {
    const doc = setup().routes.openapi({ title: "t", version: "1" }) as any;
    const parameters = doc.paths["/things"].get.parameters;
    expect(parameters.find((p: any) => p.name === "limit")).toMatchObject({ deprecated: true, description: "The older name of pageSize", schema: { type: "integer", minimum: 1, maximum: 10 } });
    expect(parameters.find((p: any) => p.name === "pageSize").deprecated).toBeUndefined();
    expect(JSON.stringify(parameters)).not.toContain("svc:deprecated");
    const body = doc.paths["/things"].post.requestBody.content["application/json"].schema;
    expect(body.anyOf[1].properties.type).toEqual({ type: "string", deprecated: true });
    expect(body.anyOf[0].properties.kind.deprecated).toBeUndefined();
  });

  it("answers a request that sends a deprecated name with Deprecation (RFC 9745) and its Link, logs it once, and leaves other requests alone", async () => {
    const { call, warned } = setup();
    const old = await call("GET", "/things?limit=3");
    expect(old).toEqual({ status: 200, deprecation: `@${Date.UTC(2026, 10, 29) / 1000}`, link: '</docs>; rel="deprecation"; type="text/html"', body: { n: 3 } });
    expect((await call("GET", "/things?limit=4")).deprecation).not.toBeNull();
    expect(warned).toEqual([expect.objectContaining({ route: "/things", name: "limit", use: "pageSize", since: "2026-11-29" })]);
    expect(await call("GET", "/things?pageSize=2")).toEqual({ status: 200, deprecation: null, link: null, body: { n: 2 } });
    expect((await call("POST", "/things", { type: "a" })).deprecation).toBe(`@${Date.UTC(2026, 9, 1) / 1000}`);
    expect((await call("POST", "/things", { kind: "a" })).deprecation).toBeNull();
    // a refusal of the deprecated parameter's value says it is deprecated too
    expect(await call("GET", "/things?limit=99")).toMatchObject({ status: 400, deprecation: `@${Date.UTC(2026, 10, 29) / 1000}` });
    expect(await call("GET", "/things?pageSize=99")).toMatchObject({ status: 400, deprecation: null });
  });

  it("links to the reference under SVC_API_PUBLIC_ORIGIN, a proxy's path prefix included, when it is set", async () => {
    const { call } = setup("https://api.example.com/svc");
    expect((await call("GET", "/things?limit=3")).link).toBe('<https://api.example.com/svc/docs>; rel="deprecation"; type="text/html"');
    expect((await call("GET", "/things?limit=99")).link).toBe('<https://api.example.com/svc/docs>; rel="deprecation"; type="text/html"');
  });

  it("refuses a deprecation whose day is not a date, or a day that does not exist", () => {
    expect(() => setup().routes.schemas.deprecated({ since: "29.11.2026", use: "pageSize" })).toThrow("deprecated: since must be a date YYYY-MM-DD (got 29.11.2026)");
    expect(() => setup().routes.schemas.deprecated({ since: "2026-02-31", use: "pageSize" })).toThrow("(got 2026-02-31)");
  });

  it("finds a deprecation inside optional, and refuses a union whose members disagree on a name", async () => {
    const routes = new RouteRegistry(() => Promise.reject(new Error("no authentication in this test")), new Lifecycle(), { error: () => undefined, warn: () => undefined });
    routes.add({ method: "GET", path: "/inner", summary: "s", tags: ["test"], auth: "none", query: v.object({ inner: v.optional(v.pipe(v.string(), routes.schemas.deprecated({ since: "2026-11-29", use: "outer" }))) }), responses: { 200: { description: "d" } }, handler: () => ({}) });
    const app = new H3();
    routes.mount(app);
    expect((await app.fetch(new Request("http://svc.test/inner?inner=a"))).headers.get("deprecation")).toBe(`@${Date.UTC(2026, 10, 29) / 1000}`);
    const union = v.union([v.strictObject({ kind: v.string(), type: v.string() }), v.strictObject({ type: v.pipe(v.string(), routes.schemas.deprecated({ since: "2026-11-29", use: "kind" })) })]);
    expect(() => new RouteRegistry(() => Promise.reject(new Error("none")), new Lifecycle(), { error: () => undefined, warn: () => undefined }).add({ method: "POST", path: "/u", summary: "s", tags: ["test"], auth: "none", body: union, responses: { 200: { description: "d" } }, handler: () => ({}) })).toThrow('"type" is deprecated in one member of the union and current in another');
  });

  it("documents Deprecation and Link on the answers of an operation with deprecated names only", () => {
    const doc = setup().routes.openapi({ title: "t", version: "1" }) as any;
    expect(Object.keys(doc.paths["/things"].get.responses["200"].headers ?? {})).toEqual(["Deprecation", "Link"]);
    expect(Object.keys(doc.paths["/things"].get.responses["400"].headers ?? {})).toEqual(["Deprecation", "Link"]);
  });
});
