// Opening the service: the store and recovery, the default platform, then the HTTP front.
// Tests open it in-process (port 0, a manual clock); `main.ts` opens it for real.
import { resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import { Engine } from './engine/engine.js';
import { systemClock, type Clock } from './engine/clock.js';
import { World, type DomainEvent, type TimerMessage } from '../actors/world.js';
import { loadMasterKey } from './crypto/master-key.js';
import { ensureDefaultPlatform } from './platforms.js';
import { startHttpServer, API_VERSION, type HttpServer } from './http/server.js';
import { routes } from './http/routes/index.js';
import { openApiDocument } from './http/openapi.js';
import type { ServiceConfig, Services } from './services.js';
import { claimDataDir, operatorKey, recordOwner, releaseDataDir } from './data-dir.js';
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { Obj, Str, validator } from './http/validation.js';
import { ApiError } from './http/errors.js';
import { createPlatform } from './platforms.js';

const NewPlatformBody = validator(
  Obj({
    umaDomain: Type.Optional(Str({ minLength: 3, maxLength: 253 })),
    isRegulatedFinancialInstitution: Type.Optional(Type.Boolean()),
  }),
);

export interface ServiceOptions {
  host?: string;
  port?: number;
  dataDir?: string;
  clock?: Clock;
  snapshotEveryEntries?: number;
  snapshotEverySeconds?: number;
  report?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

export interface RunningService {
  services: Services;
  http: HttpServer;
  baseUrl: string;
  credentialsPath: string;
  /** Stops accepting, drains requests in flight, makes the final commit. */
  close(): Promise<void>;
}

function numberFrom(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${value}`);
  return n;
}

export function configFromEnv(env: NodeJS.ProcessEnv, options: ServiceOptions = {}): ServiceConfig {
  const host = options.host ?? env.HOST ?? '127.0.0.1';
  const port = options.port ?? numberFrom(env.PORT, 8080, 'PORT');
  const dataDir = resolve(options.dataDir ?? env.DATA_DIR ?? './data/db');
  return {
    host,
    port,
    dataDir,
    baseUrl: `http://${host}:${port}/${API_VERSION}`,
    snapshotEveryEntries: options.snapshotEveryEntries ?? numberFrom(env.SNAPSHOT_EVERY_ENTRIES, 100_000, 'SNAPSHOT_EVERY_ENTRIES'),
    snapshotEveryMs: 1000 * (options.snapshotEverySeconds ?? numberFrom(env.SNAPSHOT_EVERY_SECONDS, 300, 'SNAPSHOT_EVERY_SECONDS')),
  };
}

/** Opens the store, recovers, and returns services without serving HTTP (for commands). */
export async function openServices(options: ServiceOptions = {}): Promise<Services> {
  const report = options.report ?? ((line: string) => process.stderr.write(`${line}\n`));
  const config = configFromEnv(options.env ?? process.env, options);
  mkdirSync(config.dataDir, { recursive: true });
  claimDataDir(config.dataDir);
  const world = new World();
  const engine = new Engine<DomainEvent, TimerMessage>({
    dataDir: config.dataDir,
    clock: options.clock ?? systemClock,
    machine: world,
    snapshotEveryEntries: Math.max(1, config.snapshotEveryEntries),
    snapshotEveryMs: Math.max(1000, config.snapshotEveryMs),
    report,
  });
  await engine.open();
  const masterKey = loadMasterKey(config.dataDir, options.env ?? process.env);
  return { config, engine, world, masterKey };
}

export async function startService(options: ServiceOptions = {}): Promise<RunningService> {
  const report = options.report ?? ((line: string) => process.stderr.write(`${line}\n`));
  const services = await openServices({ ...options, report });
  const { path: credentialsPath } = await ensureDefaultPlatform(services);
  const http = await startHttpServer(
    services,
    routes,
    {
      healthz: () => ({ status: 'ok', lastSeq: services.engine.lastSeq, durableSeq: services.engine.durableSeq }),
      openapi: () => openApiDocument(routes, services.config.baseUrl),
      operator: {
        keyHash: createHash('sha256').update(operatorKey(services.config.dataDir)).digest(),
        handle: async (path, body) => {
          if (path !== '/_operator/platforms') throw new ApiError(404, 'NOT_FOUND', `no operator endpoint ${path}`);
          const input = NewPlatformBody.parse(body);
          return { status: 201, body: await createPlatform(services, input) };
        },
      },
    },
    report,
  );
  // With port 0 the OS picked one: the base URL names the real port.
  services.config.port = http.port;
  services.config.baseUrl = `http://${services.config.host}:${http.port}/${API_VERSION}`;
  recordOwner(services.config.dataDir, `http://${services.config.host}:${http.port}`);
  let closing: Promise<void> | undefined;
  return {
    services,
    http,
    baseUrl: services.config.baseUrl,
    credentialsPath,
    close: () => {
      closing ??= (async () => {
        await http.drain();
        await services.engine.close();
        releaseDataDir(services.config.dataDir);
      })();
      return closing;
    },
  };
}
