// The simple query protocol: one Query message with any number of statements. PostgreSQL's rules:
// a syntax error anywhere fails the whole string before anything runs; statements run in order
// and the first failing one ends the message (later statements are not run), rolling back the
// earlier ones of its implicit transaction (the session's beginMessage / endMessage); an empty
// string gets EmptyQueryResponse; ReadyForQuery ends every Query. Results are in text format (a
// BINARY cursor's FETCH: binary).

import { toSqlError } from '../sql/errors.js';
import { writeEmptyQueryResponse } from './backend/completions.js';
import { writeRowDescription } from './backend/row-description.js';
import { columnEncoders } from './value-codec.js';
import type { Wire } from './wire.js';
import type { ColumnDescription, PreparedStatement } from '../executor/engine/engine.js';
import { sendResult, SynchronizationLost, synchronizationLostFatal } from './results.js';

export async function simpleQuery(wire: Wire, sql: string): Promise<void> {
  const session = wire.session;
  let statements: PreparedStatement[];
  try {
    statements = session.prepareMany(sql);
  } catch (error) {
    const sqlError = wire.writeError(error);
    session.statementFailed(sqlError);
    wire.readyForQuery();
    return;
  }
  if (statements.length === 0) writeEmptyQueryResponse(wire.writer);
  const context = wire.evalContext();
  // Text, except the rows of a FETCH from a BINARY cursor.
  const describeAndEncode = (columns: readonly ColumnDescription[], binary: boolean) => {
    const formats = columns.map(() => (binary ? 1 : 0));
    writeRowDescription(wire.writer, columns, formats);
    return columnEncoders(columns, formats, context);
  };
  // More than one statement: one implicit transaction, rolled back when a statement fails (the
  // session's endMessage, before ReadyForQuery).
  session.beginMessage?.(statements.length);
  let failed = false;
  try {
    for (const statement of statements) {
      try {
        const result = await session.execute(statement, { parameters: [] });
        await sendResult(wire, result, describeAndEncode);
      } catch (error) {
        failed = true;
        session.statementFailed(toSqlError(error));
        wire.writeError(error);
        if (error instanceof SynchronizationLost) throw synchronizationLostFatal();
        break;
      }
    }
  } finally {
    await session.endMessage?.(failed);
  }
  wire.readyForQuery();
}
