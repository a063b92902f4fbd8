import * as v from "valibot";
import { AGENT_TOOLS, RuleInfoSchema, definePlugin, propertyDef, ruleInfo } from "../../core/plugin-api";

const ProjectSchema = v.object({
  id: v.string(),
  name: v.string(),
  objectTypes: v.array(v.object({ id: v.string(), title: v.optional(v.string()), properties: v.record(v.string(), v.object({ type: v.string(), required: v.boolean() })) })),
  linkTypes: v.array(v.object({ id: v.string(), source: v.string(), target: v.string() })),
  telemetry: v.array(v.object({ propertyId: v.string(), objectTypeId: v.string(), unit: v.optional(v.string()) })),
  connectors: v.array(v.object({ id: v.string(), actions: v.array(v.string()), webhooks: v.array(v.string()), schedules: v.array(v.string()), syncs: v.array(v.string()), pipelines: v.array(v.string()), agents: v.array(v.string()), rules: v.array(v.string()), datasets: v.array(v.string()) })),
  actions: v.array(v.object({ id: v.string(), connectorId: v.string(), subjectType: v.optional(v.string()), hasEffect: v.boolean() })),
  workflows: v.array(v.object({ id: v.string(), title: v.optional(v.string()) })),
  agents: v.array(v.object({ id: v.string(), connectorId: v.string(), title: v.optional(v.string()), tools: v.array(v.string()), model: v.string() })),
  /** Rules (spec 2.4 `rule.*`): the condition in the filter language of `POST /api/objects/query`; `GET /api/rules` adds the subjects triggered now. */
  rules: v.array(RuleInfoSchema),
});

/** `GET /api/project` (spec 4.1): project information. */
export default definePlugin({
  name: "project",
  setup({ routes, project, config }) {
    // the domain types these routes answer, named in the OpenAPI document (RuleInfo)
    routes.component("RuleInfo", RuleInfoSchema);
    const d = project.definition;
    const info = {
      id: d.id,
      name: d.name,
      objectTypes: Object.entries(d.objectTypes).map(([id, t]) => ({
        id,
        ...(t.title ? { title: t.title } : {}),
        properties: Object.fromEntries(Object.entries(t.properties).map(([name, p]) => [name, { type: propertyDef(p).type, required: propertyDef(p).required ?? false }])),
      })),
      linkTypes: Object.entries(d.linkTypes ?? {}).map(([id, l]) => ({ id, source: l.source, target: l.target })),
      telemetry: Object.entries(d.telemetry ?? {}).map(([propertyId, t]) => ({ propertyId, objectTypeId: t.objectTypeId, ...(t.unit ? { unit: t.unit } : {}) })),
      connectors: [...project.connectors.values()].map((c) => ({ id: c.id, actions: Object.keys(c.actions ?? {}), webhooks: Object.keys(c.webhooks ?? {}), schedules: Object.keys(c.schedules ?? {}), syncs: Object.keys(c.syncs ?? {}), pipelines: Object.keys(c.pipelines ?? {}), agents: Object.keys(c.agents ?? {}), rules: Object.keys(c.rules ?? {}), datasets: Object.keys(c.datasets ?? {}) })),
      actions: [...project.actions.values()].map((a) => ({ id: a.id, connectorId: a.connectorId, ...(a.definition.subject ? { subjectType: a.definition.subject.objectTypeId } : {}), hasEffect: !!a.definition.effect })),
      workflows: [...project.workflows.entries()].map(([id, w]) => ({ id, ...(w.title ? { title: w.title } : {}) })),
      agents: project.agents().map((a) => ({ id: a.id, connectorId: a.connectorId, ...(a.definition.title ? { title: a.definition.title } : {}), tools: [...(a.definition.tools ?? AGENT_TOOLS)], model: a.definition.model ?? config.agentModel })),
      rules: project.rules().map(ruleInfo),
    };
    routes.add({
      method: "GET",
      path: "/api/project",
      summary: "Project information",
      description: "The project's id, name, object types, link types, telemetry, connectors (with their actions, webhooks, schedules, syncs, pipelines, agents, rules and datasets), actions, workflows, agents and rules.",
      tags: ["project"],
      auth: "bearer",
      responses: { 200: { description: "Project information", schema: ProjectSchema } },
      handler: () => info,
    });
  },
});
