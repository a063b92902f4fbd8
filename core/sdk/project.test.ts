/** defineProject (core/sdk/project.ts): the cross-references it checks at definition. */
import { describe, expect, it } from "vitest";
import { defineProject, type ProjectDefinition } from "./project";

const base: ProjectDefinition = {
  id: "p",
  name: "P",
  objectTypes: { a: { properties: { n: "number" } }, b: { properties: {} } },
  linkTypes: { ab: { source: "a", target: "b" } },
  telemetry: { temp: { objectTypeId: "a" } },
  identities: { dev: { type: "user", permissions: [] } },
  devIdentity: "dev",
};

describe("defineProject", () => {
  it("accepts references to declared object types and identities", () => {
    expect(defineProject(base)).toBe(base);
  });

  it("refuses references named like Object.prototype members: they name no object type or identity", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      expect(() => defineProject({ ...base, linkTypes: { ab: { source: "a", target: name } } }), name).toThrow(`Link type "ab" refers to unknown object type "${name}"`);
      expect(() => defineProject({ ...base, linkTypes: { ab: { source: name, target: "b" } } }), name).toThrow(`Link type "ab" refers to unknown object type "${name}"`);
      expect(() => defineProject({ ...base, telemetry: { temp: { objectTypeId: name } } }), name).toThrow(`Telemetry "temp" refers to unknown object type "${name}"`);
      expect(() => defineProject({ ...base, devIdentity: name }), name).toThrow(`devIdentity "${name}" is not an identity`);
    }
  });
});
