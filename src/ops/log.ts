// The service's log: JSON lines on stderr (stdout carries only the start announcement that
// scripts read, a JSON line too, so a shipper reading either stream parses every line), each with `level`, `time`, `msg` and the facts of what happened (`event`,
// and `reqId` where a request is involved). Written synchronously: at `info` there are a few
// lines a minute, and a line must not be lost when the process stops right after it.
import { pino, stdTimeFunctions, type DestinationStream, type Logger } from 'pino';
import type { Report } from '../engine/report.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function createLogger(level: LogLevel, destination: DestinationStream = pino.destination({ dest: 2, sync: true })): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: stdTimeFunctions.isoTime,
      // The level by name: a reader greps for "error", not 50.
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** Reports (src/engine/report.ts) as log lines at their level. */
export function reportTo(logger: Logger): Report {
  return (message, fields) => {
    const { level = 'info', ...facts } = fields;
    logger[level](facts, message);
  };
}

/** Whether per-request lines (the access log) are written: only at `debug` and below, so they cost nothing by default. */
export function logsRequests(level: LogLevel): boolean {
  return level === 'debug' || level === 'trace';
}

/**
 * The start announcement: one JSON line on stdout, in the log's shape, with the address served
 * and where credentials.json is. Written at any LOG_LEVEL: scripts wait for it.
 */
export function announceStart(baseUrl: string, credentialsPath: string, destination: DestinationStream = pino.destination({ dest: 1, sync: true })): void {
  createLogger('info', destination).info({ event: 'service.started', baseUrl, credentialsPath }, `listening on ${baseUrl}; credentials in ${credentialsPath}`);
}
