/** API tokens and permissions (spec 5), in-process and over HTTP. */
import { describe, expect, it } from "vitest";
import { DEV_TOKEN, client, describeMatrix, sandboxSuite, startApp, tempDir } from "./helpers";
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

describe("the development token across starts", () => {
  /** The app's answer to a request with the sandbox's development token. */
  const devTokenAnswer = async (app: Awaited<ReturnType<typeof startApp>>) => (await client(app, DEV_TOKEN).get("/api/project")).status;
  const revokeDevelopmentToken = async (app: Awaited<ReturnType<typeof startApp>>) => {
    const service = app.container.resolve(TokenService);
    const dev = (await service.list()).find((t) => t.name === "development" && !t.revokedAt);
    expect(dev).toBeDefined();
    expect(await service.revoke(dev!.id)).toBe(true);
  };

  it("a revoked development token stays revoked at the next start (the start does not restore it)", async () => {
    const dataDir = tempDir();
    const first = await startApp({ dataDir });
    try {
      expect(first.devTokenStatus).toBe("active");
      await revokeDevelopmentToken(first);
      expect(await devTokenAnswer(first)).toBe(401);
    } finally {
      await first.close();
    }
    const second = await startApp({ dataDir });
    try {
      expect(second.devTokenStatus).toBe("revoked");
      expect(await devTokenAnswer(second)).toBe(401);
    } finally {
      await second.close();
    }
    // a new value is a new token, which works (the revoked one stays revoked)
    const renewed = await startApp({ dataDir, env: { SVC_DEV_TOKEN: "svc_dev_second_value_0123" } });
    try {
      expect(renewed.devTokenStatus).toBe("active");
      expect((await client(renewed, "svc_dev_second_value_0123").get("/api/project")).status).toBe(200);
      expect(await devTokenAnswer(renewed)).toBe(401);
    } finally {
      await renewed.close();
    }
  });

  it("SVC_DEV_TOKEN=none runs without one, and the development token an earlier start stored stops working", async () => {
    const dataDir = tempDir();
    const first = await startApp({ dataDir });
    try {
      expect(await devTokenAnswer(first)).toBe(200);
    } finally {
      await first.close();
    }
    const without = await startApp({ dataDir, env: { SVC_DEV_TOKEN: "none" } });
    try {
      expect(without.devTokenStatus).toBe("disabled");
      expect(without.config.devToken).toBeUndefined();
      expect(await devTokenAnswer(without)).toBe(401);
      expect((await without.container.resolve(TokenService).list()).filter((t) => t.name === "development").every((t) => t.revokedAt)).toBe(true);
    } finally {
      await without.close();
    }
  });
});
