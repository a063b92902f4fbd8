import status from "./status";
import metrics from "./metrics";
import auth from "./auth";
import project from "./project";
import objects from "./objects";
import ontology from "./ontology";
import actions from "./actions";
import events from "./events";
import logs from "./logs";
import workflows from "./workflows";
import webhooks from "./webhooks";
import schedules from "./schedules";
import syncs from "./syncs";
import docs from "./docs";
import files from "./files";
import artifacts from "./artifacts";
import viewer from "./viewer";
import pages from "./pages";
import agents from "./agents";
import rules from "./rules";
import datasets from "./datasets";
import type { Plugin } from "../core/plugin-api";

/** The built-in plugins, in setup order. `docs` comes last so it documents every route. */
export const builtinPlugins: readonly Plugin<any>[] = [status, metrics, auth, project, objects, ontology, actions, events, logs, workflows, webhooks, schedules, syncs, files, artifacts, agents, rules, datasets, pages, viewer, docs];
