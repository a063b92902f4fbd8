import { describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CHROMIUM_PATH, chromiumPathWarning, defaultChromiumPath, HEADLESS_SHELL_PATH } from "./artifacts/chromium";
import { ConfigError, dataDirError, listenError, loadConfig, withoutCredentials } from "./config";
import { NatsEventStream } from "./events/nats-stream";

describe("config (valibot, from the environment)", () => {
  it("applies defaults: port 3002, the project's data dir, embedded Temporal", () => {
    const c = loadConfig({}, { dataDir: "/tmp/x", devToken: "svc_dev_sandbox_token" });
    expect(c.port).toBe(3002);
    expect(c.dataDir).toBe("/tmp/x");
    expect(c.devToken).toBe("svc_dev_sandbox_token");
    expect(c.temporal.address).toBeUndefined();
    expect(c.temporal.namespace).toBe("default");
    expect(c.outboxRecoveryMs).toBe(60_000);
    expect(c.eventRetentionMs).toBe(2 * 86_400_000);
  });

  it("launches Debian's headless shell for deck checks when installed, else the browser, unless SVC_CHROMIUM_PATH says", () => {
    expect(defaultChromiumPath((f) => f === HEADLESS_SHELL_PATH)).toBe(HEADLESS_SHELL_PATH);
    expect(defaultChromiumPath(() => false)).toBe(CHROMIUM_PATH);
    expect(loadConfig({}, { dataDir: "/tmp/x" }).chromiumPath).toBe(defaultChromiumPath());
    expect(loadConfig({ SVC_CHROMIUM_PATH: "/opt/chrome/chrome" }, { dataDir: "/tmp/x" }).chromiumPath).toBe("/opt/chrome/chrome");
  });

  it("warns at start of a Chromium path that cannot be launched, naming it and SVC_CHROMIUM_PATH", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-chromium-"));
    try {
      const missing = path.join(dir, "chromium");
      expect(chromiumPathWarning(missing, true)).toMatch(new RegExp(`^SVC_CHROMIUM_PATH ${missing} does not exist: published decks will not be checked .*SVC_DECK_CHECKS=false`));
      expect(chromiumPathWarning(missing, false)).toMatch(new RegExp(`${missing} \\(the default; SVC_CHROMIUM_PATH is unset\\) does not exist`));
      expect(chromiumPathWarning(dir, true)).toMatch(/is not a file/);
      fs.writeFileSync(missing, "#!/bin/sh\n", { mode: 0o644 });
      expect(chromiumPathWarning(missing, true)).toMatch(/is not executable/);
      fs.chmodSync(missing, 0o755);
      expect(chromiumPathWarning(missing, true)).toBeUndefined();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ["PORT", "abc", /PORT must be a whole number/],
    ["PORT", "70000", /PORT must be at most 65535/],
    ["TEMPORAL_ADDRESS", "localhost", /TEMPORAL_ADDRESS must be host:port/],
    ["SVC_TEMPORAL_UI", "maybe", /SVC_TEMPORAL_UI must be true or false/],
    ["SVC_DEV_TOKEN", "short", /SVC_DEV_TOKEN must be at least 16 characters/],
    ["LOG_LEVEL", "loud", /LOG_LEVEL must be one of/],
    ["SVC_API_PUBLIC_ORIGIN", "api.example.com", /SVC_API_PUBLIC_ORIGIN must be a URL/],
    ["SVC_API_PUBLIC_ORIGIN", "https://example.com/svc?x=1", /SVC_API_PUBLIC_ORIGIN must be an http\(s\) origin .* no query, fragment or credentials/],
    ["SVC_API_PUBLIC_ORIGIN", "ftp://example.com", /SVC_API_PUBLIC_ORIGIN must be an http\(s\) origin/],
    // the prefix goes into the cookie's Path and into HTML and JavaScript
    ["SVC_API_PUBLIC_ORIGIN", "https://example.com/svc;Domain=evil", /SVC_API_PUBLIC_ORIGIN its path .* may hold only letters, digits and/],
    ["SVC_API_PUBLIC_ORIGIN", "https://example.com/a,b", /its path \(the prefix a proxy serves the service under\)/],
    ["SVC_API_PUBLIC_ORIGIN", "https://example.com/it's", /its path/],
  ])("stops on a bad %s with a message naming it", (variable, value, message) => {
    let error: unknown;
    try {
      loadConfig({ [variable]: value }, { dataDir: "/tmp/x" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    expect((error as Error).message).toMatch(message);
  });

  it("SVC_DEV_TOKEN=none disables the development token (the project's default does not return); empty is unset", () => {
    const defaults = { dataDir: "/tmp/x", devToken: "svc_dev_sandbox_token" };
    const devToken = (env: Record<string, string>, d: { dataDir: string; devToken?: string } = defaults) => {
      const c = loadConfig(env, d);
      return [c.devToken, c.devTokenDisabled];
    };
    expect(devToken({ SVC_DEV_TOKEN: "none" })).toEqual([undefined, true]);
    expect(devToken({ SVC_DEV_TOKEN: "NONE" })).toEqual([undefined, true]);
    expect(devToken({ SVC_DEV_TOKEN: "" })).toEqual(["svc_dev_sandbox_token", false]);
    expect(devToken({ SVC_DEV_TOKEN: "a-token-of-my-own-123" })).toEqual(["a-token-of-my-own-123", false]);
    expect(devToken({}, { dataDir: "/tmp/x" })).toEqual([undefined, false]);
  });

  it("keeps SVC_API_PUBLIC_ORIGIN's path prefix for links, without trailing slashes, and allows its origin alone", () => {
    const c = loadConfig({ SVC_API_PUBLIC_ORIGIN: "https://example.com/svc//" }, { dataDir: "/tmp/x" });
    expect([c.publicOrigin, c.apiPublicOrigin]).toEqual(["https://example.com/svc", "https://example.com/svc"]);
    expect(c.allowedOrigins).toContain("https://example.com");
    expect(c.allowedOrigins.filter((o) => o.includes("/svc"))).toEqual([]);
    expect(loadConfig({ SVC_API_PUBLIC_ORIGIN: "https://api.example.com/" }, { dataDir: "/tmp/x" }).apiPublicOrigin).toBe("https://api.example.com");
    // the prefix the pages and the session cookie go under (Config.basePath)
    expect(c.basePath).toBe("/svc");
    expect(loadConfig({ SVC_API_PUBLIC_ORIGIN: "https://example.com/a/b-2/" }, { dataDir: "/tmp/x" }).basePath).toBe("/a/b-2");
    expect(loadConfig({ SVC_API_PUBLIC_ORIGIN: "https://api.example.com" }, { dataDir: "/tmp/x" }).basePath).toBe("");
    expect(loadConfig({}, { dataDir: "/tmp/x" }).basePath).toBe("");
  });

  it("requires a data dir when the project has no default", () => {
    expect(() => loadConfig({})).toThrow(/SVC_DATA_DIR/);
  });

  it("refuses an SVC_TEMPORAL_PORT whose UI port (+ 1000) is past 65535 while SVC_TEMPORAL_UI is on", () => {
    let error: unknown;
    try {
      loadConfig({ SVC_TEMPORAL_PORT: "65000" }, { dataDir: "/tmp/x" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe("SVC_TEMPORAL_PORT");
    expect((error as Error).message).toMatch(/SVC_TEMPORAL_PORT must be at most 64535 while SVC_TEMPORAL_UI is on.*\(got "65000"\).*SVC_TEMPORAL_UI=false/);
    expect(loadConfig({ SVC_TEMPORAL_PORT: "64535" }, { dataDir: "/tmp/x" }).temporal.devServerPort).toBe(64535);
    // without the UI, or with a cluster of its own (no embedded server), the port may go to 65535
    expect(loadConfig({ SVC_TEMPORAL_PORT: "65000", SVC_TEMPORAL_UI: "false" }, { dataDir: "/tmp/x" }).temporal.devServerPort).toBe(65000);
    expect(loadConfig({ SVC_TEMPORAL_PORT: "65000", TEMPORAL_ADDRESS: "temporal.internal:7233" }, { dataDir: "/tmp/x" }).temporal.devServerPort).toBe(65000);
  });

  it("refuses a provider's model without its endpoint or key (SVC_AGENT_BASE_URL, ANTHROPIC_API_KEY) instead of failing every agent run", () => {
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env, { dataDir: "/tmp/x" });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return err as ConfigError;
      }
      throw new Error("accepted");
    };
    const noBaseUrl = refused({ SVC_AGENT_MODEL: "openai-compatible:foo" });
    expect(noBaseUrl.variable).toBe("SVC_AGENT_BASE_URL");
    expect(noBaseUrl.message).toMatch(/SVC_AGENT_BASE_URL must be set when SVC_AGENT_MODEL is openai-compatible:foo/);
    expect(refused({ SVC_AGENT_MODEL: "openai-compatible:foo", SVC_AGENT_BASE_URL: "" }).variable).toBe("SVC_AGENT_BASE_URL");
    expect(refused({ SVC_AGENT_MODEL: "openai-compatible:foo", SVC_AGENT_BASE_URL: "localhost 11434" }).message).toMatch(/SVC_AGENT_BASE_URL must be a URL/);
    expect(loadConfig({ SVC_AGENT_MODEL: "openai-compatible:foo", SVC_AGENT_BASE_URL: "http://127.0.0.1:11434/v1" }, { dataDir: "/tmp/x" }).agentModel).toBe("openai-compatible:foo");
    expect(refused({ SVC_AGENT_MODEL: "anthropic:claude-sonnet-4-5" }).variable).toBe("ANTHROPIC_API_KEY");
    expect(loadConfig({ SVC_AGENT_MODEL: "anthropic:claude-sonnet-4-5", SVC_AGENT_API_KEY: "k" }, { dataDir: "/tmp/x" }).agentModel).toBe("anthropic:claude-sonnet-4-5");
    expect(loadConfig({ SVC_AGENT_MODEL: "anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY: "k" }, { dataDir: "/tmp/x" }).agentModel).toBe("anthropic:claude-sonnet-4-5");
  });

  it("uses an existing cluster when TEMPORAL_ADDRESS is set", () => {
    const c = loadConfig({ TEMPORAL_ADDRESS: "temporal.internal:7233", TEMPORAL_NAMESPACE: "billing" }, { dataDir: "/tmp/x" });
    expect(c.temporal).toMatchObject({ address: "temporal.internal:7233", namespace: "billing" });
  });

  /** An error with a `code`, as Node's system errors and sqlite3's carry. */
  const coded = (code: string, message = code) => Object.assign(new Error(message), { code });

  it("explains a data dir the service cannot use as a ConfigError of SVC_DATA_DIR naming it and the cause, in one line", () => {
    const cases: [string, RegExp][] = [
      ["EEXIST", /SVC_DATA_DIR \/srv\/svc is a file, not a directory \(EEXIST\)$/],
      ["ENOTDIR", /SVC_DATA_DIR \/srv\/svc is not a directory .*\(ENOTDIR\)$/],
      ["EACCES", /SVC_DATA_DIR \/srv\/svc cannot be written by this process \(permission denied\) \(EACCES\)$/],
      ["EROFS", /SVC_DATA_DIR \/srv\/svc is on a read-only file system \(EROFS\)$/],
      ["SQLITE_READONLY", /SVC_DATA_DIR \/srv\/svc holds a database this process may only read.*\(SQLITE_READONLY\)$/],
      ["SQLITE_CANTOPEN", /SVC_DATA_DIR \/srv\/svc holds a database SQLite cannot open.*\(SQLITE_CANTOPEN\)$/],
    ];
    for (const [code, message] of cases) {
      const err = dataDirError(coded(code), "/srv/svc");
      expect(err, code).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe("SVC_DATA_DIR");
      expect((err as Error).message).toMatch(message);
    }
    const other = coded("SQLITE_CORRUPT");
    expect(dataDirError(other, "/srv/svc")).toBe(other);
  });

  it("explains a listen failure as a ConfigError of PORT or HOST naming the value", () => {
    const cases: [string, string, RegExp][] = [
      ["EADDRINUSE", "PORT", /PORT 3002 is already in use on 0\.0\.0\.0 \(EADDRINUSE\)/],
      ["EACCES", "PORT", /PORT 3002 may not be listened on by this process \(EACCES\)/],
      ["ENOTFOUND", "HOST", /HOST 0\.0\.0\.0 does not resolve to an address \(ENOTFOUND\)/],
      ["EADDRNOTAVAIL", "HOST", /HOST 0\.0\.0\.0 is not an address of this machine \(EADDRNOTAVAIL\)/],
    ];
    for (const [code, variable, message] of cases) {
      const err = listenError(coded(code), 3002, "0.0.0.0");
      expect(err, code).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe(variable);
      expect((err as Error).message).toMatch(message);
    }
    const other = new Error("something else");
    expect(listenError(other, 3002, "0.0.0.0")).toBe(other);
  });
});

describe("credentials in start-up errors", () => {
  it("masks a URL's password or token in every ConfigError (a NATS_URL with user:password was logged whole)", async () => {
    expect(withoutCredentials("nats://svcuser:S3cret@127.0.0.1:1 and nats://t0ken@h:4222, http://a.example/x@y")).toBe("nats://svcuser:***@127.0.0.1:1 and nats://***@h:4222, http://a.example/x@y");
    const refused = await NatsEventStream.open({ servers: "nats://svcuser:S3cretNatsPass@127.0.0.1:1", stream: "svc-test", subjectPrefix: "svc", retentionMs: 60_000 }).then(() => undefined, (err: unknown) => err);
    expect(refused).toBeInstanceOf(ConfigError);
    expect(String((refused as Error).message)).toContain("NATS_URL nats://svcuser:***@127.0.0.1:1 has no NATS server answering");
    expect(String((refused as Error).message)).not.toContain("S3cretNatsPass");
    expect(() => loadConfig({ NATS_URL: "nats://u:hunter2@ h" })).toThrow(/NATS_URL must be a nats:\/\/ URL \(got "nats:\/\/u:\*\*\*@ h"\)/);
  });
});
