import type { InjectionToken } from "./di";
import type { Config } from "./config";
import type { Logger } from "./logger";
import type { Database } from "./store/db";
import type { EventStream } from "./events/stream";
import type { Outbox } from "./events/outbox";
import type { EventLog } from "./events/log";
import type { OntologyStore } from "./ontology/store";
import type { ProjectRegistry } from "./runtime/registry";
import type { ActionRunner } from "./runtime/actions";
import type { WorkflowRuns } from "./runtime/workflows";
import type { WebhookDeliveries } from "./runtime/webhooks";
import type { TemporalHost } from "./temporal/host";
import type { ScheduleManager } from "./temporal/schedules";
import type { ConnectorRuns } from "./runtime/connector-runs";
import type { TokenService } from "./auth/tokens";
import type { SessionService } from "./auth/sessions";
import type { Lifecycle } from "./lifecycle";
import type { LogCapture } from "./logs/capture";

/**
 * DI tokens of the core services. Every constructor parameter is injected explicitly with
 * `@inject(TOKENS.X)`; nothing relies on emitted decorator metadata.
 */
export const TOKENS = {
  Config: Symbol("Config") as InjectionToken<Config>,
  Logger: Symbol("Logger") as InjectionToken<Logger>,
  Database: Symbol("Database") as InjectionToken<Database>,
  EventStream: Symbol("EventStream") as InjectionToken<EventStream>,
  Outbox: Symbol("Outbox") as InjectionToken<Outbox>,
  EventLog: Symbol("EventLog") as InjectionToken<EventLog>,
  OntologyStore: Symbol("OntologyStore") as InjectionToken<OntologyStore>,
  Project: Symbol("Project") as InjectionToken<ProjectRegistry>,
  ActionRunner: Symbol("ActionRunner") as InjectionToken<ActionRunner>,
  WorkflowRuns: Symbol("WorkflowRuns") as InjectionToken<WorkflowRuns>,
  WebhookDeliveries: Symbol("WebhookDeliveries") as InjectionToken<WebhookDeliveries>,
  Temporal: Symbol("Temporal") as InjectionToken<TemporalHost>,
  Schedules: Symbol("Schedules") as InjectionToken<ScheduleManager>,
  ConnectorRuns: Symbol("ConnectorRuns") as InjectionToken<ConnectorRuns>,
  Tokens: Symbol("Tokens") as InjectionToken<TokenService>,
  Sessions: Symbol("Sessions") as InjectionToken<SessionService>,
  Lifecycle: Symbol("Lifecycle") as InjectionToken<Lifecycle>,
  Logs: Symbol("Logs") as InjectionToken<LogCapture>,
} as const;
