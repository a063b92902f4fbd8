/** The SDK's define* functions (core/sdk/connector.ts): what they refuse at definition, and how they say it. */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { defineAction, defineConnector, defineWebhook, type WebhookDefinition } from "./connector";

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

describe("defineConnector: actions and webhooks checked at definition, naming the connector and the thing", () => {
  const run = () => ({ ok: true });
  const handle = () => undefined;
  const action = (def: object) => defineConnector({ id: "crm", actions: { "contact.tag": def as never } });
  const webhook = (def: object) => defineConnector({ id: "crm", webhooks: { events: def as WebhookDefinition } });

  it.each([
    ["without run", { params: v.object({}) }, 'Action "contact.tag" of connector "crm": its run must be a function (the handler), not undefined'],
    ["whose run is a string", { params: v.object({}), run: "go" }, 'Action "contact.tag" of connector "crm": its run must be a function (the handler), not a string'],
    ["without params", { run }, 'Action "contact.tag" of connector "crm": its params must be a valibot schema (e.g. v.object({ … })), not undefined'],
    ["whose params is a plain object", { params: { tag: "string" }, run }, "its params must be a valibot schema (e.g. v.object({ … })), not an object"],
    ["whose params is an async schema", { params: v.objectAsync({}), run }, "its params must be a valibot schema (e.g. v.object({ … })), not an async valibot schema (…Async)"],
    ["whose subject is a string", { params: v.object({}), run, subject: "invoice" }, "its subject must be { objectTypeId: <an object type of the project> }"],
    ["whose subject's type is empty", { params: v.object({}), run, subject: { objectTypeId: "" } }, "its subject must be { objectTypeId: <an object type of the project> }"],
    ["whose effect is no function", { params: v.object({}), run, effect: true }, "its effect must be a function, not a boolean"],
  ])("refuses an action %s", (_label, def, message) => {
    expect(() => action(def)).toThrow(message);
  });

  it.each(["", " ", "contact tag", "contact/tag", "Contact.Tag", "contact..tag", ".tag", "tag.", "contact.1tag"])("refuses the action id %j", (id) => {
    expect(() => defineConnector({ id: "crm", actions: { [id]: defineAction({ params: v.object({}), run }) } })).toThrow(`Action "${id}" of connector "crm": an action id is lowercase slugs joined by dots`);
  });

  it("accepts action ids of lowercase slugs joined by dots, and well-formed actions", () => {
    const ids = ["tag", "contact.tag", "invoice.attach-pdf", "a1.b-2.c"];
    const connector = defineConnector({ id: "crm", actions: Object.fromEntries(ids.map((id) => [id, defineAction({ params: v.object({}), subject: { objectTypeId: "customer" }, run, effect: async () => undefined })])) });
    expect(Object.keys(connector.actions)).toEqual(ids);
  });

  it.each([
    ["without handle", { format: "json" }, 'Webhook "events" of connector "crm": its handle must be a function (the handler), not undefined'],
    ["of format xml", { format: "xml", handle }, 'Webhook "events" of connector "crm": its format must be one of json, text, raw, not "xml"'],
    ["without format", { handle }, "its format must be one of json, text, raw, not undefined"],
    ["whose schema is no valibot schema", { format: "json", handle, schema: { type: "object" } }, "its schema must be a valibot schema, not an object"],
    ["whose verify is a string", { format: "json", handle, verify: "secret" }, "its verify must be a function, not a string"],
    ["whose idempotencyKey is a string", { format: "json", handle, idempotencyKey: "webhook-id" }, "its idempotencyKey must be a function, not a string"],
  ])("refuses a webhook %s", (_label, def, message) => {
    expect(() => webhook(def)).toThrow(message);
  });

  it("accepts a webhook of each format", () => {
    for (const format of ["json", "text", "raw"] as const) expect(webhook(defineWebhook({ format, handle })).webhooks!.events!.format).toBe(format);
    expect(webhook(defineWebhook({ format: "json", schema: v.object({ id: v.string() }), verify: () => undefined, idempotencyKey: (_req, body) => body.id, handle })).id).toBe("crm");
  });
});
