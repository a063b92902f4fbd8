/** ProjectRegistry (core/project/registry.ts): the project indexed, and what it refuses at registration. */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { ProjectRegistry } from "./registry";
import { defineAgent, defineConnector, definePipeline, defineSync } from "../sdk/connector";
import type { ProjectDefinition } from "../sdk/project";

const base: ProjectDefinition = { id: "p", name: "P", objectTypes: { thing: { properties: { n: "number" } } }, identities: {} };

describe("ProjectRegistry lookups by id", () => {
  it("answers not_found for syncs, pipelines and agents named like Object.prototype members", () => {
    const connector = defineConnector({
      id: "c",
      syncs: { s: defineSync({ input: v.object({}), run: async () => undefined }) },
      pipelines: { p: definePipeline({ steps: [{ name: "one", run: async () => undefined }] }) },
      agents: { a: defineAgent({ instructions: "Help." }) },
    });
    const registry = new ProjectRegistry({ ...base, connectors: [connector] });
    expect(registry.connectorRun("syncs", "s").connectorId).toBe("c");
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      expect(() => registry.connectorRun("syncs", name), name).toThrow(`No sync "${name}"`);
      expect(() => registry.connectorRun("pipelines", name), name).toThrow(`No pipeline "${name}"`);
      expect(() => registry.agent(name), name).toThrow(`No agent "${name}"`);
    }
  });
});

describe("ProjectRegistry at registration", () => {
  it("refuses two connectors with the same id, naming it", () => {
    const first = defineConnector({ id: "dup", actions: {} });
    const second = defineConnector({ id: "dup", webhooks: {} });
    expect(() => new ProjectRegistry({ ...base, connectors: [first, second] })).toThrow('Connector id "dup" is declared twice');
    expect(() => new ProjectRegistry({ ...base, connectors: [first, defineConnector({ id: "other" })] })).not.toThrow();
  });
});
