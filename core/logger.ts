import pino, { type Logger } from "pino";

export type { Logger };

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
