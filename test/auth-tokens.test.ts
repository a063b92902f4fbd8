/** API tokens and permissions (spec 5), in-process and over HTTP. */
import { expect, it } from "vitest";
import { DEV_TOKEN, client, describeMatrix, sandboxSuite } from "./helpers";
import { Database } from "../core/store/db";
import { TokenService } from "../core/auth/tokens";

const suite = sandboxSuite();

describeMatrix("authentication and permissions (spec 5)", (transport) => {
  const dev = client(() => suite.app, DEV_TOKEN, transport);

  it("answers 401 without a token or with an unknown one, with the structured error", async () => {
    for (const c of [client(suite.app, null, transport), client(suite.app, "svc_not_a_real_token", transport)]) {
      const res = await c.get("/api/project");
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  it("stores tokens hashed, never in clear", async () => {
    const rows = await suite.app.container.resolve(Database).all<{ token_hash: string }>("SELECT token_hash FROM api_tokens");
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const secret of [...Object.values(suite.tokens), "svc_dev_sandbox_token"]) expect(rows.some((r) => r.token_hash.includes(secret))).toBe(false);
  });

  it("answers 403 when the identity lacks the permission, naming it", async () => {
    const res = await client(suite.app, suite.tokens.auditor, transport).get("/api/objects?objectTypeId=invoice");
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: "forbidden", details: { permission: "view:object:invoice" } });
    expect((await client(suite.app, suite.tokens.auditor, transport).get("/api/objects?objectTypeId=customer")).status).toBe(200);
    const run = await client(suite.app, suite.tokens.auditor, transport).post("/api/actions/diagnostics.noop", {});
    expect(run.status).toBe(403);
  });

  it("a revoked token stops working", async () => {
    const service = suite.app.container.resolve(TokenService);
    const { token, info } = await service.create("alice", "to-revoke");
    expect((await client(suite.app, token, transport).get("/api/project")).status).toBe(200);
    await service.revoke(info.id);
    expect((await client(suite.app, token, transport).get("/api/project")).status).toBe(401);
  });
});
