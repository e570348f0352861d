// One client connection, from the first byte to the close: the startup packet (SSLRequest
// answered 'S' and the socket upgraded to TLS when the server has a certificate (tls.ts), else
// 'N'; GSSENCRequest answered 'N'; CancelRequest forwarded to the engine), authentication (trust, or
// SCRAM-SHA-256 when a password is configured), the session's ParameterStatus/BackendKeyData, and
// then the message loop that dispatches to the simple query, extended query and COPY handlers.
//
// Messages are processed strictly one at a time in arrival order (pipelined clients send many
// ahead); incoming frames queue up and the socket is paused while the queue is long. Output is
// buffered in one MessageWriter and written at ReadyForQuery, Flush, or when it grows large.
//
// Errors: a SqlError from a handler becomes an ErrorResponse (and, in the extended protocol,
// everything up to Sync is skipped); a FATAL one (bad framing, unknown message type, failed
// authentication, limits) is sent and the connection closed. Nothing a client sends can throw out
// of this class: the server keeps serving everyone else.

import type { Socket } from 'node:net';
import type { Engine, Notice, Session, SessionEvents, WriteForwarding } from '../executor/engine/engine.js';
import { SqlError, SqlState, toSqlError, type SqlStateCode } from '../sql/errors.js';
import type { EvalContext } from '../sql/functions.js';
import { writeAuthenticationOk } from './backend/authentication.js';
import { authenticate, FORWARDED_AUTH_PARAMETER, type AuthenticatedBy } from './auth.js';
import { LeaderLink, type ForwardedStartup } from './forward.js';
import { readParse } from './frontend/parse.js';
import { writeBackendKeyData } from './backend/backend-key-data.js';
import { writeErrorResponse, writeNoticeResponse, type ReportFields } from './backend/error-response.js';
import { writeNegotiateProtocolVersion } from './backend/negotiate-protocol-version.js';
import { writeParameterStatus } from './backend/parameter-status.js';
import { writeReadyForQuery } from './backend/ready-for-query.js';
import { ExtendedQuery } from './extended-query.js';
import { FrameError, MessageFramer, type Frame } from './framer.js';
import { readQuery } from './frontend/query.js';
import { SynchronizationLost, synchronizationLostFatal } from './results.js';
import { readStartupPacket } from './frontend/startup.js';
import { MessageWriter } from './message-writer.js';
import type { ScramVerifier } from './scram.js';
import { settingDurationMs } from './setting-duration.js';
import { simpleQuery } from './simple-query.js';
import { evalContextOf } from './value-codec.js';
import { ConnectionClosed, type Wire } from './wire.js';
import { asBytes } from './node-buffer.js';
import { connectionSsl, plaintextRefused, repeatedSslRequest, startTls, unencryptedDataAfterSslRequest, type TlsSettings } from './tls.js';

/** Output is written to the socket once the buffer passes this size, even mid-result. */
const FLUSH_THRESHOLD_BYTES = 256 * 1024;
/** Frames queued beyond this pause reading from the socket (pipelining and COPY back-pressure). */
const MAX_QUEUED_FRAMES = 256;
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;

const IDLE_SESSION_TIMEOUT = '57P05' as SqlStateCode;
const IDLE_IN_TRANSACTION_TIMEOUT = '25P03' as SqlStateCode;

export interface ConnectionSettings {
  readonly engine: Engine;
  /** Set when a password is configured: SCRAM-SHA-256 for user `oxbow`. */
  readonly verifier: ScramVerifier | undefined;
  readonly maxMessageBytes: number;
  /** Startup and authentication must finish within this time (PostgreSQL's authentication_timeout). */
  readonly authenticationTimeoutMs: number;
  /** The user that may log in with the password. */
  readonly user: string;
  /** Set when the server has a certificate: SSLRequest is answered 'S' (tls.ts). */
  readonly tls?: TlsSettings | undefined;
}

export class Connection implements Wire {
  readonly writer = new MessageWriter();
  private readonly framer: MessageFramer;
  private readonly queue: Frame[] = [];
  private queuedBytes = 0;
  private waiter: { resolve: (frame: Frame) => void; reject: (error: Error) => void } | undefined;
  private closed = false;
  private paused = false;
  private sessionOrUndefined: Session | undefined;
  private extended: ExtendedQuery | undefined;
  private skipUntilSync = false;
  /** Who the client is, for a connection to the leader (forward.ts). */
  private forwardedStartup: ForwardedStartup | undefined;
  /** The session runs on the leader (a standby forwarding writes): every message is relayed. */
  private link: LeaderLink | undefined;
  /** Reported settings changed since the last ReadyForQuery, sent just before the next one. */
  private readonly changedParameters = new Map<string, string>();
  private running = false;
  /** The TCP socket, or the TLS socket over it once an SSLRequest was accepted. */
  private socket: Socket;
  private encrypted = false;

  constructor(
    socket: Socket,
    private readonly settings: ConnectionSettings,
    /** False when the server is at max connections: the client gets 53300 after its startup packet. */
    private readonly admitted: boolean,
    private readonly onClosed: (connection: Connection) => void,
  ) {
    this.framer = new MessageFramer(settings.maxMessageBytes);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 60_000);
    this.socket = socket;
    this.listen(socket);
  }

  private readonly onData = (chunk: Buffer): void => this.receive(chunk);
  private readonly onEnded = (): void => this.handleClose();

  private listen(socket: Socket): void {
    socket.on('data', this.onData);
    socket.on('error', this.onEnded);
    socket.on('close', this.onEnded);
  }

  get session(): Session {
    if (this.sessionOrUndefined === undefined) throw new Error('oxbow internal assertion: no session yet');
    return this.sessionOrUndefined;
  }

  /** Runs the connection to its end; never rejects. */
  async run(): Promise<void> {
    const timer = setTimeout(() => this.destroy(), this.settings.authenticationTimeoutMs);
    try {
      const started = await this.startup();
      clearTimeout(timer);
      if (!started) return;
      await this.messageLoop();
    } catch (error) {
      if (!(error instanceof ConnectionClosed)) this.fatal(error);
    } finally {
      clearTimeout(timer);
      this.destroy();
    }
  }

  /** Server shutdown: tells the client and closes. */
  terminate(): void {
    if (this.closed) return;
    this.sessionOrUndefined?.cancel();
    this.fatal(new SqlError(SqlState.adminShutdown, 'terminating connection due to administrator command', { severity: 'FATAL' }));
    this.destroy();
  }

  // ---- Wire

  flush(): void {
    if (this.closed || this.writer.length === 0) return;
    this.socket.write(asBytes(this.writer.take()));
  }

  async flushIfLarge(): Promise<void> {
    if (this.writer.length < FLUSH_THRESHOLD_BYTES) return;
    await this.flushAndDrain();
  }

  async flushAndDrain(): Promise<void> {
    if (this.closed) throw new ConnectionClosed(); // nobody reads: stop producing (and never wait for a drain that cannot come)
    this.flush();
    if (!this.socket.writableNeedDrain) return;
    await new Promise<void>((resolve, reject) => {
      const onDrain = (): void => {
        this.socket.off('close', onClose);
        resolve();
      };
      const onClose = (): void => {
        this.socket.off('drain', onDrain);
        reject(new ConnectionClosed());
      };
      this.socket.once('drain', onDrain);
      this.socket.once('close', onClose);
    });
  }

  nextFrame(timeoutMs = 0): Promise<Frame> {
    const frame = this.queue.shift();
    if (frame !== undefined) {
      this.queuedBytes -= frame.payload.length;
      if (this.paused && this.queue.length < MAX_QUEUED_FRAMES / 2 && this.queuedBytes < MAX_QUEUED_BYTES / 2) {
        this.paused = false;
        this.socket.resume();
      }
      return Promise.resolve(frame);
    }
    if (this.closed) return Promise.reject(new ConnectionClosed());
    return new Promise<Frame>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.waiter = undefined;
          reject(new IdleTimeout());
        }, timeoutMs);
      }
      this.waiter = {
        resolve: (next) => {
          clearTimeout(timer);
          resolve(next);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
    });
  }

  evalContext(): EvalContext {
    return evalContextOf(this.session);
  }

  syncBeforeNextExecute(): boolean {
    for (const frame of this.queue) {
      if (frame.type === 'S') return true;
      if (frame.type === 'E' || frame.type === 'Q') return false;
    }
    return false;
  }

  readyForQuery(): void {
    for (const [name, value] of this.changedParameters) writeParameterStatus(this.writer, name, value);
    this.changedParameters.clear();
    writeReadyForQuery(this.writer, this.session.transactionStatus());
  }

  writeError(error: unknown): SqlError {
    const sqlError = toSqlError(error);
    if (!(error instanceof SqlError)) console.error('oxbow: internal error while serving a client:', error);
    writeErrorResponse(this.writer, sqlError);
    return sqlError;
  }

  // ---- input

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    this.framer.push(chunk);
    try {
      for (;;) {
        const frame = this.framer.next();
        if (frame === undefined) break;
        if (this.waiter !== undefined) {
          const waiter = this.waiter;
          this.waiter = undefined;
          waiter.resolve(frame);
        } else {
          this.queue.push(frame);
          this.queuedBytes += frame.payload.length;
        }
      }
    } catch (error) {
      // Framing is lost: nothing after this point can be understood. Say why and close. (Never
      // rethrow: this runs in a socket event handler, where a throw would end the process.)
      this.sessionOrUndefined?.cancel();
      this.fatal(error instanceof FrameError ? error.error : error);
      this.destroy();
      return;
    }
    if (!this.paused && (this.queue.length >= MAX_QUEUED_FRAMES || this.queuedBytes >= MAX_QUEUED_BYTES)) {
      this.paused = true;
      this.socket.pause();
    }
  }

  private handleClose(): void {
    if (this.closed) return;
    this.closed = true;
    // A client that disconnects mid-query: stop its statement, nobody will read the answer.
    if (this.running) this.sessionOrUndefined?.cancel();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(new ConnectionClosed());
    this.extended?.closeAllPortals();
    this.link?.close();
    try {
      // The session rolls back an open block once its statement has stopped (it never rejects).
      void this.sessionOrUndefined?.close();
    } catch (error) {
      console.error('oxbow: error while closing a session:', error);
    }
    this.onClosed(this);
  }

  private destroy(): void {
    if (!this.closed) {
      this.flush();
      this.socket.end();
      this.socket.destroySoon();
      this.handleClose();
    }
  }

  /** Sends a FATAL error (whatever the error's own severity) and flushes it. */
  private fatal(error: unknown): void {
    if (this.closed) return;
    const sqlError = toSqlError(error);
    if (!(error instanceof SqlError)) console.error('oxbow: internal error on a connection:', error);
    writeErrorResponse(this.writer, { ...errorFields(sqlError), severity: 'FATAL' });
    this.flush();
  }

  // ---- startup and authentication

  /** Returns true when the session is open and ReadyForQuery was sent. */
  private async startup(): Promise<boolean> {
    let packet;
    for (;;) {
      packet = readStartupPacket((await this.nextFrame()).payload);
      if (packet.kind === 'ssl' && this.settings.tls !== undefined) {
        this.upgradeToTls(this.settings.tls);
        continue;
      }
      if (packet.kind === 'ssl' || packet.kind === 'gssenc') {
        // No TLS (no certificate) and no GSSAPI encryption: 'N', the client continues in the clear (or gives up).
        if (!this.closed) this.socket.write('N');
        continue;
      }
      if (packet.kind === 'cancel') {
        const target = this.settings.engine.findSession(packet.processId, packet.secretKey);
        if (target !== undefined) forwardedLinks.get(target)?.cancel();
        target?.cancel();
        return false;
      }
      break;
    }
    this.framer.endStartupPhase();
    if (!this.admitted) {
      throw new SqlError(SqlState.tooManyConnections, 'sorry, too many clients already', { severity: 'FATAL' });
    }
    const parameters = packet.parameters;
    const protocolOptions = [...parameters.keys()].filter((name) => name.startsWith('_pq_.'));
    if (packet.minorVersion > 0 || protocolOptions.length > 0) writeNegotiateProtocolVersion(this.writer, 0, protocolOptions);
    const user = parameters.get('user');
    if (user === undefined || user === '') {
      throw new SqlError(SqlState.invalidAuthorizationSpecification, 'no PostgreSQL user name specified in startup packet', { severity: 'FATAL' });
    }
    const database = parameters.get('database') || user;
    if (this.settings.tls?.required === true && !this.encrypted) {
      throw plaintextRefused({ host: this.socket.remoteAddress ?? 'local', user, database });
    }
    const authenticatedBy: AuthenticatedBy = await authenticate(this, user, this.settings, parameters.get(FORWARDED_AUTH_PARAMETER));
    // As PostgreSQL: AuthenticationOk comes first, then the session is set up (an unknown database
    // or setting is a FATAL error after it).
    writeAuthenticationOk(this.writer);
    const options: Record<string, string> = {};
    for (const [name, value] of parameters) {
      if (name !== 'user' && name !== 'database' && name !== FORWARDED_AUTH_PARAMETER && !name.startsWith('_pq_.')) options[name] = value;
    }
    this.forwardedStartup = { user, database, options, authenticatedBy };
    const events: SessionEvents = {
      notice: (notice) => this.notice(notice),
      parameterStatus: (name, value) => {
        this.changedParameters.set(name, value);
      },
    };
    let session: Session;
    try {
      const client = this.socket.remoteAddress === undefined ? {} : { clientAddress: this.socket.remoteAddress, ...(this.socket.remotePort === undefined ? {} : { clientPort: this.socket.remotePort }) };
      const ssl = connectionSsl(this.socket);
      session = this.settings.engine.openSession({ user, database, options, ...client, ...(ssl === undefined ? {} : { ssl }) }, events);
    } catch (error) {
      throw asFatal(error);
    }
    this.sessionOrUndefined = session;
    this.extended = new ExtendedQuery(this);
    // The full list now; changes announced while the session was opened are already in it.
    this.changedParameters.clear();
    for (const [name, value] of session.reportedParameters()) writeParameterStatus(this.writer, name, value);
    writeBackendKeyData(this.writer, session.processId, session.secretKey);
    writeReadyForQuery(this.writer, session.transactionStatus());
    this.flush();
    return true;
  }

  /**
   * SSLRequest with a certificate: 'S', then the TLS handshake on the same socket and the rest of
   * the startup encrypted. Bytes the client sent after the SSLRequest, before the 'S', were sent in
   * the clear: refused as PostgreSQL does. A handshake that fails (garbage instead of a ClientHello)
   * closes this connection only.
   */
  private upgradeToTls(tls: TlsSettings): void {
    if (this.closed) return;
    if (this.encrypted) throw repeatedSslRequest();
    if (this.queue.length > 0 || this.framer.bufferedBytes > 0) throw unencryptedDataAfterSslRequest();
    const raw = this.socket;
    raw.off('data', this.onData);
    raw.off('error', this.onEnded);
    raw.off('close', this.onEnded);
    this.socket = startTls(raw, tls);
    this.encrypted = true;
    this.listen(this.socket);
  }

  private notice(notice: Notice): void {
    if (this.closed) return;
    writeNoticeResponse(this.writer, { severity: notice.severity, code: notice.code, message: notice.message, detail: notice.detail, hint: notice.hint });
    // Messages are built synchronously and engine code never runs inside one, so the buffer only
    // holds whole messages here: sending now is safe and keeps progress notices of a long
    // statement timely.
    this.flush();
  }

  // ---- the message loop

  private async messageLoop(): Promise<void> {
    const extended = this.extended!;
    for (;;) {
      let frame: Frame;
      try {
        // A session relayed to the leader has the leader's timeouts.
        frame = await this.nextFrame(this.link === undefined ? this.idleTimeoutMs() : 0);
      } catch (error) {
        if (error instanceof IdleTimeout) throw this.idleTimeoutError();
        throw error;
      }
      if (this.link !== undefined) {
        if (frame.type === 'X') return;
        await this.link.send(frame);
        continue;
      }
      if (this.skipUntilSync && frame.type !== 'S' && frame.type !== 'X') continue;
      this.running = true;
      try {
        switch (frame.type) {
          case 'Q':
            // A Query ends the pipeline's transaction too (PostgreSQL commits at its end).
            extended.forgetUnnamed();
            extended.pipelineEnded();
            {
              const sql = readQuery(frame.payload);
              const route = this.session.forwardTo?.(sql);
              if (route !== undefined) {
                await this.startForwarding(route, frame, await extended.handOver());
                break;
              }
              await simpleQuery(this, sql);
            }
            // A transaction that ended in this Query (COMMIT, ROLLBACK) takes its portals with it.
            if (this.session.transactionStatus() === 'idle') extended.closeAllPortals();
            this.flush();
            break;
          case 'P': {
            const route = this.session.forwardTo?.(readParse(frame.payload).sql);
            if (route !== undefined) {
              await this.startForwarding(route, frame, await extended.handOver());
              break;
            }
            extended.parse(frame.payload);
            break;
          }
          case 'B':
            extended.bind(frame.payload);
            break;
          case 'D':
            extended.describe(frame.payload);
            break;
          case 'E':
            await extended.execute(frame.payload);
            break;
          case 'C':
            extended.close(frame.payload);
            break;
          case 'S': {
            const failed = this.skipUntilSync;
            this.skipUntilSync = false;
            await extended.sync(failed);
            this.flush();
            break;
          }
          case 'H':
            this.flush();
            break;
          case 'X':
            return;
          case 'd':
          case 'c':
          case 'f':
            // CopyData/CopyDone/CopyFail after a failed COPY: PostgreSQL accepts and ignores them.
            break;
          default:
            throw new SqlError(SqlState.protocolViolation, `invalid frontend message type ${frame.type.charCodeAt(0)}`, { severity: 'FATAL' });
        }
      } catch (error) {
        if (error instanceof ConnectionClosed) throw error;
        if (error instanceof SqlError && error.severity === 'FATAL') throw error;
        // An error in an extended-protocol message: report it, then skip to Sync.
        const sqlError = this.writeError(error);
        this.session.statementFailed(sqlError);
        if (error instanceof SynchronizationLost) throw synchronizationLostFatal();
        // A simple Query always ends with ReadyForQuery; an extended-protocol message skips to Sync.
        if (frame.type === 'Q') this.readyForQuery();
        else this.skipUntilSync = true;
        this.flush();
      } finally {
        this.running = false;
      }
      await this.flushIfLarge();
    }
  }

  /**
   * The session's first statement for the leader (forward.ts): opens the connection to the leader
   * and relays from then on, this message first. No leader reachable: the statement fails here
   * (57P03, or the leader's refusal) and the session stays on this node.
   */
  private async startForwarding(route: WriteForwarding, frame: Frame, namedParses: readonly Buffer[]): Promise<void> {
    this.flush();
    let link: LeaderLink;
    try {
      link = await LeaderLink.open(route, this.forwardedStartup!, namedParses);
    } catch (error) {
      if (this.closed) throw new ConnectionClosed();
      const sqlError = this.writeError(error);
      this.session.statementFailed(sqlError);
      if (frame.type === 'Q') this.readyForQuery();
      else this.skipUntilSync = true;
      this.flush();
      return;
    }
    if (this.closed) {
      link.close();
      throw new ConnectionClosed();
    }
    this.link = link;
    forwardedLinks.set(this.session, link);
    let draining = false;
    let leaderEnded = false;
    link.onMessage = (type, bytes) => {
      if (this.closed) return;
      // A FATAL error of the leader (its idle timeout, its shutdown) ends the session: relayed as the last word.
      if (type === 'E' && bytes.includes('SFATAL\0', 5, 'latin1')) leaderEnded = true;
      // A client slower than the leader: stop reading the leader until the client drains.
      if (!this.socket.write(asBytes(bytes)) && !draining) {
        draining = true;
        link.pause();
        this.socket.once('drain', () => {
          draining = false;
          link.resume();
        });
      }
    };
    link.onClose = (inFlight) => {
      if (this.closed) return;
      if (leaderEnded) {
        this.destroy();
        return;
      }
      this.fatal(
        new SqlError(
          SqlState.connectionFailure,
          inFlight
            ? `the connection to the leader at ${link.address} was lost while it ran a statement of this session; whether it was applied is unknown`
            : `the connection to the leader at ${link.address}, where this session ran, was lost`,
          { hint: 'Connect again: a new session forwards its writes to the current leader.' },
        ),
      );
      this.destroy();
    };
    await link.send(frame);
  }

  private idleTimeoutMs(): number {
    const session = this.session;
    const status = session.transactionStatus();
    if (status === 'idle') return settingDurationMs(session.setting('idle_session_timeout'));
    return settingDurationMs(session.setting('idle_in_transaction_session_timeout'));
  }

  private idleTimeoutError(): SqlError {
    if (this.session.transactionStatus() === 'idle') {
      return new SqlError(IDLE_SESSION_TIMEOUT, 'terminating connection due to idle-session timeout', { severity: 'FATAL' });
    }
    return new SqlError(IDLE_IN_TRANSACTION_TIMEOUT, 'terminating connection due to idle-in-transaction timeout', { severity: 'FATAL' });
  }
}

class IdleTimeout extends Error {}

/** The leader connections of sessions forwarded there, for a CancelRequest naming the session here. */
const forwardedLinks = new WeakMap<Session, LeaderLink>();

function errorFields(error: SqlError): ReportFields {
  return { severity: error.severity, code: error.code, message: error.message, detail: error.detail, hint: error.hint, position: error.position, context: error.context };
}

function asFatal(error: unknown): SqlError {
  const sqlError = toSqlError(error);
  return new SqlError(sqlError.code, sqlError.message, { detail: sqlError.detail, hint: sqlError.hint, context: sqlError.context, severity: 'FATAL', cause: error });
}
