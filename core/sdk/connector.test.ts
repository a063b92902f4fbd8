/** The SDK's define* functions (core/sdk/connector.ts): what they refuse at definition, and how they say it. */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { defineAction, defineConnector, defineSchedule, defineWebhook, type ScheduleDefinition, type WebhookDefinition } from "./connector";

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

describe("defineSchedule: cron and interval schedules checked as Temporal reads them", () => {
  const run = async () => undefined;
  it.each([
    ["a cron of 4 fields", { cron: "* * * *" }, 'cron "* * * *" has 4 fields; Temporal reads 5 (minute hour day-of-month month day-of-week), 6 (and a year) or 7 (second first, and a year)'],
    ["a cron of 8 fields", { cron: "0 0 0 * * * 2030 x" }, "has 8 fields"],
    ["an empty cron", { cron: " " }, 'cron " " has 0 fields'],
    ["an unknown shorthand", { cron: "@fortnightly" }, 'cron "@fortnightly" has 1 field;'],
    ["@every without an interval", { cron: "@every" }, 'cron "@every" has no interval after @every'],
    ["a cron naming its time zone", { cron: "CRON_TZ=Europe/Berlin 0 9 * * *" }, "names its time zone (TZ= / CRON_TZ=): give the zone as timezone"],
    ["a cron that is no string", { cron: 5 }, "cron must be a string, not a number"],
    ["an interval below a second", { every: 500 }, "every must be a whole number of milliseconds, at least 1000 (Temporal's shortest interval is one second), not 500"],
    ["a zero interval", { every: 0 }, "at least 1000"],
    ["a fractional interval", { every: 1500.5 }, "not 1500.5"],
    ["an interval as a string", { every: "1h" }, "every must be a whole number of milliseconds, at least 1000 (Temporal's shortest interval is one second), not a string"],
    ["an unknown time zone", { cron: "0 9 * * *", timezone: "Mars/Olympus" }, 'timezone "Mars/Olympus" is not an IANA time zone name'],
    ["an offset for a time zone", { every: 60_000, timezone: "+01:00" }, 'timezone "+01:00" is not an IANA time zone name'],
    ["a time zone in the wrong case", { cron: "0 9 * * *", timezone: "europe/berlin" }, 'timezone "europe/berlin" must be spelled "Europe/Berlin"'],
    ["an unknown overlap policy", { every: 60_000, overlap: "sometimes" }, "overlap must be one of skip, bufferOne, bufferAll, cancelOther, terminateOther, allowAll, not \"sometimes\""],
    ["no run", { every: 60_000, run: undefined }, "A schedule's run must be a function (the handler), not undefined"],
  ])("refuses %s", (_label, def, message) => {
    expect(() => defineSchedule({ run, ...(def as object) } as ScheduleDefinition)).toThrow(message);
  });

  it.each([
    { cron: "0 * * * *" },
    { cron: "30 0 9 * * MON-FRI 2030" },
    { cron: "0 9 * * * 2030" },
    { cron: "  @hourly # on the hour " },
    { cron: "@every 90m" },
    { cron: "0 9 * * 1-5 # weekdays", timezone: "Europe/Berlin", overlap: "bufferOne" as const },
    { every: 1000 },
    { every: 3_600_000, timezone: "UTC" },
    { every: 86_400_000, timezone: "US/Pacific" },
  ])("accepts %j", (def) => {
    expect(defineSchedule({ ...def, run })).toMatchObject(def);
  });

  it("names the schedule when its connector is checked (a schedule made without defineSchedule)", () => {
    expect(() => defineConnector({ id: "crm", schedules: { nightly: { every: 500, run } } })).toThrow('Schedule "nightly" of connector "crm": every must be a whole number of milliseconds, at least 1000');
    expect(() => defineConnector({ id: "crm", schedules: { nightly: { cron: "0 0 * *", run } } })).toThrow('Schedule "nightly" of connector "crm": cron "0 0 * *" has 4 fields');
  });
});
