import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // unit tests live beside the module they test; test/ keeps the end-to-end and cross-area suites
    include: ["core/**/*.test.ts", "plugins/**/*.test.ts", "connectors/**/*.test.ts", "workflows/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/setup/global.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    reporters: ["default"],
  },
});
