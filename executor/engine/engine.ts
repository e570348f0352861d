// The engine facade: the only surface pgwire/ talks to. It is protocol-neutral: statements go in
// as SQL text plus typed parameter values, results come out as column descriptions, rows of SQL
// values (sql/value.ts) and command tags. Text and binary wire formats are pgwire's business.
//
// One Engine per server process; one Session per client connection.

import type { DataType } from '../../sql/types.js';
import type { Row, Value } from '../../sql/value.js';
import type { SqlError } from '../../sql/errors.js';
import type { ColumnDescription, Notice } from '../catalog/results.js';
import type { ConnectionSsl } from '../system/ssl-functions.js';

export type { ColumnDescription, ConnectionSsl, Notice };

export interface StartupParameters {
  readonly user: string;
  readonly database: string;
  /** Every other startup parameter (application_name, client_encoding, DateStyle, options...). */
  readonly options: Readonly<Record<string, string>>;
  /** The client's address and port (pg_stat_activity); absent for a Unix socket or in-process use. */
  readonly clientAddress?: string;
  readonly clientPort?: number;
  /** The connection's TLS (pg_stat_ssl, ssl_is_used()); absent for a plaintext connection. */
  readonly ssl?: ConnectionSsl;
}

/** A parsed and planned statement, reusable (extended protocol Parse, or one statement of a simple query). */
export interface PreparedStatement {
  readonly sql: string;
  /** Parameter types, after inference; pgwire reports these in ParameterDescription. */
  readonly parameterTypes: readonly DataType[];
  /** Result columns, or null when the statement returns no rows (NoData). */
  readonly columns: readonly ColumnDescription[] | null;
}

/** What executing a statement produced. */
export type ExecuteResult =
  | {
      readonly kind: 'rows';
      readonly columns: readonly ColumnDescription[];
      /** Rows in order. The executor may produce them lazily; pgwire pulls with next(maxRows). */
      readonly cursor: RowCursor;
      /** Command tag once all rows are read, e.g. `SELECT 3` or `INSERT 0 3` (with RETURNING). */
      commandTag(rowCount: number): string;
      /** FETCH from a BINARY cursor: the simple protocol sends these rows in binary format. */
      readonly binary?: boolean;
    }
  | { readonly kind: 'command'; readonly commandTag: string }
  | { readonly kind: 'empty' }
  | {
      readonly kind: 'copyIn';
      readonly format: 'text' | 'csv' | 'binary';
      readonly columnCount: number;
      /** Feeds one CopyData payload. May throw a SqlError (bad row); pgwire then fails the COPY. */
      write(chunk: Uint8Array): void;
      /** The listed columns' types: a binary COPY's fields are decoded by pgwire with these. */
      readonly columnTypes?: readonly DataType[];
      /** Binary format: rows of the listed columns' values, decoded by pgwire (write() is not called). */
      writeRows?(rows: readonly Row[]): void;
      /** CopyDone: applies the rows atomically and returns the command tag (`COPY n`). */
      end(): Promise<string>;
      /** CopyFail or connection loss: nothing is applied. */
      abort(reason: string): void;
    }
  | {
      readonly kind: 'copyOut';
      readonly format: 'text' | 'csv' | 'binary';
      readonly columnCount: number;
      /**
       * Each item is one CopyData payload (one row in text/csv). An empty item is not sent: it
       * asks pgwire to send what it holds and wait while the client lags (SUBSCRIBE, which never
       * ends by itself, yields one after each round of changes).
       */
      readonly data: AsyncIterable<Uint8Array>;
      /** Command tag after the data is exhausted (`COPY n`). */
      commandTag(): string;
    };

export interface RowCursor {
  /** Up to `maxRows` rows (all when 0); an empty array means the end. */
  next(maxRows: number): Promise<Row[]>;
  /** Releases resources when a portal is closed before the end. */
  close(): void;
}

export interface ExecuteOptions {
  /** Result formats are pgwire's; the engine only needs the values. */
  readonly parameters: readonly Value[];
}

export type TransactionStatus = 'idle' | 'inTransaction' | 'failed';

export interface SessionEvents {
  /** A NOTICE or WARNING for the client (backfill progress, `DROP ... IF EXISTS` notes). */
  notice(notice: Notice): void;
  /** A reported parameter changed (SET application_name, TimeZone, DateStyle...). */
  parameterStatus(name: string, value: string): void;
}

export interface Session {
  /** Process id and secret key for BackendKeyData and CancelRequest. */
  readonly processId: number;
  readonly secretKey: number;

  /** The parameters reported at startup in ParameterStatus, name to value. */
  reportedParameters(): ReadonlyMap<string, string>;

  /**
   * Splits and prepares every statement of a simple-query string. A syntax error anywhere fails
   * the whole string before anything runs (PostgreSQL's rule). Empty input returns [].
   */
  prepareMany(sql: string): PreparedStatement[];

  /**
   * Prepares one statement (extended protocol Parse). `parameterTypes` are the client's declared
   * types (undefined entries: to be inferred). More than one statement is a syntax error.
   */
  prepare(sql: string, parameterTypes: readonly (DataType | undefined)[]): PreparedStatement;

  /**
   * Executes a prepared statement. Throws SqlError. The executor enforces statement_timeout and
   * observes cancel(). Statements of one session run one at a time.
   */
  execute(statement: PreparedStatement, options: ExecuteOptions): Promise<ExecuteResult>;

  /** CancelRequest: aborts the running statement with 57014, if any. */
  cancel(): void;

  /** BEGIN/COMMIT/ROLLBACK state, for ReadyForQuery. */
  transactionStatus(): TransactionStatus;

  /**
   * Simple-query rule: when a statement fails inside an implicit multi-statement transaction, the
   * session is told so it can mark an explicit transaction failed.
   */
  statementFailed(error: SqlError): void;

  /**
   * Optional: a simple Query message with this many statements begins. With more than one, its
   * statements outside an explicit block run as one implicit transaction (PostgreSQL's rule), which
   * endMessage() commits, or rolls back when a statement failed (settings and written rows).
   */
  beginMessage?(statementCount: number): void;
  /** Optional: the Query message ended; `failed` when one of its statements failed. */
  endMessage?(failed: boolean): Promise<void>;
  /**
   * Optional: extended-protocol Executes follow that may share one transaction (more than one
   * Execute before a Sync): their statements outside an explicit block run as one implicit
   * transaction, which endPipeline() (at Sync) commits, or rolls back when a message failed.
   */
  beginPipeline?(): void;
  /** Optional: Sync; `failed` when a message since the last Sync failed. */
  endPipeline?(failed: boolean): Promise<void>;
  /**
   * Optional: Bind (and Describe) of a prepared statement: re-plans it when the catalog or the
   * search path changed since it was planned; 0A000 when its result columns would change.
   */
  revalidate?(statement: PreparedStatement): void;

  /**
   * Optional: the result columns of a SQL cursor (DECLARE), for a Describe of the portal of that
   * name (PostgreSQL's cursors are portals; psycopg's server-side cursors describe them).
   */
  describeCursor?(name: string): { readonly columns: readonly ColumnDescription[]; readonly binary: boolean } | undefined;

  /** A session setting's current value (statement_timeout, DateStyle...), for pgwire's own use. */
  setting(name: string): string | undefined;

  /** Optional: the name a reg* OID prints as (EvalContext.objectName), for pgwire's result text. */
  objectName?(type: 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'regprocedure', oid: number): string | undefined;
  /** Optional: the OID a reg* text names (EvalContext.objectOid), for pgwire's text Bind parameters. */
  objectOid?(type: 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'regprocedure', text: string): number;

  /** The client is gone: cancels the running statement and rolls back an open block (resolves once done). */
  close(): void | Promise<void>;

  /**
   * Optional: a cluster standby's session that forwards writes (executor/engine/read-only.ts):
   * where a simple Query's text (or an extended-protocol Parse's) must run instead of here, when
   * one of its statements writes or begins a read-write block; undefined to run it here. A syntax
   * error is undefined too (running it here reports it as the leader would).
   */
  forwardTo?(sql: string): WriteForwarding | undefined;
}

/** How a standby's session reaches the leader for the statements it forwards (pgwire/forward.ts). */
export interface WriteForwarding {
  /** The leader's client address, `host:port` (`[v6]:port`); undefined while none is known (an election). */
  leaderAddress(): string | undefined;
  /** The password proving this node to the leader as `user` (derived from the cluster's node-to-node key). */
  peerPassword(user: string): string;
  /** How long to keep trying to reach a leader before 57P03. */
  readonly timeoutMs: number;
  /** The settings the session SET here (name, value), set again on the leader connection when it opens. */
  sessionSettings(): readonly (readonly [string, string])[];
}

/** What authentication needs to know of a role named in a startup packet. */
export interface LoginRole {
  /** The role's SCRAM-SHA-256 verifier text (`SCRAM-SHA-256$4096:salt$StoredKey:ServerKey`), if it has a password. */
  readonly password?: string;
}

export interface Engine {
  /**
   * Optional: the role a startup packet names, before authentication (undefined: no such role).
   * Without it every user is authenticated by the server's own settings alone.
   */
  loginRole?(user: string): LoginRole | undefined;
  /**
   * Opens a session; throws SqlError (28000 for an unknown role or one that cannot log in, 3D000
   * for an unknown database).
   */
  openSession(parameters: StartupParameters, events: SessionEvents): Session;
  /**
   * Optional: the SCRAM-SHA-256 verifier text a peer node proves when it forwards a session of
   * `user` (a cluster's nodes, pgwire/forward.ts); undefined: this engine accepts no forwarded sessions.
   */
  peerVerifier?(user: string): string | undefined;
  /** The session of a BackendKeyData pair, for CancelRequest. */
  findSession(processId: number, secretKey: number): Session | undefined;
  /** Flushes and closes storage; called once on shutdown. */
  close(): Promise<void>;
  /** While close() runs, what it waits for (the CLI names it when a shutdown passes its bound). */
  readonly closingStep?: string;
}
