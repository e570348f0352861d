// SQL-level PREPARE name [(types)] AS statement, EXECUTE name [(values)], DEALLOCATE [PREPARE]
// name | ALL: the session's named statements, with PostgreSQL's errors (42P05 for a name taken,
// 26000 for an unknown one, 42601 for a wrong number of values). The statement is planned at
// PREPARE (its parameter types declared or inferred, as PostgreSQL infers them) and re-planned
// when the catalog or search path changed (statement-preparer.ts's currentPlan). EXECUTE's values are
// expressions evaluated once, cast to the parameter types, before the statement runs. These names
// are apart from the extended protocol's named statements (pgwire's), which PostgreSQL keeps in
// the same namespace.

import type { Node } from '@pgsql/types';
import { SqlError, SqlState } from '../../sql/errors.js';
import type { DataType } from '../../sql/types.js';
import type { Value } from '../../sql/value.js';
import { parse } from '../../sql/parser/index.js';
import type { ExecuteResult, PreparedStatement } from './engine.js';
import { dataTypeFromTypeName, formatTypeName } from '../catalog/type-names.js';

/** Statements PREPARE accepts (PostgreSQL: SELECT, INSERT, UPDATE, DELETE, MERGE, VALUES). */
const preparable = new Set(['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt']);

export interface PrepareStatement {
  readonly name: string;
  readonly declared: readonly (DataType | undefined)[];
  readonly query: Node;
}

export function prepareOf(node: Node): PrepareStatement {
  const body = (node as { PrepareStmt: { name: string; argtypes?: Node[]; query: Node } }).PrepareStmt;
  const kind = Object.keys(body.query)[0] ?? '';
  if (!preparable.has(kind)) throw new SqlError(SqlState.syntaxError, `syntax error: PREPARE takes SELECT, INSERT, UPDATE or DELETE`);
  const declared = (body.argtypes ?? []).map((typeName) => {
    const parsed = dataTypeFromTypeName((typeName as { TypeName: never }).TypeName);
    return parsed.name === 'unknown' ? undefined : parsed;
  });
  return { name: body.name, declared, query: body.query };
}

export function executeOf(node: Node): { readonly name: string; readonly values: readonly Node[] } {
  const body = (node as { ExecuteStmt: { name: string; params?: Node[] } }).ExecuteStmt;
  return { name: body.name, values: body.params ?? [] };
}

/** DEALLOCATE's name (undefined: ALL). */
export function deallocateOf(node: Node): string | undefined {
  const body = (node as { DeallocateStmt: { name?: string; isall?: boolean } }).DeallocateStmt;
  return body.isall === true ? undefined : body.name;
}

interface Named<T> {
  readonly statement: T;
  readonly text: string;
  readonly preparedMillis: number;
  /** EXECUTEs that got as far as running the statement (pg_prepared_statements.custom_plans). */
  executions: number;
}

/** One session's SQL-prepared statements by name. */
export class SqlPreparedStatements<T extends PreparedStatement> {
  private readonly named = new Map<string, Named<T>>();

  checkFree(name: string): void {
    if (this.named.has(name)) throw new SqlError(SqlState.duplicatePreparedStatement, `prepared statement "${name}" already exists`);
  }

  add(name: string, statement: T, text: string): void {
    this.checkFree(name);
    this.named.set(name, { statement, text, preparedMillis: Date.now(), executions: 0 });
  }

  /** 26000 when unknown. */
  get(name: string): T {
    const found = this.named.get(name);
    if (found === undefined) throw new SqlError(SqlState.invalidSqlStatementName, `prepared statement "${name}" does not exist`);
    return found.statement;
  }

  /** An EXECUTE runs the statement (PostgreSQL counts each of the first five as a custom plan). */
  executed(name: string): void {
    const found = this.named.get(name);
    if (found !== undefined) found.executions++;
  }

  peek(name: string): T | undefined {
    return this.named.get(name)?.statement;
  }

  /** DEALLOCATE name (26000 when unknown) or ALL (undefined). */
  deallocate(name: string | undefined): void {
    if (name === undefined) this.named.clear();
    else if (!this.named.delete(name)) throw new SqlError(SqlState.invalidSqlStatementName, `prepared statement "${name}" does not exist`);
  }

  /** 42601 unless the values match the parameters in number (PostgreSQL's EvaluateParams). */
  static checkCount(name: string, expected: number, given: number): void {
    if (expected !== given) {
      throw new SqlError(SqlState.syntaxError, `wrong number of parameters for prepared statement "${name}"`, { detail: `Expected ${expected} parameters but got ${given}.` });
    }
  }

  list(): { name: string; statement: string; parameterTypes: readonly DataType[]; preparedMillis: number; executions: number }[] {
    return [...this.named.entries()].map(([name, found]) => ({ name, statement: found.text, parameterTypes: found.statement.parameterTypes, preparedMillis: found.preparedMillis, executions: found.executions }));
  }
}

/** What PREPARE / EXECUTE / DEALLOCATE need from the session. */
export interface SqlPreparedHost<T extends PreparedStatement> {
  readonly statements: SqlPreparedStatements<T>;
  /** Plans the statement PREPARE names, with the declared parameter types. */
  prepare(query: Node, declared: readonly (DataType | undefined)[]): T;
  /** Runs a one-row SELECT (EXECUTE's values cast to the parameter types) to its values. */
  evaluate(select: Node): Promise<Value[]>;
  /** Runs a prepared statement with parameter values. */
  execute(statement: T, parameters: readonly Value[]): Promise<ExecuteResult>;
}

/** PREPARE / EXECUTE / DEALLOCATE. */
export async function sqlPreparedStatement<T extends PreparedStatement>(node: Node, text: string, host: SqlPreparedHost<T>): Promise<ExecuteResult> {
  if ('PrepareStmt' in node) {
    const prepare = prepareOf(node);
    host.statements.checkFree(prepare.name);
    host.statements.add(prepare.name, host.prepare(prepare.query, prepare.declared), text);
    return { kind: 'command', commandTag: 'PREPARE' };
  }
  if ('DeallocateStmt' in node) {
    const name = deallocateOf(node);
    host.statements.deallocate(name);
    return { kind: 'command', commandTag: name === undefined ? 'DEALLOCATE ALL' : 'DEALLOCATE' };
  }
  const execute = executeOf(node);
  const statement = host.statements.get(execute.name);
  SqlPreparedStatements.checkCount(execute.name, statement.parameterTypes.length, execute.values.length);
  let parameters: Value[] = [];
  if (execute.values.length > 0) {
    // The values as one SELECT of casts to the parameter types (PostgreSQL's EvaluateParams).
    const targetList = execute.values.map((value, index) => ({ ResTarget: { val: { TypeCast: { arg: value, typeName: typeNameNode(statement.parameterTypes[index]!) } } } }));
    parameters = await host.evaluate({ SelectStmt: { targetList, limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' } } as unknown as Node);
  }
  host.statements.executed(execute.name);
  return host.execute(statement, parameters);
}

/** A TypeName parse node for a type (EXECUTE's casts to the parameter types). */
function typeNameNode(dataType: DataType): Node {
  const [select] = parse(`SELECT NULL::${formatTypeName(dataType)}`);
  const target = (select!.node as { SelectStmt: { targetList: { ResTarget: { val: { TypeCast: { typeName: Node } } } }[] } }).SelectStmt.targetList[0]!;
  return target.ResTarget.val.TypeCast.typeName;
}
