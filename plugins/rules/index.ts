import * as v from "valibot";
import { RuleEngine, RuleStateSchema, can, definePlugin, has } from "../../core/plugin-api";

/**
 * The connectors' rules (spec 2.4 `rule.triggered`, `rule.resolved`): `GET /api/rules` lists each rule
 * with its condition and the subjects it currently holds triggered. Any authenticated identity may list
 * the rules; triggered subjects are shown only for object types the caller may view (`view:object:<type>`).
 */
export default definePlugin({
  name: "rules",
  deps: { rules: RuleEngine },
  setup({ routes }, { rules }) {
    // the domain types these routes answer, named in the OpenAPI document (RuleState)
    routes.component("RuleState", RuleStateSchema);
    routes.add({
      method: "GET",
      path: "/api/rules",
      summary: "List rules",
      description:
        "Every rule the connectors declare: its object type, its condition (the `where` of `POST /api/objects/query`) and the subjects currently triggered (a `rule.triggered` not yet followed by `rule.resolved`). Subjects of types the caller may not view are left out.",
      tags: ["rules"],
      auth: "bearer",
      responses: { 200: { description: "Rules", schema: v.object({ data: v.array(RuleStateSchema) }) } },
      handler: async ({ principal }) => ({ data: await rules.list((objectTypeId) => has(principal!, can.view(objectTypeId))) }),
    });
  },
});
