/** validateChanges (spec 4.1 writes): ids named like Object.prototype members are unknown, not crashes. */
import { describe, expect, it } from "vitest";
import { validateChanges } from "./validate";
import type { ProjectDefinition } from "../sdk/project";
import type { OntologyChange } from "../sdk/context";

const project = {
  id: "p",
  objectTypes: { a: { properties: { n: "number" } }, b: { properties: {} } },
  linkTypes: { ab: { source: "a", target: "b" } },
  telemetry: { temp: { objectTypeId: "a" } },
  identities: {},
} as unknown as ProjectDefinition;

describe("validateChanges", () => {
  it("refuses object types, link types and telemetry named like Object.prototype members, naming each", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      const changes = [
        { op: "object.upsert", objectTypeId: name, primaryId: "x", properties: { n: 1 } },
        { op: "link.upsert", linkId: name, sourceTypeId: "a", sourceId: "x", targetTypeId: "b", targetId: "y" },
        { op: "telemetry.append", objectTypeId: "a", objectId: "x", propertyId: name, value: 1 },
      ] as unknown as OntologyChange[];
      let message = "";
      try {
        validateChanges(project, changes);
      } catch (err) {
        message = JSON.stringify(err);
        message += (err as Error).message;
      }
      expect(message, name).toContain(`unknown object type \\"${name}\\"`);
      expect(message, name).toContain(`unknown link type \\"${name}\\"`);
      expect(message, name).toContain(`\\"${name}\\" is not a telemetry property of a`);
    }
  });

  it("refuses properties named like Object.prototype members as properties the type does not declare", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ toString: "y" }, 'changes[0].properties.toString is not a property of a'],
      [{ constructor: null }, "changes[0].properties.constructor is not a property of a"],
      [JSON.parse('{"__proto__": 1}'), "changes[0].properties.__proto__ is not a property of a"],
      [{ hasOwnProperty: 2 }, "changes[0].properties.hasOwnProperty is not a property of a"],
    ];
    for (const [properties, problem] of cases) {
      let details: unknown;
      expect(() => {
        try {
          validateChanges(project, [{ op: "object.upsert", objectTypeId: "a", primaryId: "x", properties } as unknown as OntologyChange]);
        } catch (err) {
          details = (err as { details?: unknown }).details;
          throw err;
        }
      }, problem).toThrow(`Invalid ontology write: ${problem}`);
      expect(details).toEqual({ problems: [problem] });
    }
    expect(() => validateChanges(project, [{ op: "link.upsert", linkId: "ab", sourceTypeId: "a", sourceId: "x", targetTypeId: "b", targetId: "y", properties: { constructor: "z" } } as unknown as OntologyChange])).toThrow("changes[0].properties.constructor is not a property of link ab");
  });
});
