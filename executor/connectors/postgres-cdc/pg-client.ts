// A minimal PostgreSQL frontend over a socket, enough for change data capture: startup (with
// `replication=database` for a replication connection), authentication (trust, cleartext, MD5,
// SCRAM-SHA-256), simple queries with text results (streamed row by row or collected), and the
// CopyBoth mode of START_REPLICATION. One operation runs at a time; every wait has a deadline, so
// an unreachable host or a server that never answers ends in an error, not a hang: the connection
// (name lookup, TCP, authentication) `connectTimeoutMs`, a query `queryTimeoutMs` counted from the
// last message the server sent (a long snapshot that keeps streaming rows is alive; one that stalls
// is not); past it the connection is closed with 08006. The replication stream's own liveness is
// the reader's (`lastReceivedAt`, `abort`).

import { createHash } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { lookupWithin } from '../dns-lookup.js';
import { SqlError } from '../../../sql/errors.js';
import { SCRAM_SHA_256, ScramClient, saslMechanisms } from '../../../sql/scram-client.js';

export interface PgConnectOptions {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  /** A logical replication connection (`replication=database`). */
  readonly replication?: boolean;
  /** Deadline for the TCP connection and authentication, in milliseconds. */
  readonly connectTimeoutMs: number;
  /** Deadline of a query without any message from the server, in milliseconds (0 or absent: none). */
  readonly queryTimeoutMs?: number;
}

/** An error the server sent (its SQLSTATE in `code`) or a connection failure (`code` 08xxx). */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly detail?: string,
  ) {
    super(message);
  }
}

type Handler = (type: number, body: Buffer) => void;

export interface QueryRows {
  readonly columns: string[];
  readonly rows: (string | null)[][];
}

export class PgClient {
  private buffer: Buffer = Buffer.alloc(0);
  private handler: Handler | undefined;
  private failure: PgError | undefined;
  private failWaiter: ((error: PgError) => void) | undefined;
  closed = false;
  private connected = false;
  /** When the server last sent anything (Date.now()). */
  lastReceivedAt = Date.now();
  /** The running query's deadline timer, reset by every message; not counted while paused. */
  private watchdog: NodeJS.Timeout | undefined;
  private paused = false;
  /** A query (an exchange) waits for the server: the watchdog runs only then, never on the replication stream. */
  private querying = false;
  private queryTimeoutMs = 0;
  private address = '';

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.lastReceivedAt = Date.now();
      this.receive(chunk);
    });
    socket.on('connect', () => (this.connected = true));
    socket.on('error', (error) =>
      this.fail(this.connected ? new PgError(`connection to PostgreSQL lost: ${error.message}`, '08006') : new PgError(`could not connect to PostgreSQL: ${error.message}`, '08001')),
    );
    socket.on('close', () => this.fail(new PgError('connection to PostgreSQL closed', '08006')));
  }

  static async connect(options: PgConnectOptions): Promise<PgClient> {
    const socket = netConnect({ host: options.host, port: options.port, lookup: lookupWithin(options.connectTimeoutMs) });
    socket.setNoDelay(true);
    const client = new PgClient(socket);
    client.queryTimeoutMs = options.queryTimeoutMs ?? 0;
    client.address = `${options.host}:${options.port}`;
    const timer = setTimeout(() => {
      client.fail(new PgError(`could not connect to PostgreSQL at ${options.host}:${options.port}: no answer within ${options.connectTimeoutMs} ms`, '08001'));
      socket.destroy();
    }, options.connectTimeoutMs);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('error', (error) => reject(new PgError(`could not connect to PostgreSQL at ${options.host}:${options.port}: ${error.message}`, '08001')));
        client.failWaiter = reject;
      });
      await client.startup(options);
      return client;
    } catch (error) {
      socket.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends the connection with `error`: whoever waits on it (a query, the stream) hears it. */
  abort(error: PgError): void {
    this.fail(error);
    this.socket.destroy();
  }

  private fail(error: PgError): void {
    this.stopWatchdog();
    if (this.failure !== undefined) return;
    this.failure = error;
    this.closed = true;
    const waiter = this.failWaiter;
    this.failWaiter = undefined;
    waiter?.(error);
  }

  private receive(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    let at = 0;
    const buffer = this.buffer;
    while (buffer.length - at >= 5) {
      const length = buffer.readInt32BE(at + 1);
      if (buffer.length - at < length + 1) break;
      const type = buffer[at]!;
      const body = buffer.subarray(at + 5, at + 1 + length);
      at += length + 1;
      if (type === 0x4e /* N notice */ || type === 0x53 /* S parameter */ || type === 0x4b /* K key data */ || type === 0x41 /* A notification */) continue;
      this.handler?.(type, body);
    }
    this.buffer = at === buffer.length ? Buffer.alloc(0) : buffer.subarray(at);
  }

  /** Runs `step` on each message until it calls done or fail; rejects on connection failure. */
  private exchange<T>(step: (type: number, body: Buffer, done: (value: T) => void, fail: (error: Error) => void) => void): Promise<T> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise<T>((resolve, reject) => {
      const finish = (): void => {
        this.handler = undefined;
        this.failWaiter = undefined;
        this.querying = false;
        this.stopWatchdog();
      };
      this.querying = true;
      this.armWatchdog();
      this.failWaiter = (error) => {
        finish();
        reject(error);
      };
      this.handler = (type, body) => {
        this.armWatchdog();
        try {
          step(type, body, (value) => {
            finish();
            resolve(value);
          }, (error) => {
            finish();
            reject(error);
          });
        } catch (error) {
          finish();
          reject(error);
        }
      };
    });
  }

  /** (Re)starts the query deadline: `queryTimeoutMs` from now. */
  private armWatchdog(): void {
    if (this.queryTimeoutMs <= 0 || this.closed || !this.querying) return;
    if (this.watchdog !== undefined) this.watchdog.refresh();
    else {
      this.watchdog = setTimeout(() => {
        this.watchdog = undefined;
        if (this.paused) return this.armWatchdog();
        this.abort(new PgError(`no answer from PostgreSQL at ${this.address} within ${this.queryTimeoutMs} ms (query.timeout.ms)`, '08006'));
      }, this.queryTimeoutMs);
      this.watchdog.unref();
    }
  }

  private stopWatchdog(): void {
    if (this.watchdog !== undefined) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  private send(type: string | undefined, body: Buffer): void {
    if (this.closed) throw this.failure ?? new PgError('connection to PostgreSQL closed', '08006');
    const header = Buffer.alloc(type === undefined ? 4 : 5);
    if (type === undefined) header.writeInt32BE(body.length + 4, 0);
    else {
      header.write(type, 0, 'latin1');
      header.writeInt32BE(body.length + 4, 1);
    }
    this.socket.write(Buffer.concat([header, body]));
  }

  private async startup(options: PgConnectOptions): Promise<void> {
    const parameters: string[] = ['user', options.user, 'database', options.database, 'client_encoding', 'UTF8', 'DateStyle', 'ISO', 'TimeZone', 'UTC', 'IntervalStyle', 'postgres', 'extra_float_digits', '3'];
    if (options.replication === true) parameters.push('replication', 'database');
    const version = Buffer.alloc(4);
    version.writeInt32BE(196608, 0);
    this.send(undefined, Buffer.concat([version, ...parameters.map((part) => Buffer.from(`${part}\0`, 'utf8')), Buffer.from([0])]));
    let scram: ScramClient | undefined;
    await this.exchange<void>((type, body, done, fail) => {
      if (type === 0x45) return fail(errorOf(body));
      if (type === 0x5a) return done();
      if (type !== 0x52) return;
      const code = body.readInt32BE(0);
      if (code === 0) return;
      if (code === 3) return this.send('p', Buffer.from(`${options.password}\0`, 'utf8'));
      if (code === 5) {
        const inner = createHash('md5').update(options.password + options.user).digest('hex');
        const outer = createHash('md5').update(Buffer.concat([Buffer.from(inner), body.subarray(4, 8)])).digest('hex');
        return this.send('p', Buffer.from(`md5${outer}\0`));
      }
      if (code === 10) {
        const mechanisms = saslMechanisms(body.subarray(4));
        if (!mechanisms.includes(SCRAM_SHA_256)) return fail(new PgError(`unsupported SASL mechanisms: ${mechanisms.join(', ')}`, '28000'));
        scram = new ScramClient(options.password);
        return this.send('p', scram.initialResponseMessage());
      }
      if (code === 11 && scram !== undefined) {
        try {
          return this.send('p', scram.responseMessage(body.subarray(4)));
        } catch (error) {
          if (!(error instanceof SqlError)) throw error;
          return fail(new PgError(`SCRAM: ${error.message}`, error.code, error.detail));
        }
      }
      if (code === 12 && scram !== undefined) {
        if (!scram.verifyServerFinal(body.subarray(4).toString('utf8'))) return fail(new PgError('SCRAM: the server signature does not match', '08P01'));
        return;
      }
      fail(new PgError(`unsupported authentication request ${code}`, '28000'));
    });
  }

  /** A simple query; each data row goes to `onRow` as text values (null for NULL). */
  queryEach(sql: string, onRow: (values: (string | null)[]) => void): Promise<string[]> {
    this.send('Q', Buffer.from(`${sql}\0`, 'utf8'));
    let columns: string[] = [];
    let error: PgError | undefined;
    return this.exchange<string[]>((type, body, done, fail) => {
      if (type === 0x54) columns = rowDescription(body);
      else if (type === 0x44) {
        if (error === undefined) onRow(dataRow(body));
      } else if (type === 0x45) error = errorOf(body);
      else if (type === 0x5a) {
        if (error !== undefined) fail(error);
        else done(columns);
      }
    });
  }

  async query(sql: string): Promise<QueryRows> {
    const rows: (string | null)[][] = [];
    const columns = await this.queryEach(sql, (values) => rows.push(values));
    return { columns, rows };
  }

  /**
   * Sends a statement that enters CopyBoth (START_REPLICATION); resolves once the server answered
   * with CopyBothResponse, after which every CopyData payload goes to `onData` and the end of the
   * stream (CopyDone, an error, a lost connection) to `onEnd`.
   */
  startCopyBoth(sql: string, onData: (payload: Buffer) => void, onEnd: (error: PgError | undefined) => void): Promise<void> {
    this.send('Q', Buffer.from(`${sql}\0`, 'utf8'));
    return this.exchange<void>((type, body, done, fail) => {
      if (type === 0x45) return fail(errorOf(body));
      if (type !== 0x57) return;
      // The stream's liveness is the reader's (keepalives), not a query deadline.
      done();
      this.failWaiter = (error) => onEnd(error);
      this.handler = (kind, payload) => {
        if (kind === 0x64) onData(payload);
        else if (kind === 0x45) onEnd(errorOf(payload));
        else if (kind === 0x63) onEnd(undefined);
      };
    });
  }

  /** CopyData from the client (a Standby Status Update). */
  sendCopyData(payload: Buffer): void {
    this.send('d', payload);
  }

  /** Whether reading is paused (pause(true)). */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Pauses or resumes reading from the socket (backpressure of the replication stream). */
  pause(paused: boolean): void {
    this.paused = paused;
    if (paused) this.socket.pause();
    else {
      this.socket.resume();
      // The time paused (oxbow applying what arrived) is not the server's silence.
      this.lastReceivedAt = Date.now();
      this.armWatchdog();
    }
  }

  close(): void {
    if (!this.closed) {
      try {
        this.send('X', Buffer.alloc(0));
      } catch {
        // already gone
      }
    }
    // Whoever waits on the connection (a query, the replication stream) hears of the close.
    this.fail(new PgError('connection to PostgreSQL closed', '08006'));
    this.socket.destroy();
  }
}

function rowDescription(body: Buffer): string[] {
  const count = body.readInt16BE(0);
  const names: string[] = [];
  let at = 2;
  for (let i = 0; i < count; i++) {
    const end = body.indexOf(0, at);
    names.push(body.toString('utf8', at, end));
    at = end + 1 + 18;
  }
  return names;
}

function dataRow(body: Buffer): (string | null)[] {
  const count = body.readInt16BE(0);
  const values: (string | null)[] = new Array(count);
  let at = 2;
  for (let i = 0; i < count; i++) {
    const length = body.readInt32BE(at);
    at += 4;
    if (length < 0) values[i] = null;
    else {
      values[i] = body.toString('utf8', at, at + length);
      at += length;
    }
  }
  return values;
}

function errorOf(body: Buffer): PgError {
  const fields = new Map<string, string>();
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const code = String.fromCharCode(body[at]!);
    const end = body.indexOf(0, at + 1);
    fields.set(code, body.toString('utf8', at + 1, end));
    at = end + 1;
  }
  return new PgError(fields.get('M') ?? 'PostgreSQL error', fields.get('C') ?? 'XX000', fields.get('D'));
}

/** A PostgreSQL string literal. */
export function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** A PostgreSQL identifier, always quoted. */
export function quoteIdent(text: string): string {
  return `"${text.replace(/"/g, '""')}"`;
}

/** An LSN as PostgreSQL prints it (`16/B374D848`). */
export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

export function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}
