// A TCP proxy on loopback for fault-injection tests: it listens on a port of its own and forwards
// every connection to a target (a broker, a database, an object store), and a test switches what
// the network does between them:
//
//   pass()          forward everything at once (the start, and what resume() returns to);
//   latency(ms)     deliver every chunk ms late, in order;
//   hang()          accept connections and keep them open, but forward nothing (a partition or a
//                   hung peer: the kernel answers, nobody else does); data is held, not lost;
//   reset(bytes)    forward `bytes` more bytes on each connection, then drop both sides with a TCP
//                   RST (a connection cut mid-transfer); new connections get the same treatment;
//   resume()        back to pass: held data flows on, in order.
//
// `resetAll()` cuts every open connection at once; `connections` counts the open ones and
// `accepted` every connection ever made. Nothing here is installed: node:net only.

import { createServer, connect, type Server, type Socket } from 'node:net';

export type FaultMode = { readonly kind: 'pass' } | { readonly kind: 'latency'; readonly ms: number } | { readonly kind: 'hang' } | { readonly kind: 'reset'; readonly bytes: number };

interface Queued {
  readonly chunk: Buffer;
  readonly readyAt: number;
}

class Direction {
  readonly queue: Queued[] = [];
  timer: NodeJS.Timeout | undefined;
  constructor(
    readonly from: Socket,
    readonly to: Socket,
  ) {}
}

class ProxiedConnection {
  private readonly up: Direction;
  private readonly down: Direction;
  /** Bytes forwarded since the reset mode was set (both directions). */
  private forwarded = 0;
  private closed = false;

  constructor(
    private readonly proxy: FaultProxy,
    readonly client: Socket,
    readonly server: Socket,
  ) {
    this.up = new Direction(client, server);
    this.down = new Direction(server, client);
    for (const direction of [this.up, this.down]) {
      direction.from.on('data', (chunk: Buffer) => {
        const mode = this.proxy.mode;
        direction.queue.push({ chunk, readyAt: Date.now() + (mode.kind === 'latency' ? mode.ms : 0) });
        this.pump(direction);
      });
      direction.from.on('end', () => {
        // Half-close once everything before it is forwarded (or at once when nothing waits).
        const flushEnd = (): void => {
          if (direction.queue.length === 0) direction.to.end();
          else setTimeout(flushEnd, 10);
        };
        flushEnd();
      });
    }
    for (const socket of [client, server]) {
      socket.on('error', () => this.destroy(false));
      socket.on('close', () => this.destroy(false));
    }
  }

  /** Forwards what the mode allows now; schedules the rest. */
  pump(direction: Direction): void {
    if (this.closed) return;
    const mode = this.proxy.mode;
    if (mode.kind === 'hang') return;
    while (direction.queue.length > 0) {
      const head = direction.queue[0]!;
      const wait = head.readyAt - Date.now();
      if (wait > 0) {
        if (direction.timer === undefined) {
          direction.timer = setTimeout(() => {
            direction.timer = undefined;
            this.pump(direction);
          }, wait);
        }
        return;
      }
      direction.queue.shift();
      if (mode.kind === 'reset') {
        const left = mode.bytes - this.forwarded;
        if (head.chunk.length >= left) {
          if (left > 0) direction.to.write(head.chunk.subarray(0, left));
          this.forwarded += Math.max(left, 0);
          // Let the partial write leave before the reset.
          setImmediate(() => this.destroy(true));
          return;
        }
        this.forwarded += head.chunk.length;
      }
      direction.to.write(head.chunk);
    }
  }

  pumpAll(): void {
    this.pump(this.up);
    this.pump(this.down);
  }

  /** A new mode: counting for reset starts over. */
  modeChanged(): void {
    this.forwarded = 0;
    const mode = this.proxy.mode;
    if (mode.kind === 'reset' && mode.bytes === 0) return this.destroy(true);
    this.pumpAll();
  }

  destroy(reset: boolean): void {
    if (this.closed) return;
    this.closed = true;
    for (const direction of [this.up, this.down]) if (direction.timer !== undefined) clearTimeout(direction.timer);
    for (const socket of [this.client, this.server]) {
      if (reset && !socket.destroyed) socket.resetAndDestroy();
      else socket.destroy();
    }
    this.proxy.forget(this);
  }
}

export class FaultProxy {
  mode: FaultMode = { kind: 'pass' };
  accepted = 0;
  private readonly open = new Set<ProxiedConnection>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly target: { readonly host: string; readonly port: number },
  ) {}

  /** Listens on the loopback's `listenPort` (0: a free port; :: and 127.0.0.1 where there is IPv6) and forwards to host:port. */
  static async start(targetPort: number, options: { readonly targetHost?: string; readonly listenPort?: number } = {}): Promise<FaultProxy> {
    const target = { host: options.targetHost ?? '127.0.0.1', port: targetPort };
    let proxy: FaultProxy | undefined;
    const server = createServer({ noDelay: true }, (client) => proxy!.accept(client));
    const listen = (host: string): Promise<number> =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port: options.listenPort ?? 0, host, ipv6Only: false }, () => {
          server.removeListener('error', reject);
          const address = server.address();
          resolve(typeof address === 'object' && address !== null ? address.port : 0);
        });
      });
    // Both loopbacks where the machine has IPv6 (a client given "localhost" may pick ::1), else 127.0.0.1.
    const port = await listen('::').catch(() => listen('127.0.0.1'));
    proxy = new FaultProxy(server, port, target);
    return proxy;
  }

  get connections(): number {
    return this.open.size;
  }

  private accept(client: Socket): void {
    this.accepted++;
    client.setNoDelay(true);
    const server = connect({ host: this.target.host, port: this.target.port });
    server.setNoDelay(true);
    const connection = new ProxiedConnection(this, client, server);
    this.open.add(connection);
    if (this.mode.kind === 'reset' && this.mode.bytes === 0) connection.destroy(true);
  }

  forget(connection: ProxiedConnection): void {
    this.open.delete(connection);
  }

  private set(mode: FaultMode): void {
    this.mode = mode;
    for (const connection of this.open) connection.modeChanged();
  }

  pass(): void {
    this.set({ kind: 'pass' });
  }

  latency(ms: number): void {
    this.set({ kind: 'latency', ms });
  }

  hang(): void {
    this.set({ kind: 'hang' });
  }

  reset(bytes: number): void {
    this.set({ kind: 'reset', bytes });
  }

  resume(): void {
    this.pass();
  }

  /** Cuts every open connection with an RST now (the mode stays). */
  resetAll(): void {
    for (const connection of [...this.open]) connection.destroy(true);
  }

  async close(): Promise<void> {
    for (const connection of [...this.open]) connection.destroy(false);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
