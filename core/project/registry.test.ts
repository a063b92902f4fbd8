/** ProjectRegistry (core/project/registry.ts): the project indexed, and what it refuses at registration. */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { ProjectRegistry } from "./registry";
import { defineAction, defineAgent, defineConnector, definePipeline, defineSync, type ConnectorDefinition } from "../sdk/connector";
import { defineWorkflow } from "../sdk/workflow";
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

  it("refuses an action whose subject names no object type of the project, naming the connector, the action and the type", () => {
    const withSubject = (objectTypeId: string) => defineConnector({ id: "crm", actions: { "contact.tag": defineAction({ params: v.object({}), subject: { objectTypeId }, run: () => undefined }) } });
    expect(() => new ProjectRegistry({ ...base, connectors: [withSubject("thing")] })).not.toThrow();
    for (const type of ["nope", "constructor", "toString"]) {
      expect(() => new ProjectRegistry({ ...base, connectors: [withSubject(type)] }), type).toThrow(`Action "contact.tag" of connector "crm": its subject's objectTypeId "${type}" is no object type of the project (object types: thing)`);
    }
  });

  it("checks connectors made without defineConnector as defineConnector does", () => {
    const plain = (connector: object) => () => new ProjectRegistry({ ...base, connectors: [connector as ConnectorDefinition] });
    expect(plain({ id: undefined })).toThrow("A connector's id must be a string");
    expect(plain({ id: "crm", actions: { "": { params: v.object({}), run: () => undefined } } })).toThrow('Action "" of connector "crm": an action id is lowercase slugs joined by dots');
    expect(plain({ id: "crm", actions: { "contact.tag": { params: v.object({}) } } })).toThrow('Action "contact.tag" of connector "crm": its run must be a function');
    expect(plain({ id: "crm", actions: { "contact.tag": { params: { tag: "string" }, run: () => undefined } } })).toThrow('Action "contact.tag" of connector "crm": its params must be a valibot schema');
    expect(plain({ id: "crm", webhooks: { events: { format: "json" } } })).toThrow('Webhook "events" of connector "crm": its handle must be a function');
    expect(plain({ id: "crm", webhooks: { events: { format: "xml", handle: () => undefined } } })).toThrow('Webhook "events" of connector "crm": its format must be one of json, text, raw, not "xml"');
  });

  it("refuses an id of a webhook, schedule, sync, pipeline, agent, rule, dataset or workflow that is not one URL path segment (a webhook at \"stripe/events\" could never be reached), and takes the ones that are", () => {
    const plain = (connector: object) => () => new ProjectRegistry({ ...base, connectors: [connector as ConnectorDefinition] });
    const names = { webhooks: "Webhook", schedules: "Schedule", syncs: "Sync", pipelines: "Pipeline", agents: "Agent", rules: "Rule", datasets: "Dataset" };
    for (const [kind, name] of Object.entries(names)) {
      for (const id of ["stripe/events", "", "has space", ".", "..", "-lead", "ünïcode", "a?b"]) {
        // the id is refused before its definition is looked at: an empty object stands for every kind
        expect(plain({ id: "crm", [kind]: { [id]: {} } }), `${kind} ${JSON.stringify(id)}`).toThrow(`${name} "${id}" of connector "crm": an id is one URL path segment`);
      }
    }
    const workflows = (id: string) => () => new ProjectRegistry({ ...base, workflows: { [id]: defineWorkflow({ input: v.object({}), run: async () => undefined }) }, workflowsModule: "/abs/workflows.ts" });
    expect(workflows("review/2")).toThrow('Workflow "review/2" of project "p": an id is one URL path segment');
    for (const id of ["review", "Review_2", "v1.2-beta", "0day"]) expect(workflows(id), id).not.toThrow();
    const events = { format: "json", handle: async () => undefined };
    for (const id of ["events", "Stripe_Events", "v2.events", "9-lives"]) expect(plain({ id: "crm", webhooks: { [id]: events } }), id).not.toThrow();
  });

  it("refuses workflows declared without the workflowsModule the worker bundles them from", () => {
    const workflows = { review: defineWorkflow({ input: v.object({}), run: async () => undefined }) };
    expect(() => new ProjectRegistry({ ...base, workflows })).toThrow('Project "p" declares workflows (review) but no workflowsModule');
    expect(() => new ProjectRegistry({ ...base, workflows, workflowsModule: "/abs/workflows.ts" })).not.toThrow();
    expect(() => new ProjectRegistry({ ...base, workflows: {} })).not.toThrow();
  });
});
