// A standby's connection to the cluster's leader for one client session that forwards its writes
// (the session's `forwardTo`, executor/engine/read-only.ts). A small frontend of the wire protocol
// on our own codec: the startup packet as the client's user with the client's startup parameters
// and `oxbow.forwarded_auth` (how this node authenticated the client: auth.ts), SCRAM-SHA-256 with
// the node-to-node password of that user, the settings the session SET here set again, and then a
// relay: every frontend message of the client goes to the leader as it came, every backend message
// of the leader goes to the client as it came (the connection, connection.ts, does both). The
// connection is inside TLS when the leader offers it (`encryptedIfOffered`).
//
// Reaching a leader: its address is etcd's (the engine's `leaderAddress`); while none is known or
// it refuses connections (an election, a leader that died), it is tried again every 100 ms until
// the route's deadline, then 57P03: nothing was sent, the statement can be run again. A leader
// that answers the startup with an error (a role it does not know, a password it requires) gives
// that error to the client as it is.

import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { WriteForwarding } from '../executor/engine/engine.js';
import { SqlError, SqlState, type SqlStateCode } from '../sql/errors.js';
import { SCRAM_SHA_256, ScramClient, saslMechanisms } from '../sql/scram-client.js';
import { FORWARDED_AUTH_PARAMETER, type AuthenticatedBy } from './auth.js';
import { MessageFramer, type Frame } from './framer.js';
import { MessageReader } from './message-reader.js';
import { MessageWriter } from './message-writer.js';
import { asBytes } from './node-buffer.js';

/** Who the forwarded session is: the client's startup packet, as the standby received it. */
export interface ForwardedStartup {
  readonly user: string;
  readonly database: string;
  readonly options: Readonly<Record<string, string>>;
  readonly authenticatedBy: AuthenticatedBy;
}

const RETRY_MS = 100;
const MAX_BACKEND_MESSAGE_BYTES = 1 << 30;

/** A connection to the leader, past its startup: relays messages both ways. */
export class LeaderLink {
  /** A backend message of the leader, whole (type byte, length, body), for the client. */
  onMessage: (type: string, bytes: Buffer) => void = () => undefined;
  /** The leader's connection ended (`inFlight`: a statement sent had not been answered with ReadyForQuery). */
  onClose: (inFlight: boolean) => void = () => undefined;
  /** Query and Sync messages sent and not yet answered with ReadyForQuery. */
  private pending = 0;
  private ended = false;

  private constructor(
    private readonly socket: Socket,
    private readonly framer: MessageFramer,
    readonly address: string,
    /** The leader's BackendKeyData, for a CancelRequest. */
    private readonly key: { processId: number; secretKey: number } | undefined,
  ) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('close', () => this.end());
    socket.on('error', () => this.end());
    // Bytes that arrived with the startup's last message.
    queueMicrotask(() => this.drainFramer());
  }

  /** Opens a link to the current leader, trying until the route's deadline (57P03 then). */
  static async open(route: WriteForwarding, startup: ForwardedStartup, namedParses: readonly Buffer[] = []): Promise<LeaderLink> {
    const deadline = Date.now() + route.timeoutMs;
    let lastReason = 'no leader is known (an election is in progress)';
    for (;;) {
      const address = route.leaderAddress();
      if (address !== undefined) {
        try {
          return await LeaderLink.attempt(address, route, startup, namedParses, deadline);
        } catch (error) {
          if (error instanceof SqlError && error.code !== SqlState.cannotConnectNow) throw error;
          lastReason = `the leader at ${address} ${error instanceof SqlError ? `answered: ${error.message}` : `could not be reached: ${error instanceof Error ? error.message : String(error)}`}`;
        }
      }
      if (Date.now() + RETRY_MS >= deadline) {
        throw new SqlError(SqlState.cannotConnectNow, `cannot forward this statement to the cluster's leader: ${lastReason}`, {
          detail: `No leader answered within ${route.timeoutMs} ms. Nothing was sent to a leader.`,
          hint: 'The cluster may be electing a new leader; run the statement again in a moment.',
        });
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }

  private static async attempt(address: string, route: WriteForwarding, startup: ForwardedStartup, namedParses: readonly Buffer[], deadline: number): Promise<LeaderLink> {
    const { host, port } = splitAddress(address);
    const socket = await encryptedIfOffered(host, port, deadline);
    socket.setNoDelay(true);
    const framer = new MessageFramer(MAX_BACKEND_MESSAGE_BYTES);
    framer.endStartupPhase();
    const frames: Frame[] = [];
    let waiter: (() => void) | undefined;
    let failure: Error | undefined;
    const wake = (): void => {
      const resolve = waiter;
      waiter = undefined;
      resolve?.();
    };
    const onData = (chunk: Buffer): void => {
      framer.push(chunk);
      for (let frame = framer.next(); frame !== undefined; frame = framer.next()) frames.push(frame);
      wake();
    };
    const onEnd = (error?: Error): void => {
      failure ??= error ?? new Error('the connection closed');
      wake();
    };
    const onClose = (): void => onEnd();
    socket.on('data', onData);
    socket.on('error', onEnd);
    socket.on('close', onClose);
    const timer = setTimeout(() => onEnd(new Error(`no answer within the forwarding deadline`)), Math.max(1, deadline - Date.now()));
    const next = async (): Promise<Frame> => {
      for (;;) {
        const frame = frames.shift();
        if (frame !== undefined) return frame;
        if (failure !== undefined) throw failure;
        await new Promise<void>((resolve) => (waiter = resolve));
      }
    };
    try {
      socket.write(asBytes(startupPacket(startup)));
      const key = await handshake(socket, next, route.peerPassword(startup.user));
      await replaySettings(socket, next, route.sessionSettings());
      await prepareNamed(socket, next, namedParses);
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', onEnd);
      socket.off('close', onClose);
      if (failure !== undefined) throw failure;
      const link = new LeaderLink(socket, framer, address, key);
      // Frames already split off go first (none are expected: the leader waits for a query).
      for (const frame of frames) link.deliver(frame);
      return link;
    } catch (error) {
      clearTimeout(timer);
      socket.destroy();
      throw error;
    }
  }

  /** A client's frontend message, as it came; resolves once the leader's socket can take more (a bulk COPY waits here). */
  async send(frame: Frame): Promise<void> {
    if (this.ended) return;
    if (frame.type === 'Q' || frame.type === 'S') this.pending++;
    const header = Buffer.allocUnsafe(5);
    header.write(frame.type, 0, 'latin1');
    header.writeInt32BE(frame.payload.length + 4, 1);
    this.socket.write(asBytes(header));
    if (this.socket.write(asBytes(frame.payload)) || this.ended) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  /** Back-pressure from the client: stop reading the leader while the client lags. */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Sends a CancelRequest for the leader's session on a connection of its own. */
  cancel(): void {
    if (this.key === undefined || this.ended) return;
    const { host, port } = splitAddress(this.address);
    const packet = Buffer.allocUnsafe(16);
    packet.writeInt32BE(16, 0);
    packet.writeInt32BE(80877102, 4);
    packet.writeInt32BE(this.key.processId, 8);
    packet.writeInt32BE(this.key.secretKey, 12);
    const socket = connect({ host, port }, () => socket.end(asBytes(packet)));
    socket.on('error', () => socket.destroy());
  }

  /** The client is gone: Terminate, then close. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.socket.end(asBytes(Buffer.from([0x58, 0, 0, 0, 4])));
    this.socket.destroySoon();
  }

  private receive(chunk: Buffer): void {
    if (this.ended) return;
    try {
      this.framer.push(chunk);
    } catch {
      this.socket.destroy();
      return;
    }
    this.drainFramer();
  }

  private drainFramer(): void {
    try {
      for (let frame = this.framer.next(); frame !== undefined && !this.ended; frame = this.framer.next()) this.deliver(frame);
    } catch {
      // The leader's framing is lost: nothing after this can be relayed.
      this.socket.destroy();
    }
  }

  private deliver(frame: Frame): void {
    if (frame.type === 'Z' && this.pending > 0) this.pending--;
    const bytes = Buffer.allocUnsafe(5 + frame.payload.length);
    bytes.write(frame.type, 0, 'latin1');
    bytes.writeInt32BE(frame.payload.length + 4, 1);
    frame.payload.copy(asBytes(bytes), 5);
    this.onMessage(frame.type, bytes);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onClose(this.pending > 0);
  }
}

/**
 * A connection to the leader, inside TLS when the leader has a certificate (SSLRequest answered
 * 'S'), in the clear when it answers 'N'. The certificate is not checked against a CA (a cluster's
 * nodes have no shared one configured): TLS keeps the session from eavesdroppers, and the SCRAM
 * exchange's server signature proves the leader knows the cluster's key.
 */
async function encryptedIfOffered(host: string, port: number, deadline: number): Promise<Socket> {
  const raw = connect({ host, port });
  try {
    const answer = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer to SSLRequest within the forwarding deadline')), Math.max(1, deadline - Date.now()));
      const finish = (error: Error | undefined, value?: string): void => {
        clearTimeout(timer);
        raw.off('data', onData);
        raw.off('error', onError);
        raw.off('close', onClose);
        if (error === undefined) resolve(value!);
        else reject(error);
      };
      const onData = (chunk: Buffer): void => {
        if (chunk.length !== 1) finish(new Error('the leader answered SSLRequest with more than one byte'));
        else finish(undefined, String.fromCharCode(chunk[0]!));
      };
      const onError = (error: Error): void => finish(error);
      const onClose = (): void => finish(new Error('the connection closed'));
      raw.on('data', onData);
      raw.on('error', onError);
      raw.on('close', onClose);
      const request = Buffer.alloc(8);
      request.writeInt32BE(8, 0);
      request.writeInt32BE(80877103, 4);
      raw.write(asBytes(request));
    });
    if (answer === 'N') return raw;
    if (answer !== 'S') throw new Error(`the leader answered SSLRequest with "${answer}"`);
    return await new Promise<Socket>((resolve, reject) => {
      const secured = connectTls({ socket: raw, rejectUnauthorized: false, ...(isIp(host) ? {} : { servername: host }) });
      const onError = (error: Error): void => reject(error);
      secured.once('error', onError);
      secured.once('secureConnect', () => {
        secured.off('error', onError);
        resolve(secured);
      });
    });
  } catch (error) {
    raw.destroy();
    throw error;
  }
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

/** `host:port` or `[v6]:port`. */
function splitAddress(address: string): { host: string; port: number } {
  const match = /^\[?(.*?)\]?:(\d+)$/.exec(address);
  if (match === null) throw new SqlError(SqlState.cannotConnectNow, `the leader's address "${address}" is not HOST:PORT`);
  return { host: match[1]!, port: Number(match[2]) };
}

function startupPacket(startup: ForwardedStartup): Buffer {
  const parameters: [string, string][] = [['user', startup.user], ['database', startup.database], ...Object.entries(startup.options), [FORWARDED_AUTH_PARAMETER, startup.authenticatedBy]];
  const body = new MessageWriter();
  body.begin('\0');
  body.int32(196608);
  for (const [name, value] of parameters) body.cstring(name).cstring(value);
  body.int8(0);
  body.end();
  // MessageWriter writes a type byte; a startup packet has none.
  return body.take().subarray(1);
}

/** Authentication (SCRAM-SHA-256 with the node-to-node password) up to ReadyForQuery; the leader's BackendKeyData. */
async function handshake(socket: Socket, next: () => Promise<Frame>, password: string): Promise<{ processId: number; secretKey: number } | undefined> {
  let scram: ScramClient | undefined;
  let key: { processId: number; secretKey: number } | undefined;
  for (;;) {
    const frame = await next();
    switch (frame.type) {
      case 'R': {
        const reader = new MessageReader(frame.payload, 'Authentication');
        const code = reader.int32();
        if (code === 0) break;
        if (code === 10) {
          const mechanisms = saslMechanisms(frame.payload.subarray(4));
          if (!mechanisms.includes(SCRAM_SHA_256)) throw new SqlError(SqlState.protocolViolation, `the leader offers no SASL mechanism this node speaks (${mechanisms.join(', ')})`);
          scram = new ScramClient(password);
          const writer = new MessageWriter();
          writer.begin('p').bytes(asBytes(scram.initialResponseMessage())).end();
          socket.write(asBytes(writer.take()));
        } else if (code === 11 && scram !== undefined) {
          const writer = new MessageWriter();
          writer.begin('p').bytes(asBytes(scram.responseMessage(frame.payload.subarray(4)))).end();
          socket.write(asBytes(writer.take()));
        } else if (code === 12 && scram !== undefined) {
          // The leader proves it knows the verifier too (a node of the same cluster).
          if (!scram.verifyServerFinal(frame.payload.subarray(4).toString('utf8'))) {
            throw new SqlError(SqlState.invalidAuthorizationSpecification, "the leader did not prove the cluster's node-to-node key");
          }
        } else {
          throw new SqlError(SqlState.protocolViolation, `the leader asked for an authentication this node does not speak (code ${code})`);
        }
        break;
      }
      case 'K': {
        const reader = new MessageReader(frame.payload, 'BackendKeyData');
        key = { processId: reader.int32(), secretKey: reader.int32() };
        break;
      }
      case 'E':
        throw leaderError(frame.payload);
      case 'Z':
        return key;
      default:
        // ParameterStatus, NoticeResponse, NegotiateProtocolVersion: the client got its own at its startup.
        break;
    }
  }
}

/** The session's SET values, set again on the leader (set_config quotes nothing wrongly). */
async function replaySettings(socket: Socket, next: () => Promise<Frame>, settings: readonly (readonly [string, string])[]): Promise<void> {
  if (settings.length === 0) return;
  const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;
  const sql = `SELECT ${settings.map(([name, value]) => `pg_catalog.set_config(${literal(name)}, ${literal(value)}, false)`).join(', ')}`;
  const writer = new MessageWriter();
  writer.begin('Q').cstring(sql).end();
  socket.write(asBytes(writer.take()));
  let error: SqlError | undefined;
  for (;;) {
    const frame = await next();
    if (frame.type === 'E') error = leaderError(frame.payload);
    if (frame.type === 'Z') break;
  }
  if (error !== undefined) throw error;
}

/**
 * The session's named statements, prepared on the leader too (a driver that prepared a SELECT by
 * name binds it again later). One that the leader cannot prepare is left out: its Bind then gets
 * the leader's 26000.
 */
async function prepareNamed(socket: Socket, next: () => Promise<Frame>, parses: readonly Buffer[]): Promise<void> {
  if (parses.length === 0) return;
  const writer = new MessageWriter();
  for (const payload of parses) writer.begin('P').bytes(asBytes(payload)).end().begin('S').end();
  socket.write(asBytes(writer.take()));
  let answered = 0;
  while (answered < parses.length) if ((await next()).type === 'Z') answered++;
}

/** An ErrorResponse of the leader as a SqlError with its fields. */
function leaderError(payload: Buffer): SqlError {
  const fields = new Map<string, string>();
  let offset = 0;
  while (offset < payload.length && payload[offset] !== 0) {
    const code = String.fromCharCode(payload[offset]!);
    const end = payload.indexOf(0, offset + 1);
    if (end < 0) break;
    fields.set(code, payload.toString('utf8', offset + 1, end));
    offset = end + 1;
  }
  const code = (fields.get('C') ?? SqlState.connectionFailure) as SqlStateCode;
  return new SqlError(code, fields.get('M') ?? 'the leader refused the forwarded session', {
    ...(fields.has('D') ? { detail: fields.get('D')! } : {}),
    ...(fields.has('H') ? { hint: fields.get('H')! } : {}),
  });
}
