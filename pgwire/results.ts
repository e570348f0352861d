// Sends an ExecuteResult to the client, the same for the simple and the extended protocol: rows
// pulled from the cursor in batches (DataRow messages written straight into the output buffer),
// command tags, and the COPY sub-protocols. For the extended protocol a row limit may suspend the
// portal; the caller keeps the cursor and calls again on the next Execute.

import { BinaryCopyReader } from './copy-binary.js';
import type { ColumnDescription, ExecuteResult, RowCursor } from '../executor/engine/engine.js';
import { SqlError, SqlState } from '../sql/errors.js';
import { writeCommandComplete, writeEmptyQueryResponse, writePortalSuspended } from './backend/completions.js';
import { writeCopyData, writeCopyDone } from './backend/copy-data.js';
import { writeCopyInResponse, writeCopyOutResponse } from './backend/copy-response.js';
import { readCopyFail } from './frontend/copy-fail.js';
import { writeDataRow, type ColumnEncoder } from './value-codec.js';
import type { Wire } from './wire.js';
import { asBytes } from './node-buffer.js';

/**
 * An error after which the client and server no longer agree on where messages are (a foreign
 * message in the middle of COPY data): reported as an ERROR, then the connection ends with
 * PostgreSQL's FATAL "protocol synchronization was lost".
 */
export class SynchronizationLost extends SqlError {}

export function synchronizationLostFatal(): SqlError {
  return new SqlError(SqlState.protocolViolation, 'terminating connection because protocol synchronization was lost', { severity: 'FATAL' });
}

/** Rows per cursor pull when the client asked for all rows. */
const ROWS_PER_BATCH = 1024;

export type RowsResult = Extract<ExecuteResult, { kind: 'rows' }>;

/** Writes rows until the cursor ends (maxRows 0) or maxRows rows were sent. Returns the count and whether the cursor ended. */
export async function sendRows(wire: Wire, cursor: RowCursor, encoders: readonly ColumnEncoder[], maxRows: number): Promise<{ count: number; ended: boolean }> {
  let count = 0;
  for (;;) {
    const want = maxRows === 0 ? ROWS_PER_BATCH : Math.min(ROWS_PER_BATCH, maxRows - count);
    const rows = await cursor.next(want);
    if (rows.length === 0) return { count, ended: true };
    const writer = wire.writer;
    try {
      for (let i = 0; i < rows.length; i++) writeDataRow(writer, rows[i]!, encoders);
    } catch (error) {
      writer.abandonOpenMessage();
      throw error;
    }
    count += rows.length;
    await wire.flushIfLarge();
    if (maxRows !== 0 && count >= maxRows) return { count, ended: false };
  }
}

/**
 * Sends a whole result (simple query, or the first Execute of a statement that returns no rows).
 * `encodersFor` picks the column encoders and, in the simple protocol, writes the RowDescription.
 */
export async function sendResult(wire: Wire, result: ExecuteResult, encodersFor: (columns: readonly ColumnDescription[], binary: boolean) => ColumnEncoder[]): Promise<void> {
  switch (result.kind) {
    case 'rows': {
      const encoders = encodersFor(result.columns, result.binary === true);
      try {
        const { count } = await sendRows(wire, result.cursor, encoders, 0);
        writeCommandComplete(wire.writer, result.commandTag(count));
      } finally {
        result.cursor.close();
      }
      return;
    }
    case 'command':
      writeCommandComplete(wire.writer, result.commandTag);
      return;
    case 'empty':
      writeEmptyQueryResponse(wire.writer);
      return;
    case 'copyIn':
      writeCommandComplete(wire.writer, await copyIn(wire, result));
      return;
    case 'copyOut':
      await copyOut(wire, result);
      return;
  }
}

/** Suspends a portal: PortalSuspended. */
export function suspend(wire: Wire): void {
  writePortalSuspended(wire.writer);
}

/** COPY FROM STDIN: CopyInResponse, then CopyData until CopyDone (tag) or CopyFail (57014). */
async function copyIn(wire: Wire, result: Extract<ExecuteResult, { kind: 'copyIn' }>): Promise<string> {
  writeCopyInResponse(wire.writer, result.format === 'binary', result.columnCount);
  wire.flush();
  const binary = result.format === 'binary' && result.writeRows !== undefined ? new BinaryCopyReader(result.columnTypes ?? [], wire.evalContext()) : undefined;
  for (;;) {
    let frame;
    try {
      frame = await wire.nextFrame();
    } catch (error) {
      result.abort('connection lost during COPY');
      throw error;
    }
    switch (frame.type) {
      case 'd':
        try {
          if (binary !== undefined) result.writeRows!(binary.push(asBytes(frame.payload)));
          else result.write(asBytes(frame.payload));
        } catch (error) {
          result.abort(error instanceof Error ? error.message : String(error));
          throw error;
        }
        continue;
      case 'c':
        try {
          binary?.end();
        } catch (error) {
          result.abort(error instanceof Error ? error.message : String(error));
          throw error;
        }
        return await result.end();
      case 'f': {
        const reason = readCopyFail(frame.payload);
        result.abort(reason);
        throw new SqlError(SqlState.queryCanceled, `COPY from stdin failed: ${reason}`);
      }
      case 'H':
      case 'S':
        // PostgreSQL ignores Flush and Sync during COPY FROM STDIN (clients may pipeline them).
        continue;
      default:
        result.abort('protocol violation');
        throw new SynchronizationLost(SqlState.protocolViolation, `unexpected message type 0x${frame.type.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')} during COPY from stdin`);
    }
  }
}

/** COPY TO STDOUT: CopyOutResponse, CopyData per item, CopyDone, CommandComplete. */
async function copyOut(wire: Wire, result: Extract<ExecuteResult, { kind: 'copyOut' }>): Promise<void> {
  writeCopyOutResponse(wire.writer, result.format === 'binary', result.columnCount);
  for await (const chunk of result.data) {
    // An empty chunk (a subscription's round ended): send what is held, wait while the client lags.
    if (chunk.length === 0) await wire.flushAndDrain();
    else {
      writeCopyData(wire.writer, chunk);
      await wire.flushIfLarge();
    }
  }
  writeCopyDone(wire.writer);
  writeCommandComplete(wire.writer, result.commandTag());
}
