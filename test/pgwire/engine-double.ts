// A test double of the engine facade (executor/engine/engine.ts) for pgwire's protocol unit tests: a
// tiny command language instead of SQL, so the tests exercise the protocol, not the planner.
//
//   select N        one int4 column "?column?" with the value N
//   rows N          N rows (i int4, name text): i = 1..N, name = 'row i'
//   echo TYPE       returns parameter $1 (declared type, or TYPE) as one column "echo"
//   fail CODE       fails with SqlError(CODE) at execution
//   syntax          fails to prepare with 42601 at position 1
//   sleep           runs until cancelled (57014)
//   copyin          COPY FROM STDIN: collects CopyData, `COPY n` with n = lines received
//   copyout N       COPY TO STDOUT: N lines "i\trow i\n"
//   begin/commit/rollback  transaction status
//   notice          sends a NOTICE, then completes
//   set NAME VALUE  changes a setting; reports it with ParameterStatus
//   empty           an empty statement
//   corrupt         one text column whose second row holds a value no encoder can write

import type { ColumnDescription, Engine, ExecuteOptions, ExecuteResult, Notice, PreparedStatement, Session, SessionEvents, StartupParameters, TransactionStatus } from '../../executor/engine/engine.js';
import { SqlError, SqlState, type SqlStateCode } from '../../sql/errors.js';
import { type, type DataType, type TypeName } from '../../sql/types.js';
import type { Row } from '../../sql/value.js';

interface DoubleStatement extends PreparedStatement {
  readonly command: string;
  readonly words: readonly string[];
}

export class EngineDouble implements Engine {
  readonly sessions = new Map<number, SessionDouble>();
  private nextProcessId = 4242;

  openSession(parameters: StartupParameters, events: SessionEvents): Session {
    if (parameters.database !== 'oxbow') {
      throw new SqlError(SqlState.invalidCatalogName, `database "${parameters.database}" does not exist`);
    }
    const session = new SessionDouble(this.nextProcessId++, parameters, events);
    this.sessions.set(session.processId, session);
    return session;
  }

  findSession(processId: number, secretKey: number): Session | undefined {
    const session = this.sessions.get(processId);
    return session !== undefined && session.secretKey === secretKey ? session : undefined;
  }

  /** Sessions not yet closed. */
  openSessions(): SessionDouble[] {
    return [...this.sessions.values()].filter((session) => !session.closed);
  }

  async close(): Promise<void> {}
}

export class SessionDouble implements Session {
  readonly secretKey: number;
  closed = false;
  cancelCount = 0;
  abortedCopies = 0;
  readonly executed: string[] = [];
  private status: TransactionStatus = 'idle';
  private readonly settings = new Map<string, string>();
  private cancelRunning: (() => void) | undefined;

  constructor(
    readonly processId: number,
    readonly startup: StartupParameters,
    private readonly events: SessionEvents,
  ) {
    this.secretKey = (processId * 7919) | 0;
    for (const [name, value] of Object.entries(startup.options)) this.settings.set(name, value);
  }

  reportedParameters(): ReadonlyMap<string, string> {
    return new Map([
      ['server_version', '15.0'],
      ['server_encoding', 'UTF8'],
      ['client_encoding', 'UTF8'],
      ['DateStyle', 'ISO, MDY'],
      ['TimeZone', 'UTC'],
      ['integer_datetimes', 'on'],
      ['standard_conforming_strings', 'on'],
      ['application_name', this.settings.get('application_name') ?? ''],
    ]);
  }

  prepareMany(sql: string): PreparedStatement[] {
    const parts = sql.split(';').map((part) => part.trim()).filter((part) => part !== '');
    return parts.map((part) => this.prepare(part, []));
  }

  prepare(sql: string, parameterTypes: readonly (DataType | undefined)[]): PreparedStatement {
    const words = sql.trim().split(/\s+/);
    const command = words[0]!.toLowerCase();
    const base = { sql, command, words, parameterTypes: [] as DataType[], columns: null as ColumnDescription[] | null };
    switch (command) {
      case 'select':
        return { ...base, columns: [column('?column?', type('int4'))] } satisfies DoubleStatement;
      case 'rows':
        return { ...base, columns: [column('i', type('int4')), column('name', type('text'))] } satisfies DoubleStatement;
      case 'corrupt':
        return { ...base, columns: [column('t', type('text'))] } satisfies DoubleStatement;
      case 'echo': {
        const echoType = parameterTypes[0] ?? type((words[1] ?? 'text') as Exclude<TypeName, 'array'>);
        return { ...base, parameterTypes: [echoType], columns: [column('echo', echoType)] } satisfies DoubleStatement;
      }
      case 'syntax':
        throw new SqlError(SqlState.syntaxError, 'syntax error at or near "syntax"', { position: 1 });
      case 'fail':
      case 'sleep':
      case 'copyin':
      case 'copyout':
      case 'begin':
      case 'commit':
      case 'rollback':
      case 'notice':
      case 'set':
      case 'empty':
        return base satisfies DoubleStatement;
      default:
        throw new SqlError(SqlState.syntaxError, `syntax error at or near "${words[0]}"`, { position: 1 });
    }
  }

  async execute(prepared: PreparedStatement, options: ExecuteOptions): Promise<ExecuteResult> {
    const statement = prepared as DoubleStatement;
    this.executed.push(statement.sql);
    if (this.status === 'failed' && statement.command !== 'rollback' && statement.command !== 'commit') {
      throw new SqlError(SqlState.inFailedSqlTransaction, 'current transaction is aborted, commands ignored until end of transaction block');
    }
    const argument = statement.words[1];
    switch (statement.command) {
      case 'select':
        return rowsResult(statement.columns!, [[Number(argument)]]);
      case 'rows': {
        const rows: Row[] = [];
        for (let i = 1; i <= Number(argument); i++) rows.push([i, `row ${i}`]);
        return rowsResult(statement.columns!, rows);
      }
      case 'echo':
        return rowsResult(statement.columns!, [[options.parameters[0] ?? null]]);
      case 'corrupt':
        return rowsResult(statement.columns!, [['fine'], [Symbol('not a SQL value') as unknown as string], ['never']]);
      case 'fail':
        throw new SqlError((argument ?? 'XX000') as SqlStateCode, 'failure requested', { detail: 'by the test', hint: 'none' });
      case 'sleep':
        return new Promise<ExecuteResult>((_resolve, reject) => {
          this.cancelRunning = () => reject(new SqlError(SqlState.queryCanceled, 'canceling statement due to user request'));
        });
      case 'copyin': {
        const chunks: Buffer[] = [];
        const copy: ExecuteResult = {
          kind: 'copyIn',
          format: 'text',
          columnCount: 2,
          write: (chunk) => {
            if (Buffer.from(chunk).toString('utf8').startsWith('bad')) throw new SqlError(SqlState.badCopyFileFormat, 'bad row', { context: 'COPY t, line 1' });
            chunks.push(Buffer.from(chunk));
          },
          end: async () => `COPY ${Buffer.concat(chunks as unknown as Uint8Array[]).toString('utf8').split('\n').filter((line) => line !== '').length}`,
          abort: () => {
            this.abortedCopies++;
          },
        };
        return copy;
      }
      case 'copyout': {
        const count = Number(argument);
        async function* lines(): AsyncIterable<Uint8Array> {
          for (let i = 1; i <= count; i++) yield new Uint8Array(Buffer.from(`${i}\trow ${i}\n`));
        }
        return { kind: 'copyOut', format: 'text', columnCount: 2, data: lines(), commandTag: () => `COPY ${count}` };
      }
      case 'begin':
        this.status = 'inTransaction';
        return { kind: 'command', commandTag: 'BEGIN' };
      case 'commit': {
        const tag = this.status === 'failed' ? 'ROLLBACK' : 'COMMIT';
        this.status = 'idle';
        return { kind: 'command', commandTag: tag };
      }
      case 'rollback':
        this.status = 'idle';
        return { kind: 'command', commandTag: 'ROLLBACK' };
      case 'notice': {
        const notice: Notice = { severity: 'NOTICE', code: '00000', message: 'a notice', detail: 'notice detail' };
        this.events.notice(notice);
        return { kind: 'command', commandTag: 'NOTICE' };
      }
      case 'set':
        this.settings.set(argument!, statement.words[2]!);
        this.events.parameterStatus(argument!, statement.words[2]!);
        return { kind: 'command', commandTag: 'SET' };
      case 'empty':
        return { kind: 'empty' };
      default:
        throw new Error(`engine double: unknown command ${statement.command}`);
    }
  }

  cancel(): void {
    this.cancelCount++;
    const cancel = this.cancelRunning;
    this.cancelRunning = undefined;
    cancel?.();
  }

  transactionStatus(): TransactionStatus {
    return this.status;
  }

  statementFailed(): void {
    if (this.status === 'inTransaction') this.status = 'failed';
  }

  setting(name: string): string | undefined {
    return this.settings.get(name);
  }

  close(): void {
    this.closed = true;
  }
}

function column(name: string, columnType: DataType): ColumnDescription {
  return { name, type: columnType, tableOid: 0, columnNumber: 0 };
}

function rowsResult(columns: readonly ColumnDescription[], rows: Row[]): ExecuteResult {
  let offset = 0;
  return {
    kind: 'rows',
    columns,
    cursor: {
      next: async (maxRows) => {
        const end = maxRows === 0 ? rows.length : Math.min(rows.length, offset + maxRows);
        const batch = rows.slice(offset, end);
        offset = end;
        return batch;
      },
      close: () => {},
    },
    commandTag: (count) => `SELECT ${count}`,
  };
}
