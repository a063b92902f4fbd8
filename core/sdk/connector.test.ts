/** The SDK's define* functions (core/sdk/connector.ts): what they refuse at definition, and how they say it. */
import { describe, expect, it } from "vitest";
import { defineConnector } from "./connector";

describe("defineConnector", () => {
  it.each([
    [undefined, "A connector's id must be a string (a lowercase slug), not undefined"],
    [null, "A connector's id must be a string (a lowercase slug), not null"],
    [42, "A connector's id must be a string (a lowercase slug), not number"],
    ["Bad Id", 'Connector id "Bad Id" must be a lowercase slug'],
    ["", 'Connector id "" must be a lowercase slug'],
  ])("refuses the id %j", (id, message) => {
    expect(() => defineConnector({ id } as never)).toThrow(message);
  });

  it("accepts a lowercase slug", () => {
    expect(defineConnector({ id: "crm-2" }).id).toBe("crm-2");
  });
});
