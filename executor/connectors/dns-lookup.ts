// Name lookups with a deadline, for every connection a connector opens. Node's dns.lookup
// (getaddrinfo on the libuv thread pool) has no timeout of its own: a resolver that never answers
// would leave the connection waiting on the lookup with nothing but a generic connect timeout
// around it. `lookupWithin(ms)` is a `lookup` for net.connect that gives up at the deadline with
// ETIMEOUT "DNS lookup of HOST: no answer within N ms", so the error names the name lookup. (The
// thread-pool thread itself stays busy until getaddrinfo returns; the connection does not wait.)
// The connectors pass their connect deadline: the lookup is part of connecting.

import { lookup as dnsLookup } from 'node:dns';
import { connect as netConnect, Socket, type LookupFunction } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';

/** A net.connect `lookup` that fails with ETIMEOUT after `timeoutMs` (`underlying`: dns.lookup). */
export function lookupWithin(timeoutMs: number, underlying: LookupFunction = dnsLookup as unknown as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      const error: NodeJS.ErrnoException = new Error(`DNS lookup of ${hostname}: no answer within ${timeoutMs} ms`);
      error.code = 'ETIMEOUT';
      error.syscall = 'getaddrinfo';
      callback(error, '', 0);
    }, timeoutMs);
    underlying(hostname, options, (error, address, family) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      callback(error, address, family);
    });
  };
}

const KAFKA_KEEP_ALIVE_MS = 60_000;

/** kafkajs' socketFactory with the lookup deadline (otherwise as kafkajs' own: keep-alive, TLS when asked). */
export function kafkaSocketFactory(timeoutMs: number) {
  const lookup = lookupWithin(timeoutMs);
  return ({ host, port, ssl, onConnect }: { host: string; port: number; ssl: ConnectionOptions | boolean | null | undefined; onConnect: () => void }): Socket => {
    // kafkajs passes ssl = null for a plaintext connection: TLS only when it is set.
    const socket =
      ssl !== null && ssl !== undefined && ssl !== false
        ? tlsConnect({ host, port, lookup, servername: host, ...(typeof ssl === 'object' ? ssl : {}) }, onConnect)
        : netConnect({ host, port, lookup }, onConnect);
    socket.setKeepAlive(true, KAFKA_KEEP_ALIVE_MS);
    return socket;
  };
}

/** A socket for the `pg` client whose connect(port, host) looks the host up within `timeoutMs`. */
export function pgSocketWithin(timeoutMs: number): () => Socket {
  const lookup = lookupWithin(timeoutMs);
  return () => {
    const socket = new Socket();
    const connect = socket.connect.bind(socket) as (options: { port: number; host: string; lookup: LookupFunction }) => Socket;
    (socket as unknown as { connect: (port: number, host: string) => Socket }).connect = (port, host) => connect({ port, host, lookup });
    return socket;
  };
}
