// What the outbound-policy suites share: every TCP connection attempt of the process
// watched, a fake DNS, and a loopback listener that counts the connections it gets.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ResolvedAddress, Resolver } from '../../src/outbound/target-policy.js';

/** Stands in for a public address the fake DNS hands out; no test ever connects to it. */
export const PUBLIC_LOOKING = '93.184.215.14';

const LOOPBACK = new Set(['127.0.0.1', '::1']);

export interface ConnectionAttempt {
  ip: string;
  port: number;
}

/**
 * Every TCP connection attempt of this process from `start` to `stop`, through
 * diagnostics_channel. Should the code under test be broken, an attempt off the machine
 * throws: net emits `connectionAttempt` just before the connect call, so throwing there
 * stops the packet (and fails the test loudly).
 */
export class ConnectionWatch {
  readonly attempts: ConnectionAttempt[] = [];
  /** Ports of the services under test: the suite's own requests to them are not outbound. */
  readonly servicePorts = new Set<number>();
  readonly #onSocket = (message: unknown): void => {
    const { socket } = message as { socket: Socket };
    socket.on('connectionAttempt', (ip: string, port: number) => {
      this.attempts.push({ ip, port });
      if (!LOOPBACK.has(ip)) throw new Error(`the suite tried to connect off the machine, to ${ip}:${port}`);
    });
  };

  start(): this {
    subscribe('net.client.socket', this.#onSocket);
    return this;
  }

  stop(): void {
    unsubscribe('net.client.socket', this.#onSocket);
  }

  /** Where the next attempt will be recorded. */
  get mark(): number {
    return this.attempts.length;
  }

  /** Connection attempts made since `mark` to anything but a service under test. */
  outboundSince(mark: number): ConnectionAttempt[] {
    return this.attempts.slice(mark).filter((a) => !this.servicePorts.has(a.port));
  }

  /** Attempts that left the machine (none, unless the watch's throw was swallowed). */
  offMachine(): ConnectionAttempt[] {
    return this.attempts.filter((a) => !LOOPBACK.has(a.ip));
  }
}

/** DNS from a table; every name asked is recorded, an unknown one does not resolve. */
export class FakeDns {
  readonly names = new Map<string, ResolvedAddress[]>([
    ['localhost', [{ address: '127.0.0.1', family: 4 }]],
    ['loopback.test', [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }]],
    ['mixed.test', [{ address: PUBLIC_LOOKING, family: 4 }, { address: '127.0.0.1', family: 4 }]],
    ['lan.test', [{ address: '10.0.0.5', family: 4 }]],
    ['metadata.test', [{ address: '169.254.169.254', family: 4 }]],
    ['ula.test', [{ address: 'fd00::5', family: 6 }]],
  ]);
  readonly asked: string[] = [];
  readonly resolver: Resolver = async (hostname) => {
    this.asked.push(hostname);
    const found = this.names.get(hostname.toLowerCase());
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };
  set(name: string, address: string): void {
    this.names.set(name, [{ address, family: address.includes(':') ? 6 : 4 }]);
  }
}

export interface Listener {
  port: number;
  url(path?: string): string;
  connections: number;
  requests: number;
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 counting connections and requests; `answer` answers each request once its body is read. */
export async function startListener(answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(200).end()): Promise<Listener> {
  const server = createServer((req, res) => {
    listener.requests++;
    req.resume();
    req.on('end', () => answer(req, res));
  });
  server.on('connection', () => listener.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const listener: Listener = {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    connections: 0,
    requests: 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return listener;
}
