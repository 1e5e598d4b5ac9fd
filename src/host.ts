// What one node (app.ts) and a cluster node (cluster/service.ts) do alike around their
// shards: they listen before anything is recovered, make the parts their shards share (the
// crypto pool, the outbound egress and its policy, the OIDC verifier), and answer /healthz,
// the OpenAPI document and the operator endpoint the same way. The simulation has no socket
// and hands its shard simulated parts instead (sim/service.ts).
import { createHash } from 'node:crypto';
import { notFound } from '../actors/errors.js';
import type { HostParts, ServiceConfig } from './config.js';
import { optional } from './optional.js';
import { operatorKey } from './data-dir.js';
import type { Report } from './engine/report.js';
import type { RecoveryProgress } from './engine/engine.js';
import { createCryptoPool } from './crypto/pool.js';
import { OutboundEgress } from './outbound/egress.js';
import { TargetPolicy } from './outbound/target-policy.js';
import { OidcVerifier } from './wallet/oidc.js';
import { startHttpServer, API_VERSION, type Extras, type HttpServer } from './http/server.js';
import type { DashboardFile } from './http/dashboard.js';
import { openApiDocument } from './http/openapi.js';
import type { Route } from './http/route.js';
import { logsRequests } from './ops/log.js';
import { httpObserverOf, type ServiceMetrics } from './ops/metrics.js';
import { NewPlatformBody, type NewPlatform, type PlatformCredentials } from './platforms.js';
import type { SharedParts } from './shard.js';

/**
 * Listens on HOST:PORT. With port 0 the OS picked one: `config`'s port and base URL (and so
 * credentials.json and the OpenAPI document) are set to the port actually served.
 */
export async function listen(
  config: ServiceConfig,
  front: { report: Report; metrics: ServiceMetrics | undefined; recovery: () => RecoveryProgress | undefined; dashboard?: ReadonlyMap<string, DashboardFile> },
): Promise<HttpServer> {
  const http = await startHttpServer({
    host: config.host,
    port: config.port,
    report: front.report,
    ...optional('observer', httpObserverOf(front.metrics, front.report, logsRequests(config.logLevel))),
    ...optional('metrics', front.metrics),
    recovery: front.recovery,
    ...optional('dashboard', front.dashboard),
  });
  config.port = http.port;
  config.baseUrl = `http://${config.host}:${http.port}/${API_VERSION}`;
  return http;
}

/** The parts a node's shards share, made from its settings; `close` ends the egress's connections and the crypto workers. */
export function sharedParts(config: ServiceConfig, parts: HostParts): SharedParts & { close(): Promise<void> } {
  const crypto = createCryptoPool({ routes: config.cryptoRoutes });
  const outboundTargets = new TargetPolicy({ allowPrivate: config.allowPrivateTargets, ...optional('resolver', parts.outboundResolver) });
  const egress = new OutboundEgress(outboundTargets);
  return {
    crypto,
    egress,
    outboundTargets,
    oidc: new OidcVerifier({ fetcher: egress }),
    close: async () => {
      egress.close();
      await crypto.close();
    },
  };
}

/** Process memory as /healthz reports it (bytes): process.memoryUsage() reads /proc/self/statm and the heap's counters. */
export function memoryFigures(): { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number } {
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, heapTotal, external, arrayBuffers };
}

/**
 * /healthz (the host's own figures, then the process memory), the OpenAPI document at the
 * served address, and the operator endpoint that makes platforms the host's way.
 */
export function hostExtras(host: {
  config: ServiceConfig;
  routes: readonly Route[];
  figures: () => object;
  createPlatform: (input: NewPlatform) => Promise<PlatformCredentials>;
}): Extras {
  const { config } = host;
  return {
    healthz: () => ({ status: 'ok', ...host.figures(), memory: memoryFigures() }),
    openapi: () => openApiDocument(host.routes, config.baseUrl),
    operator: {
      keyHash: createHash('sha256').update(operatorKey(config.dataDir)).digest(),
      handle: async (path, body) => {
        if (path !== '/_operator/platforms') throw notFound('path', 'operator endpoint', path);
        return { status: 201, body: await host.createPlatform(NewPlatformBody.parse(body)) };
      },
    },
  };
}
