/** Resolved at bundle time to the project's workflows module (see core/temporal/bundle.ts). */
declare module "svc-project-workflows" {
  import type { WorkflowDefinition } from "../core/sdk/workflow";
  export const workflows: Record<string, WorkflowDefinition<any, any>>;
}
