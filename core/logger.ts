import pino, { type Logger } from "pino";

import type { InjectionToken } from "./di";

export type { Logger };

/** DI token of the process logger (pino). */
export const LOGGER = Symbol("svc.Logger") as InjectionToken<Logger>;

/**
 * Creates the process logger: pretty, colourised lines when stdout is a terminal, JSON lines
 * otherwise (files, pipes, CI, log shippers).
 *
 * @param level pino level name (`trace` … `fatal`, or `silent`)
 */
export function createLogger(level: string, pretty = process.stdout.isTTY === true): Logger {
  if (pretty) {
    return pino({
      level,
      transport: { target: "pino-pretty", options: { colorize: true, translateTime: "HH:MM:ss.l", ignore: "pid,hostname" } },
    });
  }
  return pino({ level });
}
