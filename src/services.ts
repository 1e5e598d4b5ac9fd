// What routes can reach: the engine (to decide and log), the world (to read), the
// clock, and the secrets the service keeps. Built once in `openService`.
import type { Engine } from './engine/engine.js';
import type { DomainEvent, TimerMessage, World } from '../actors/world.js';
import type { MasterKey } from './crypto/master-key.js';

export interface ServiceConfig {
  host: string;
  port: number;
  dataDir: string;
  /** `http://HOST:PORT/2025-10-13` as clients should call it */
  baseUrl: string;
  snapshotEveryEntries: number;
  snapshotEveryMs: number;
}

export interface Services {
  config: ServiceConfig;
  engine: Engine<DomainEvent, TimerMessage>;
  world: World;
  masterKey: MasterKey;
}
