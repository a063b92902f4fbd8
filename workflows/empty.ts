/** Stand-in for `svc-project-workflows` when a project declares no workflows module. */
export const workflows = {};
