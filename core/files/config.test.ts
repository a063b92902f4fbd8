import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../config";
import { blobStoreFromEnv, fileStorageConfigFromEnv } from "./config";
import { LocalBlobStore } from "./local-blob-store";

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("file storage configuration", () => {
  it("defaults to local blobs under <dataDir>/blobs, and opens them", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-files-config-"));
    try {
      expect(fileStorageConfigFromEnv({}, dataDir)).toEqual({ kind: "local", dir: path.join(dataDir, "blobs") });
      expect(fileStorageConfigFromEnv({ SVC_FILE_STORAGE: "", SVC_S3_BUCKET: "ignored" }, dataDir)).toEqual({ kind: "local", dir: path.join(dataDir, "blobs") });
      const store = await blobStoreFromEnv({ SVC_FILE_STORAGE: "local" }, dataDir);
      expect(store).toBeInstanceOf(LocalBlobStore);
      expect(fs.existsSync(path.join(dataDir, "blobs", ".tmp"))).toBe(true);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("reads the S3 settings, with path-style addressing by default for a custom endpoint", () => {
    expect(fileStorageConfigFromEnv({ SVC_FILE_STORAGE: "S3", SVC_S3_BUCKET: "svc-files", SVC_S3_ENDPOINT: "http://127.0.0.1:7070/", SVC_S3_ACCESS_KEY_ID: "ak", SVC_S3_SECRET_ACCESS_KEY: "sk" }, "/data")).toEqual({
      kind: "s3",
      bucket: "svc-files",
      region: "us-east-1",
      endpoint: "http://127.0.0.1:7070",
      forcePathStyle: true,
      credentials: { accessKeyId: "ak", secretAccessKey: "sk" },
    });
    expect(fileStorageConfigFromEnv({ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "svc-files", SVC_S3_REGION: "eu-west-3" }, "/data")).toEqual({ kind: "s3", bucket: "svc-files", region: "eu-west-3", endpoint: undefined, forcePathStyle: false, credentials: undefined });
    expect(fileStorageConfigFromEnv({ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "b-1", SVC_S3_ENDPOINT: "https://s3.example.com", SVC_S3_FORCE_PATH_STYLE: "false" }, "/data")).toMatchObject({ forcePathStyle: false });
  });

  it("reads the S3 client's timeouts, leaving the defaults (5 s, 30 s) to the store when unset", () => {
    const base = { SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "svc-files" };
    expect(fileStorageConfigFromEnv(base, "/data")).not.toHaveProperty("timeouts.connectMs");
    expect(fileStorageConfigFromEnv({ ...base, SVC_S3_CONNECT_TIMEOUT_MS: "2000", SVC_S3_IDLE_TIMEOUT_MS: " 90000 " }, "/data")).toMatchObject({ timeouts: { connectMs: 2000, idleMs: 90_000 } });
    expect(fileStorageConfigFromEnv({ ...base, SVC_S3_IDLE_TIMEOUT_MS: "1500" }, "/data")).toMatchObject({ timeouts: { connectMs: undefined, idleMs: 1500 } });
  });

  it("names the variable with a bad value", () => {
    const cases: [Record<string, string>, string][] = [
      [{ SVC_FILE_STORAGE: "ftp" }, "SVC_FILE_STORAGE"],
      [{ SVC_FILE_STORAGE: "s3" }, "SVC_S3_BUCKET"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "Bad_Bucket" }, "SVC_S3_BUCKET"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_ENDPOINT: "not a url" }, "SVC_S3_ENDPOINT"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_ENDPOINT: "ftp://x.example" }, "SVC_S3_ENDPOINT"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_REGION: "us east" }, "SVC_S3_REGION"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_FORCE_PATH_STYLE: "maybe" }, "SVC_S3_FORCE_PATH_STYLE"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_CONNECT_TIMEOUT_MS: "5s" }, "SVC_S3_CONNECT_TIMEOUT_MS"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_IDLE_TIMEOUT_MS: "0" }, "SVC_S3_IDLE_TIMEOUT_MS"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_ACCESS_KEY_ID: "ak" }, "SVC_S3_SECRET_ACCESS_KEY"],
      [{ SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "ok-bucket", SVC_S3_SECRET_ACCESS_KEY: "top-secret-value" }, "SVC_S3_ACCESS_KEY_ID"],
    ];
    for (const [env, variable] of cases) {
      const err = configError(() => fileStorageConfigFromEnv(env, "/data"));
      expect(err.variable).toBe(variable);
      expect(err.message).toContain(variable);
      expect(err.message).not.toContain("top-secret-value");
    }
  });

  it("says an unset SVC_S3_BUCKET must be set with s3 (not valibot's 'Invalid key: Expected … but received undefined')", () => {
    for (const env of [{ SVC_FILE_STORAGE: "s3" }, { SVC_FILE_STORAGE: "s3", SVC_S3_BUCKET: "" }]) {
      expect(configError(() => fileStorageConfigFromEnv(env, "/data")).message).toBe("Invalid configuration: SVC_S3_BUCKET must be set when SVC_FILE_STORAGE=s3");
    }
  });
});
