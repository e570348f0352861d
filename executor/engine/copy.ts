// COPY table [(columns)] FROM STDIN (text, CSV, and binary: its rows decoded by pgwire) and
// COPY table|(query) TO STDOUT (text and CSV).
//
// COPY FROM checks each row as its CopyData arrives (so a bad row fails early, with the line in
// the CONTEXT field as PostgreSQL reports it) and buffers the converted rows; CopyDone applies
// them all in one epoch under the write lock, and any error (a duplicate key, a NOT NULL column)
// aborts that epoch, so a failed COPY applies nothing. Inside that epoch the rows go through the
// views that read the table in chunks of the sources' chunk size (4,096), as a source's rows do
// (StreamManager.push): a view's intermediate changes die young instead of one batch of every
// row at the commit; an abort drops the chunks' changes with the epoch. Each row is released
// once written. Columns not listed get their DEFAULT (evaluated once per COPY) or NULL; a table
// without a primary key gets fresh hidden row ids.

import type { CopyStmt, DefElem, Node } from '@pgsql/types';
import type { ColumnDef, RelationDef } from '../../sql/catalog.js';
import { SqlError, SqlState, toSqlError } from '../../sql/errors.js';
import * as functions from '../../sql/functions.js';
import type { EvalContext } from '../../sql/functions.js';
import type { ParsedStatement } from '../../sql/parser/ast.js';
import type { Row, Value } from '../../sql/value.js';
import type { ColumnDescription, ExecuteResult } from './engine.js';
import type { EngineCore } from './engine-core.js';
import { CopyLineReader, defaultCopyOptions, encodeCopyLine, type CopyFormatOptions, type CopyLine } from './copy-format.js';
import type { StoreTableAccess } from '../batch/table-access.js';
import type { EngineSession } from './session.js';
import { formatTypeName } from '../catalog/type-names.js';
import { chunkRowsOf } from '../connectors/source-manager.js';
import { type PerRowDefault, perRowSequenceDefaults } from '../catalog/sequence-defaults.js';

export interface CopyStatementPlan {
  readonly core: EngineCore;
  readonly session: EngineSession;
  tableAccess(): StoreTableAccess;
  readonly evalContext: EvalContext;
  readonly signal: AbortSignal;
  onWrite(): void;
  /** CHECK constraints of the rows written through `access` (check-constraints.ts). */
  verifyChecks(access: StoreTableAccess, contextOf: (rowIndex: number) => string): Promise<void>;
}

function optionText(element: DefElem): string | undefined {
  const arg = element.arg as Record<string, Record<string, unknown>> | undefined;
  if (arg === undefined) return undefined;
  if (arg.String !== undefined) return String(arg.String.sval ?? '');
  if (arg.Boolean !== undefined) return arg.Boolean.boolval === true ? 'true' : 'false';
  if (arg.Integer !== undefined) return String(arg.Integer.ival ?? 0);
  return undefined;
}

function booleanOption(name: string, value: string | undefined): boolean {
  if (value === undefined) return true;
  const lower = value.toLowerCase();
  if (['true', 'on', '1', 'yes'].includes(lower)) return true;
  if (['false', 'off', '0', 'no'].includes(lower)) return false;
  if (name === 'header' && lower === 'match') return true;
  throw new SqlError(SqlState.syntaxError, `${name} requires a Boolean value`);
}

/** COPY's WITH options, PostgreSQL's checks. */
export function copyOptions(elements: readonly Node[]): CopyFormatOptions & { readonly binary?: true } {
  let format: 'text' | 'csv' = 'text';
  const given: Record<string, string | undefined> = {};
  for (const item of elements) {
    const element = (item as { DefElem: DefElem }).DefElem;
    const name = element.defname ?? '';
    if (name in given) throw new SqlError(SqlState.syntaxError, 'conflicting or redundant options');
    given[name] = optionText(element);
  }
  if (given.format !== undefined) {
    const value = given.format.toLowerCase();
    if (value === 'binary') {
      // PostgreSQL's binary COPY file format (pgwire decodes it with the types' receive functions).
      for (const name of ['delimiter', 'null', 'header', 'quote', 'escape']) {
        if (name in given) throw new SqlError(SqlState.syntaxError, `cannot specify ${name.toUpperCase()} in BINARY mode`);
      }
      return { ...defaultCopyOptions('text'), binary: true };
    }
    if (value !== 'text' && value !== 'csv') throw new SqlError(SqlState.invalidParameterValue, `COPY format "${given.format}" not recognized`);
    format = value;
  }
  const base = defaultCopyOptions(format);
  const delimiter = given.delimiter ?? base.delimiter;
  if (delimiter.length !== 1) throw new SqlError(SqlState.featureNotSupported, 'COPY delimiter must be a single one-byte character');
  const quote = given.quote ?? base.quote;
  if (given.quote !== undefined && format !== 'csv') throw new SqlError(SqlState.featureNotSupported, 'COPY quote available only in CSV mode');
  if (given.escape !== undefined && format !== 'csv') throw new SqlError(SqlState.featureNotSupported, 'COPY escape available only in CSV mode');
  for (const name of Object.keys(given)) {
    if (!['format', 'delimiter', 'null', 'header', 'quote', 'escape', 'encoding', 'freeze'].includes(name)) {
      throw new SqlError(SqlState.syntaxError, `option "${name}" not recognized`);
    }
  }
  if (given.encoding !== undefined && !/^utf-?8$/i.test(given.encoding)) {
    throw new SqlError(SqlState.featureNotSupported, `COPY encoding "${given.encoding}" is not supported: oxbow speaks UTF8 only`);
  }
  return {
    format,
    delimiter,
    nullString: given.null ?? base.nullString,
    header: booleanOption('header', 'header' in given ? given.header : 'false'),
    quote,
    escape: given.escape ?? quote,
  };
}

function resolveTarget(statement: CopyStmt, plan: CopyStatementPlan): RelationDef {
  const target = statement.relation!;
  const relation = plan.core.catalog.resolveRelation(target.schemaname, target.relname ?? '', plan.session.searchPath());
  if (relation === undefined) {
    throw new SqlError(SqlState.undefinedTable, `relation "${target.relname ?? ''}" does not exist`, {
      position: target.location === undefined ? undefined : target.location + 1,
    });
  }
  return relation;
}

/** Indexes of the COPY's columns in the relation (all visible columns when none are listed). */
function copyColumns(relation: RelationDef, attributes: readonly Node[] | undefined): number[] {
  if (attributes === undefined || attributes.length === 0) {
    return relation.columns.flatMap((column, index) => (column.hidden ? [] : [index]));
  }
  const indexes: number[] = [];
  for (const attribute of attributes) {
    const name = (attribute as { String?: { sval?: string } }).String?.sval ?? '';
    const index = relation.columns.findIndex((column) => column.name === name && !column.hidden);
    if (index < 0) throw new SqlError(SqlState.undefinedColumn, `column "${name}" of relation "${relation.name}" does not exist`);
    if (indexes.includes(index)) throw new SqlError(SqlState.duplicateColumn, `column "${name}" specified more than once`);
    indexes.push(index);
  }
  return indexes;
}

export async function prepareCopy(parsed: ParsedStatement, plan: CopyStatementPlan): Promise<ExecuteResult> {
  const statement = (parsed.node as { CopyStmt: CopyStmt }).CopyStmt;
  if (statement.filename !== undefined || statement.is_program === true) {
    throw new SqlError(SqlState.insufficientPrivilege, 'COPY to or from a file or program is not allowed in oxbow', {
      hint: "Use COPY ... FROM STDIN or TO STDOUT (psql's \\copy does this).",
    });
  }
  const options = copyOptions(statement.options ?? []);
  if (options.binary === true) {
    if (statement.is_from !== true) throw new SqlError(SqlState.featureNotSupported, 'COPY TO STDOUT in binary format is not supported');
    return copyFrom(statement, options, plan, true);
  }
  if (statement.is_from === true) return copyFrom(statement, options, plan);
  return copyTo(statement, parsed, options, plan);
}

// ---- COPY FROM ------------------------------------------------------------------------------

async function copyFrom(statement: CopyStmt, options: CopyFormatOptions, plan: CopyStatementPlan, binary = false): Promise<ExecuteResult> {
  if (statement.whereClause !== undefined) throw new SqlError(SqlState.featureNotSupported, 'COPY FROM ... WHERE is not supported');
  const relation = resolveTarget(statement, plan);
  if (relation.kind !== 'table') {
    const word = relation.kind === 'view' ? 'view' : relation.kind === 'materialized_view' ? 'materialized view' : relation.kind === 'source' ? 'source' : 'relation';
    throw new SqlError(SqlState.wrongObjectType, `cannot copy to ${word} "${relation.name}"`);
  }
  const columns = copyColumns(relation, statement.attlist);
  // serial / identity columns: a sequence value per row (catalog/sequence-defaults.ts).
  const catalog = plan.core.catalog.snapshot;
  const perRow = perRowSequenceDefaults(
    relation,
    columns,
    (schema, name) => (name.startsWith('#') ? catalog.relationById(Number(name.slice(1))) : catalog.resolveRelation(schema, name, plan.session.searchPath())),
    (sequence) => plan.session.nextSequenceValue(sequence),
  );
  const defaults = await defaultRow(relation, [...columns, ...perRow.map((entry) => entry.column)], plan);
  const reader = new CopyLineReader(options, `COPY ${relation.name}`);
  const rows: Row[] = [];
  /** The input line of each row, for errors found when the rows are applied. */
  const lineNumbers: number[] = [];
  /** The input text of each row, for CHECK violations (PostgreSQL quotes the line); kept only when the table has checks. */
  const rawLines: string[] = [];
  const keepRawLines = (relation.checks ?? []).length > 0;
  let failed: SqlError | undefined;
  const accept = (lines: CopyLine[]): void => {
    for (const line of lines) {
      rows.push(convertLine(line, relation, columns, defaults, plan.evalContext, perRow));
      lineNumbers.push(line.lineNumber);
      if (keepRawLines) rawLines.push(line.raw);
    }
  };
  let tuple = 0;
  return {
    kind: 'copyIn',
    format: binary ? 'binary' : options.format,
    columnCount: columns.length,
    columnTypes: columns.map((index) => relation.columns[index]!.type),
    writeRows(values: readonly Row[]): void {
      if (failed !== undefined) throw failed;
      try {
        for (const fields of values) {
          tuple++;
          const row = defaults.slice();
          for (const entry of perRow) row[entry.column] = entry.next();
          columns.forEach((index, position) => {
            row[index] = fields[position]!;
          });
          for (let index = 0; index < relation.columns.length; index++) {
            const column = relation.columns[index]!;
            if (!column.nullable && !column.hidden && row[index] === null) {
              throw new SqlError(SqlState.notNullViolation, `null value in column "${column.name}" of relation "${relation.name}" violates not-null constraint`, {
                detail: `Failing row contains (${failingRowText(relation, row)}).`,
                context: `COPY ${relation.name}, line ${tuple}`,
              });
            }
          }
          rows.push(row);
          lineNumbers.push(tuple);
          if (keepRawLines) rawLines.push('');
        }
      } catch (error) {
        failed = toSqlError(error);
        throw failed;
      }
    },
    write(chunk: Uint8Array): void {
      if (failed !== undefined) throw failed;
      try {
        accept(reader.push(chunk));
      } catch (error) {
        failed = toSqlError(error);
        throw failed;
      }
    },
    async end(): Promise<string> {
      if (failed !== undefined) throw failed;
      accept(reader.end());
      const count = rows.length;
      await applyRows(relation, rows, lineNumbers, rawLines, plan);
      plan.onWrite();
      return `COPY ${count}`;
    },
    abort(): void {
      rows.length = 0;
      lineNumbers.length = 0;
      rawLines.length = 0;
      failed = new SqlError(SqlState.queryCanceled, 'COPY from stdin failed');
    },
  };
}

/** The row template: DEFAULT values (or NULL) for columns the COPY does not list. */
async function defaultRow(relation: RelationDef, listed: readonly number[], plan: CopyStatementPlan): Promise<Row> {
  const row: Row = [];
  for (let index = 0; index < relation.columns.length; index++) {
    const column = relation.columns[index]!;
    row.push(listed.includes(index) || column.defaultSql === undefined ? null : await evaluateDefault(column, plan));
  }
  return row;
}

/** A DEFAULT expression's value, computed through the planner as `SELECT <default>::type`. */
async function evaluateDefault(column: ColumnDef, plan: CopyStatementPlan): Promise<Value> {
  // The planner binds and evaluates the text; COPY keeps one value for every row (like now()).
  const text = `SELECT (${column.defaultSql})::${formatTypeName(column.type)}`;
  const rows = await plan.session.evaluateConstantQuery(text, plan.signal);
  return rows[0]?.[0] ?? null;
}

function convertLine(line: CopyLine, relation: RelationDef, columns: readonly number[], template: Row, context: EvalContext, perRow: readonly PerRowDefault[]): Row {
  const { fields } = line;
  const prefix = `COPY ${relation.name}, line ${line.lineNumber}`;
  if (fields.length > columns.length) {
    throw new SqlError(SqlState.badCopyFileFormat, 'extra data after last expected column', { context: `${prefix}: "${line.raw}"` });
  }
  if (fields.length < columns.length) {
    const missing = relation.columns[columns[fields.length]!]!.name;
    throw new SqlError(SqlState.badCopyFileFormat, `missing data for column "${missing}"`, { context: `${prefix}: "${line.raw}"` });
  }
  const row = template.slice();
  for (const entry of perRow) row[entry.column] = entry.next();
  for (let position = 0; position < columns.length; position++) {
    const index = columns[position]!;
    const field = fields[position]!;
    if (field === null) {
      row[index] = null;
      continue;
    }
    const column = relation.columns[index]!;
    try {
      row[index] = functions.parseValue(field, column.type, context);
    } catch (error) {
      const failure = toSqlError(error);
      failure.context = `${prefix}, column ${column.name}: "${field}"`;
      throw failure;
    }
  }
  // NOT NULL is checked per line, as PostgreSQL does while reading (the hidden row id comes later).
  for (let index = 0; index < relation.columns.length; index++) {
    const column = relation.columns[index]!;
    if (!column.nullable && !column.hidden && row[index] === null) {
      throw new SqlError(SqlState.notNullViolation, `null value in column "${column.name}" of relation "${relation.name}" violates not-null constraint`, {
        detail: `Failing row contains (${failingRowText(relation, row)}).`,
        context: `${prefix}: "${line.raw}"`,
      });
    }
  }
  return row;
}

/** PostgreSQL's `Failing row contains (...)` text: the visible columns, NULL as `null`. */
function failingRowText(relation: RelationDef, row: Row): string {
  const parts: string[] = [];
  relation.columns.forEach((column, index) => {
    if (column.hidden) return;
    const value = row[index] ?? null;
    parts.push(value === null ? 'null' : functions.formatValue(value, column.type));
  });
  return parts.join(', ');
}

async function applyRows(
  relation: RelationDef,
  rows: Row[],
  lineNumbers: readonly number[],
  rawLines: readonly string[],
  plan: CopyStatementPlan,
): Promise<void> {
  const types = relation.columns.map((column) => column.type);
  const hiddenKey = relation.columns.length > 0 && relation.columns[relation.primaryKey[0] ?? -1]?.hidden === true;
  const streams = plan.core.streams;
  const chunkRows = chunkRowsOf(plan.core);
  const chunk = chunkRows > 0 ? chunkRows : rows.length;
  await plan.core.writeLock.run(async () => {
    const access = plan.tableAccess();
    try {
      const captured = streams.captures(relation.id);
      const count = rows.length;
      for (let rowIndex = 0; rowIndex < count; rowIndex++) {
        const row = rows[rowIndex]!;
        // Released once written: the epoch holds its own copy, the views their chunk.
        rows[rowIndex] = undefined as unknown as Row;
        if (hiddenKey) row[relation.primaryKey[0]!] = access.nextRowId(relation);
        if (!hiddenKey) {
          // The open epoch's rows are read too: a key twice in this COPY is found as a committed one.
          const keyRow = relation.primaryKey.map((index) => row[index]!);
          if (access.get(relation, keyRow) !== undefined) {
            const names = relation.primaryKey.map((index) => relation.columns[index]!.name).join(', ');
            const values = relation.primaryKey.map((index) => functions.formatValue(row[index]!, types[index]!)).join(', ');
            const indexName = plan.core.catalog.snapshot.relations().find((other) => other.indexOn?.primary === true && other.indexOn.relationId === relation.id)?.name ?? `${relation.name}_pkey`;
            throw new SqlError(SqlState.uniqueViolation, `duplicate key value violates unique constraint "${indexName}"`, {
              detail: `Key (${names})=(${values}) already exists.`,
              context: `COPY ${relation.name}, line ${lineNumbers[rowIndex]}`,
            });
          }
        }
        access.insert(relation, row);
        if (captured && (rowIndex + 1) % chunk === 0) {
          streams.push();
          plan.signal.throwIfAborted();
        }
      }
      rows.length = 0;
      await plan.verifyChecks(access, (rowIndex) => `COPY ${relation.name}, line ${lineNumbers[rowIndex]}: "${rawLines[rowIndex]}"`);
      plan.signal.throwIfAborted();
      await plan.core.commitDurable();
    } catch (error) {
      plan.core.store.abort();
      throw error;
    }
  });
}

// ---- COPY TO --------------------------------------------------------------------------------

async function copyTo(statement: CopyStmt, parsed: ParsedStatement, options: CopyFormatOptions, plan: CopyStatementPlan): Promise<ExecuteResult> {
  let columns: readonly ColumnDescription[];
  let rows: Row[];
  if (statement.query !== undefined) {
    const queryLocation = firstLocationOf(statement.query);
    const result = await plan.session.runQuery(
      { node: statement.query, text: parsed.text, location: queryLocation ?? parsed.location },
      plan.signal,
    );
    columns = result.columns;
    rows = result.rows;
  } else {
    const relation = resolveTarget(statement, plan);
    if (relation.kind !== 'table' && relation.kind !== 'materialized_view' && relation.kind !== 'source' && relation.kind !== 'system') {
      throw new SqlError(SqlState.wrongObjectType, `cannot copy from ${relation.kind === 'view' ? 'view' : 'relation'} "${relation.name}"`, {
        hint: 'Try the COPY (SELECT ...) TO variant.',
      });
    }
    const indexes = copyColumns(relation, statement.attlist);
    columns = indexes.map((index) => ({ name: relation.columns[index]!.name, type: relation.columns[index]!.type, tableOid: relation.id, columnNumber: index + 1 }));
    rows = [];
    const access = plan.tableAccess();
    await access.prepareRelations([relation], plan.signal); // a Kafka source that stores no rows: its replay
    for (const row of access.scan(relation, {})) rows.push(indexes.map((index) => row[index] ?? null));
  }
  const encoder = new TextEncoder();
  const evalContext = plan.evalContext;
  async function* data(): AsyncIterable<Uint8Array> {
    if (options.header) yield encoder.encode(encodeCopyLine(columns.map((column) => column.name), options));
    const fields = new Array<string | null>(columns.length);
    for (const row of rows) {
      for (let index = 0; index < columns.length; index++) {
        const value = row[index] ?? null;
        fields[index] = value === null ? null : functions.formatValue(value, columns[index]!.type, evalContext);
      }
      yield encoder.encode(encodeCopyLine(fields, options));
    }
  }
  return { kind: 'copyOut', format: options.format, columnCount: columns.length, data: data(), commandTag: () => `COPY ${rows.length}` };
}

function firstLocationOf(node: unknown): number | undefined {
  let best: number | undefined;
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    for (const [key, child] of Object.entries(value)) {
      if (key === 'location' && typeof child === 'number' && child >= 0) best = best === undefined ? child : Math.min(best, child);
      else visit(child);
    }
  };
  visit(node);
  return best;
}
