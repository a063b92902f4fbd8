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
});
