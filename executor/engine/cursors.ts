// SQL cursors: DECLARE name [BINARY] [NO SCROLL] CURSOR [WITH HOLD] FOR query, FETCH, MOVE, CLOSE.
//
// A cursor reads one snapshot: its query runs at DECLARE against the epoch committed then (as any
// oxbow query reads its statement's snapshot) and FETCH hands its rows out in order, so later
// writes, the block's own included, never show through (PostgreSQL's cursor sees the snapshot of
// its DECLARE too). The rows are held in memory for the cursor's life. A cursor without WITH HOLD
// needs a transaction block (25P01 otherwise, as PostgreSQL) and ends with it; a WITH HOLD cursor
// outlives the block's COMMIT and is closed by its ROLLBACK. Only forward fetching is done:
// FETCH / MOVE [FORWARD] [n | ALL] | NEXT; BACKWARD, PRIOR, FIRST, LAST, ABSOLUTE and RELATIVE are
// 0A000. A BINARY cursor's rows go out in binary format (the result's `binary` flag).
//
// A cursor over a subscription (`DECLARE c CURSOR FOR SUBSCRIBE ...`, `DECLARE c SUBSCRIPTION
// CURSOR FOR s`: subscribe-cursors.ts) holds a `CursorStream` instead of rows: each FETCH reads what
// it returns from the stream, waiting as `FETCH ... WITH (timeout = '1s')` or the stream's default
// says, and CLOSE (or the cursor's end with its block or session) closes the stream. Such a cursor
// is never rewound: MOVE on it is 0A000.

import type { Node } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import { parseValue } from '../../sql/functions.js';
import type { OxbowDeclareSubscribe, OxbowDeclareSubscriptionCursor } from '../../sql/parser/ast.js';
import { type } from '../../sql/types.js';
import type { Interval } from '../../sql/value.js';
import type { Row } from '../../sql/value.js';
import type { ColumnDescription, ExecuteResult } from './engine.js';

/** The cursor options bits of DeclareCursorStmt (PostgreSQL's parsenodes.h). */
const CURSOR_OPT_BINARY = 0x1;
const CURSOR_OPT_SCROLL = 0x2;
const CURSOR_OPT_HOLD = 0x20;
/** FETCH ALL: the grammar's FETCH_ALL as the parser hands it. */
const FETCH_ALL = 2147483647;

export interface DeclareCursor {
  readonly name: string;
  readonly binary: boolean;
  readonly hold: boolean;
  readonly scroll: boolean;
  readonly query: Node;
}

export interface FetchCursor {
  readonly name: string;
  readonly count: number;
  readonly move: boolean;
  /** `WITH (timeout = ...)` in milliseconds; undefined without it (the stream's default wait). */
  readonly timeoutMs?: number;
}

/** The rows of a cursor that are read as they are fetched (a subscription's changes). */
export interface CursorStream {
  readonly columns: readonly ColumnDescription[];
  /** The wait of a FETCH without a timeout: Infinity (until a row is ready) or 0 (what is ready now). */
  readonly defaultTimeoutMs: number;
  /** Up to `count` rows: waits up to `timeoutMs` for the first one, then takes what is ready; `signal` cancels the wait. */
  fetch(count: number, timeoutMs: number, signal: AbortSignal): Promise<Row[]>;
  close(): void;
}

/** DECLARE of a cursor over a stream: its name and WITH HOLD (a subscription cursor, RisingWave's, lives until CLOSE or the session's end). */
export interface DeclareStream {
  readonly name: string;
  readonly hold: boolean;
}

function declareStreamOf(node: Node): DeclareStream {
  const oxbow = node as unknown as { OxbowDeclareSubscribe?: OxbowDeclareSubscribe; OxbowDeclareSubscriptionCursor?: OxbowDeclareSubscriptionCursor };
  if (oxbow.OxbowDeclareSubscribe !== undefined) return { name: oxbow.OxbowDeclareSubscribe.name, hold: oxbow.OxbowDeclareSubscribe.hold };
  return { name: oxbow.OxbowDeclareSubscriptionCursor!.name, hold: true };
}

interface SqlCursor {
  readonly name: string;
  readonly columns: readonly ColumnDescription[];
  readonly rows: Row[];
  position: number;
  readonly binary: boolean;
  readonly hold: boolean;
  /** Declared in the open block: a rollback of the block closes it even WITH HOLD. */
  inBlock: boolean;
  readonly statement: string;
  readonly createdMillis: number;
  readonly stream?: CursorStream;
}

/** The parse tree of DECLARE as cursor options. */
export function declareOf(node: Node): DeclareCursor {
  const body = (node as { DeclareCursorStmt: { portalname: string; options?: number; query: Node } }).DeclareCursorStmt;
  const options = body.options ?? 0;
  return { name: body.portalname, binary: (options & CURSOR_OPT_BINARY) !== 0, hold: (options & CURSOR_OPT_HOLD) !== 0, scroll: (options & CURSOR_OPT_SCROLL) !== 0, query: body.query };
}

/** The parse tree of FETCH / MOVE; 0A000 for a direction other than forward. */
export function fetchOf(node: Node): FetchCursor {
  const body = (node as { FetchStmt: { direction?: string; howMany?: number; portalname: string; ismove?: boolean } }).FetchStmt;
  const direction = body.direction ?? 'FETCH_FORWARD';
  const words = body.ismove === true ? 'MOVE' : 'FETCH';
  if (direction !== 'FETCH_FORWARD') {
    throw new SqlError(SqlState.featureNotSupported, `${words} ${direction.slice('FETCH_'.length)} is not supported: oxbow's cursors fetch forward only`);
  }
  const howMany = body.howMany ?? 0;
  const timeoutMs = fetchTimeoutMs((body as { oxbowOptions?: Readonly<Record<string, string>> }).oxbowOptions);
  return { name: body.portalname, count: howMany >= FETCH_ALL ? Infinity : howMany, move: body.ismove === true, ...(timeoutMs === undefined ? {} : { timeoutMs }) };
}

/** FETCH's `WITH (timeout = '1s')`: an interval (or whole seconds) in milliseconds; 22023 for anything else. */
function fetchTimeoutMs(options: Readonly<Record<string, string>> | undefined): number | undefined {
  if (options === undefined) return undefined;
  let timeoutMs: number | undefined;
  for (const [name, value] of Object.entries(options)) {
    if (name !== 'timeout') throw new SqlError(SqlState.invalidParameterValue, `unrecognized FETCH option "${name}"`, { hint: "FETCH takes WITH (timeout = '1s')." });
    let millis = Number.NaN;
    try {
      if (/^\d+(\.\d+)?$/.test(value.trim())) millis = Number(value) * 1000;
      else {
        const interval = parseValue(value, type('interval')) as Interval;
        millis = (interval.months * 30 + interval.days) * 86_400_000 + interval.micros / 1000;
      }
    } catch {
      // reported below
    }
    if (!Number.isFinite(millis) || millis < 0) {
      throw new SqlError(SqlState.invalidParameterValue, `invalid FETCH timeout "${value}"`, { hint: "Give an interval that is not negative, such as '1s' or '500ms'." });
    }
    timeoutMs = millis;
  }
  return timeoutMs;
}

/** The portal name of CLOSE (undefined: CLOSE ALL). */
export function closeOf(node: Node): string | undefined {
  return (node as { ClosePortalStmt: { portalname?: string } }).ClosePortalStmt.portalname;
}

/** One session's SQL cursors. */
export class SqlCursors {
  private readonly cursors = new Map<string, SqlCursor>();

  /** 42P03 when the name is taken. */
  checkFree(name: string): void {
    if (this.cursors.has(name)) throw new SqlError(SqlState.duplicateCursor, `cursor "${name}" already exists`);
  }

  declare(declared: DeclareCursor, columns: readonly ColumnDescription[], rows: Row[], statement: string, inBlock: boolean): void {
    this.checkFree(declared.name);
    this.cursors.set(declared.name, { name: declared.name, columns, rows, position: 0, binary: declared.binary, hold: declared.hold, inBlock, statement, createdMillis: Date.now() });
  }

  /** A cursor whose rows are fetched from `stream` (closed when the cursor is). */
  declareStream(declared: DeclareStream, stream: CursorStream, statement: string, inBlock: boolean): void {
    this.checkFree(declared.name);
    this.cursors.set(declared.name, { name: declared.name, columns: stream.columns, rows: [], position: 0, binary: false, hold: declared.hold, inBlock, statement, createdMillis: Date.now(), stream });
  }

  /** The stream of a cursor over one (undefined for a cursor of rows); 34000 when the name is unknown. */
  streamOf(name: string): CursorStream | undefined {
    return this.cursor(name).stream;
  }

  private drop(cursor: SqlCursor): void {
    this.cursors.delete(cursor.name);
    cursor.stream?.close();
  }

  private cursor(name: string): SqlCursor {
    const cursor = this.cursors.get(name);
    if (cursor === undefined) throw new SqlError(SqlState.invalidCursorName, `cursor "${name}" does not exist`);
    return cursor;
  }

  /** The result columns of a cursor (FETCH's, Describe of its portal), or undefined for an unknown name. */
  describe(name: string): { readonly columns: readonly ColumnDescription[]; readonly binary: boolean } | undefined {
    const cursor = this.cursors.get(name);
    return cursor === undefined ? undefined : { columns: cursor.columns, binary: cursor.binary };
  }

  /** FETCH (the rows) or MOVE (the rows skipped, not returned). */
  fetch(fetch: FetchCursor): { readonly columns: readonly ColumnDescription[]; readonly rows: Row[]; readonly binary: boolean } {
    const cursor = this.cursor(fetch.name);
    const end = Math.min(cursor.rows.length, cursor.position + fetch.count);
    const rows = cursor.rows.slice(cursor.position, end);
    cursor.position = end;
    return { columns: cursor.columns, rows, binary: cursor.binary };
  }

  /** CLOSE name (34000 when unknown) or CLOSE ALL (undefined). */
  close(name: string | undefined): void {
    if (name === undefined) for (const cursor of [...this.cursors.values()]) this.drop(cursor);
    else this.drop(this.cursor(name));
  }

  names(): ReadonlySet<string> {
    return new Set(this.cursors.keys());
  }

  /** ROLLBACK TO SAVEPOINT: the cursors declared since the savepoint are closed. */
  closeExcept(names: ReadonlySet<string>): void {
    for (const cursor of [...this.cursors.values()]) if (!names.has(cursor.name)) this.drop(cursor);
  }

  /** The transaction block (or the statement outside one) ended: cursors without HOLD close; a rollback closes the block's HOLD ones too. */
  transactionEnded(commit: boolean): void {
    for (const cursor of [...this.cursors.values()]) {
      if (!cursor.hold || (!commit && cursor.inBlock)) this.drop(cursor);
      else cursor.inBlock = false;
    }
  }

  /** pg_cursors rows: name, statement, is_holdable, is_binary, is_scrollable, creation_time (ms). */
  list(): { name: string; statement: string; hold: boolean; binary: boolean; createdMillis: number }[] {
    return [...this.cursors.values()].map((cursor) => ({ name: cursor.name, statement: cursor.statement, hold: cursor.hold, binary: cursor.binary, createdMillis: cursor.createdMillis }));
  }

  get size(): number {
    return this.cursors.size;
  }
}

/** What a cursor statement needs from the session. */
export interface CursorHost {
  readonly cursors: SqlCursors;
  /** The statement runs in a transaction block (explicit, or a multi-statement Query's). */
  readonly inBlock: boolean;
  /** Plans and runs DECLARE's query with the statement's parameters; undefined when it is not a query. */
  run(query: Node): Promise<{ readonly columns: readonly ColumnDescription[]; readonly rows: Row[] } | undefined>;
  rowsResult(columns: readonly ColumnDescription[], rows: Row[], commandTag: () => string): ExecuteResult;
  /** Opens the stream of DECLARE ... CURSOR FOR SUBSCRIBE / DECLARE ... SUBSCRIPTION CURSOR (subscribe-cursors.ts). */
  openStream(node: Node): Promise<CursorStream>;
  /** The FETCH's own signal: a CancelRequest or statement_timeout ends its wait. */
  readonly signal: AbortSignal;
}

/** FETCH's result columns while preparing it (the cursor's, once DECLARE ran); null for MOVE and CLOSE. */
export function fetchColumns(node: Node, cursors: SqlCursors): readonly ColumnDescription[] | null {
  const fetch = (node as { FetchStmt?: { portalname: string; ismove?: boolean } }).FetchStmt;
  if (fetch === undefined || fetch.ismove === true) return null;
  return cursors.describe(fetch.portalname)?.columns ?? null;
}

/** DECLARE / FETCH / MOVE / CLOSE. */
export async function cursorStatement(node: Node, text: string, host: CursorHost): Promise<ExecuteResult> {
  if ('DeclareCursorStmt' in node) {
    const declared = declareOf(node);
    if (!declared.hold && !host.inBlock) throw new SqlError(SqlState.noActiveSqlTransaction, 'DECLARE CURSOR can only be used in transaction blocks');
    host.cursors.checkFree(declared.name);
    const result = await host.run(declared.query);
    if (result === undefined) throw new SqlError(SqlState.featureNotSupported, 'DECLARE CURSOR takes a query: a cursor over INSERT, UPDATE or DELETE is not supported');
    host.cursors.declare(declared, result.columns, result.rows, text, host.inBlock);
    return { kind: 'command', commandTag: 'DECLARE CURSOR' };
  }
  if ('OxbowDeclareSubscribe' in node || 'OxbowDeclareSubscriptionCursor' in node) {
    const declared = declareStreamOf(node);
    if (!declared.hold && !host.inBlock) {
      throw new SqlError(SqlState.noActiveSqlTransaction, 'DECLARE CURSOR can only be used in transaction blocks', { hint: 'Run it after BEGIN, or use DECLARE ... SUBSCRIPTION CURSOR, which needs no block.' });
    }
    host.cursors.checkFree(declared.name);
    host.cursors.declareStream(declared, await host.openStream(node), text, host.inBlock);
    return { kind: 'command', commandTag: 'DECLARE CURSOR' };
  }
  if ('ClosePortalStmt' in node) {
    const name = closeOf(node);
    host.cursors.close(name);
    return { kind: 'command', commandTag: name === undefined ? 'CLOSE CURSOR ALL' : 'CLOSE CURSOR' };
  }
  const fetch = fetchOf(node);
  const stream = host.cursors.streamOf(fetch.name);
  if (stream !== undefined) {
    if (fetch.move) throw new SqlError(SqlState.featureNotSupported, `MOVE is not supported on cursor "${fetch.name}": a cursor over a subscription is read with FETCH`);
    const rows = await stream.fetch(fetch.count, fetch.timeoutMs ?? stream.defaultTimeoutMs, host.signal);
    return host.rowsResult(stream.columns, rows, () => `FETCH ${rows.length}`);
  }
  const fetched = host.cursors.fetch(fetch);
  if (fetch.move) return { kind: 'command', commandTag: `MOVE ${fetched.rows.length}` };
  const result = host.rowsResult(fetched.columns, fetched.rows, () => `FETCH ${fetched.rows.length}`);
  return fetched.binary && result.kind === 'rows' ? { ...result, binary: true } : result;
}
