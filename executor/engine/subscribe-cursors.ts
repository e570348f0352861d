// Cursors over a subscription, read a FETCH at a time, in the two forms users know:
//
//   BEGIN; DECLARE c CURSOR FOR SUBSCRIBE v [AS OF ...] [WITH (PROGRESS, SNAPSHOT = false)];
//   FETCH 100 c [WITH (timeout = '1s')]; ...; COMMIT;                           (Materialize)
//     Rows: oxbow_epoch, oxbow_diff[, oxbow_progressed], then the columns, as the COPY form's
//     lines. FETCH waits until at least one row is ready (for ever without a timeout; `timeout =
//     '0s'` takes what is ready now) and returns up to n rows. Needs a transaction block (25P01)
//     unless WITH HOLD; ends with the block, or CLOSE.
//
//   DECLARE c SUBSCRIPTION CURSOR FOR sub [SINCE now() | proctime() | begin() | unix_ms | FULL];
//   FETCH NEXT FROM c; FETCH n FROM c [WITH (timeout = '1s')]; CLOSE c;           (RisingWave)
//     Reads the relation a subscription (CREATE SUBSCRIPTION) follows. Rows: the relation's
//     columns, then `op` (varchar: Insert, Delete, UpdateDelete, UpdateInsert) and `rw_timestamp`
//     (bigint: the epoch's commit millisecond; NULL on FULL's snapshot rows). A -1 and a +1 of one
//     key in one epoch (the relation's primary key, when it is among the columns) read as an
//     UpdateDelete immediately followed by its UpdateInsert. Starts: SINCE now() (the default) the
//     changes after the DECLARE; begin() the oldest changes still kept; unix_ms the changes of the
//     epochs at or after that millisecond (72000 before the readable window); FULL the relation's
//     rows first, then the changes. FETCH takes what is ready now unless WITH (timeout) says how long
//     to wait for a first row. Needs no transaction block; lives until CLOSE or the session ends.
//
// Both read rounds from subscribe.ts's `SubscriptionReader` (the COPY form's reading): a cursor holds
// at most one round's rows between FETCHes, never the stream. A cancelled or timed-out wait loses
// nothing (the reader only waits between rounds). An error of the reader (42P01 when the relation or
// subscription is dropped, 72000 when the cursor fell behind the history kept) ends the cursor: each
// later FETCH repeats it until CLOSE.

import { SqlError, SqlState } from '../../sql/errors.js';
import { epochToMillis, type Epoch } from '../../sql/epoch.js';
import * as functions from '../../sql/functions.js';
import type { OxbowDeclareSubscribe, OxbowDeclareSubscriptionCursor, OxbowSubscribe, ParsedStatement } from '../../sql/parser/ast.js';
import type { RelationDef } from '../../sql/catalog.js';
import { type } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';
import type { CursorStream } from './cursors.js';
import type { ColumnDescription } from './engine.js';
import { openSubscription, type SubscribeHost, type SubscriptionReader, type SubscriptionRound, type SubscriptionStart } from './subscribe.js';

function column(name: string, typeName: 'int8' | 'bool' | 'varchar'): ColumnDescription {
  return { name, type: type(typeName), tableOid: 0, columnNumber: 0 };
}

/** A cursor's rows from a subscription's rounds; `toRows` turns one round into the cursor's rows. */
class SubscriptionStream implements CursorStream {
  private buffer: Row[] = [];
  private offset = 0;
  private failure: unknown;

  constructor(
    private readonly reader: SubscriptionReader,
    private readonly toRows: (round: SubscriptionRound) => Row[],
    readonly columns: readonly ColumnDescription[],
    readonly defaultTimeoutMs: number,
  ) {}

  async fetch(count: number, timeoutMs: number, signal: AbortSignal): Promise<Row[]> {
    if (this.failure !== undefined) throw this.failure;
    const deadline = timeoutMs === Infinity ? Infinity : Date.now() + timeoutMs;
    const rows: Row[] = [];
    /** Once a row is in hand: what was committed then bounds the rounds read (FETCH ALL ends under a steady stream of commits). */
    let readyAt: Epoch | undefined;
    try {
      for (;;) {
        while (this.offset < this.buffer.length && rows.length < count) rows.push(this.buffer[this.offset++]!);
        if (rows.length >= count) break;
        if (rows.length > 0) {
          readyAt ??= this.reader.committedEpoch;
          if (!this.reader.hasUnread(readyAt)) break;
        }
        const round = await this.reader.next(signal, rows.length > 0 ? 0 : deadline);
        if (round === undefined) break;
        this.buffer = this.toRows(round);
        this.offset = 0;
      }
    } catch (error) {
      // A cancelled wait (CancelRequest, statement_timeout) leaves the cursor as it was.
      if (!(signal.aborted && error === signal.reason)) this.failure = error;
      throw error;
    }
    return rows;
  }

  close(): void {
    this.reader.close();
    this.buffer = [];
  }
}

/** `DECLARE c CURSOR FOR SUBSCRIBE ...`: rows as the COPY form's lines (Materialize's). */
export async function declareSubscribeCursor(parsed: ParsedStatement, declared: OxbowDeclareSubscribe, host: SubscribeHost, signal: AbortSignal): Promise<CursorStream> {
  const opened = await openSubscription(parsed, declared.subscribe, host, signal);
  const { progress } = opened;
  const width = opened.columns.length;
  const columns = [column('oxbow_epoch', 'int8'), column('oxbow_diff', 'int8'), ...(progress ? [column('oxbow_progressed', 'bool')] : []), ...opened.columns];
  const toRows = (round: SubscriptionRound): Row[] => {
    const rows: Row[] = [];
    for (let index = 0; index < round.rows.length; index++) {
      const head = progress ? [round.epochs[index]!, BigInt(round.diffs[index]!), false] : [round.epochs[index]!, BigInt(round.diffs[index]!)];
      rows.push([...head, ...round.rows[index]!]);
    }
    if (progress && round.progressed !== undefined) rows.push([round.progressed, 0n, true, ...new Array<null>(width).fill(null)]);
    return rows;
  };
  return new SubscriptionStream(opened.reader, toRows, columns, Infinity);
}

/** Positions of the primary key among the visible columns, or undefined when a key column is hidden (a table's row id). */
function visibleKey(relation: RelationDef): number[] | undefined {
  const positions: number[] = [];
  for (const index of relation.primaryKey) {
    if (relation.columns[index]?.hidden !== false) return undefined;
    positions.push(relation.columns.slice(0, index).filter((candidate) => !candidate.hidden).length);
  }
  return positions.length === 0 ? undefined : positions;
}

/** RisingWave's rows of one round: the columns, op and rw_timestamp, with updates paired by key. */
function risingWaveRows(round: SubscriptionRound, keyOf: ((row: Row) => string) | undefined): Row[] {
  const rows: Row[] = [];
  const { epochs, diffs } = round;
  if (round.snapshot) {
    for (const row of round.rows) rows.push([...row, 'Insert', null]);
    return rows;
  }
  let begin = 0;
  while (begin < epochs.length) {
    const epoch = epochs[begin]!;
    let end = begin;
    while (end < epochs.length && epochs[end] === epoch) end++;
    const millis = BigInt(epochToMillis(epoch));
    const insertOfKey = new Map<string, number>();
    if (keyOf !== undefined) {
      for (let index = begin; index < end; index++) {
        if (diffs[index]! < 0) continue;
        const key = keyOf(round.rows[index]!);
        if (!insertOfKey.has(key)) insertOfKey.set(key, index);
      }
    }
    const paired = new Set<number>();
    // Removals come first in an epoch: each either ends its key (Delete) or pairs with its key's addition.
    for (let index = begin; index < end; index++) {
      if (diffs[index]! > 0) continue;
      const partner = keyOf === undefined ? undefined : insertOfKey.get(keyOf(round.rows[index]!));
      if (partner !== undefined && !paired.has(partner)) {
        paired.add(partner);
        rows.push([...round.rows[index]!, 'UpdateDelete', millis], [...round.rows[partner]!, 'UpdateInsert', millis]);
      } else rows.push([...round.rows[index]!, 'Delete', millis]);
    }
    for (let index = begin; index < end; index++) if (diffs[index]! > 0 && !paired.has(index)) rows.push([...round.rows[index]!, 'Insert', millis]);
    begin = end;
  }
  return rows;
}

/** `DECLARE c SUBSCRIPTION CURSOR FOR sub [SINCE ... | FULL]` (RisingWave's). */
export async function declareSubscriptionCursor(parsed: ParsedStatement, declared: OxbowDeclareSubscriptionCursor, host: SubscribeHost, signal: AbortSignal): Promise<CursorStream> {
  const { schemaname, relname } = declared.subscription;
  const position = (declared.subscription.location ?? 0) + 1;
  const subscription = host.core.catalog.snapshot.resolveRelation(schemaname, relname!, host.searchPath);
  const name = schemaname === undefined ? relname! : `${schemaname}.${relname!}`;
  if (subscription === undefined) throw new SqlError(SqlState.undefinedObject, `subscription "${name}" does not exist`, { position });
  if (subscription.kind !== 'subscription') {
    throw new SqlError(SqlState.wrongObjectType, `"${name}" is not a subscription`, {
      position,
      hint: `Create one first (CREATE SUBSCRIPTION s FROM ${name}), or read it with DECLARE c CURSOR FOR SUBSCRIBE ${name} in a transaction block.`,
    });
  }
  let start: SubscriptionStart;
  if (declared.start.kind === 'millis') {
    const millis = Number(declared.start.millis);
    if (!Number.isSafeInteger(millis)) {
      throw new SqlError(SqlState.invalidParameterValue, `SINCE ${declared.start.millis} is not a time in Unix milliseconds`, { position: (declared.startLocation ?? 0) + 1 });
    }
    start = { kind: 'millis', millis };
  } else start = declared.start;
  const node: OxbowSubscribe = { relation: declared.subscription, options: {} };
  const opened = await openSubscription(parsed, node, host, signal, start);
  const key = visibleKey(opened.relation);
  const keyTypes = key?.map((index) => opened.columns[index]!.type);
  const evalContext = host.evalContext();
  const keyOf =
    key === undefined
      ? undefined
      : (row: Row): string => key.map((index, at) => (row[index] === null || row[index] === undefined ? '\\N' : functions.formatValue(row[index]!, keyTypes![at]!, evalContext))).join('\t');
  const columns = [...opened.columns, column('op', 'varchar'), column('rw_timestamp', 'int8')];
  return new SubscriptionStream(opened.reader, (round) => risingWaveRows(round, keyOf), columns, 0);
}
