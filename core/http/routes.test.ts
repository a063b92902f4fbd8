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
  const routes = new RouteRegistry(() => Promise.reject(new Error("no authentication in this test")), new Lifecycle(), { error: () => undefined });
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
