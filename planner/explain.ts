// EXPLAIN text: one line per plan node, children indented by two spaces, subquery plans listed
// under the node that evaluates them. Deterministic (no costs, no addresses, no ids that depend on
// allocation order), so golden files can compare it. Column references print the input column's
// name, with `#position` appended only where two input columns share the name.

import type { DataType } from '../sql/types.js';
import type { Value } from '../sql/value.js';
import { formatValue } from '../sql/functions.js';
import type { Expression } from './expression.js';
import type { OutputColumn, Plan, PlanKind, PlanOf, SortKey, AggregateCall, WindowCall } from './plan.js';
import { inputs } from './plan.js';

export interface ExplainOptions {
  readonly verbose: boolean;
}

interface Printer {
  readonly lines: string[];
  readonly options: ExplainOptions;
  subplans: { readonly label: string; readonly plan: Plan }[];
}

function typeName(t: DataType): string {
  if (t.name === 'array') return `${t.element ? typeName(t.element) : 'unknown'}[]`;
  return t.name;
}

function literal(value: Value, type: DataType): string {
  if (value === null) return 'NULL';
  if ((typeof value === 'number' && (type.name === 'int4' || type.name === 'int2')) || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return String(value);
  let text: string;
  try {
    text = formatValue(value, type);
  } catch {
    text = typeof value === 'bigint' || typeof value === 'number' || typeof value === 'string' ? String(value) : `<${typeName(type)}>`;
  }
  if (type.name === 'numeric' && /^-?[0-9.]+$/.test(text)) return text;
  const quoted = `'${text.replaceAll("'", "''")}'`;
  return type.name === 'text' || type.name === 'unknown' ? quoted : `${quoted}::${typeName(type)}`;
}

function columnName(columns: readonly OutputColumn[], index: number): string {
  const column = columns[index];
  if (column === undefined) return `#${index}`;
  const duplicated = columns.some((c, i) => i !== index && c.name === column.name);
  return duplicated ? `${column.name}#${index}` : column.name;
}

function expressionText(e: Expression, columns: readonly OutputColumn[], printer: Printer): string {
  const text = (x: Expression) => expressionText(x, columns, printer);
  switch (e.kind) {
    case 'Literal':
      return literal(e.value, e.type);
    case 'Column':
      return columnName(columns, e.index);
    case 'OuterColumn':
      return `outer${e.depth === 1 ? '' : e.depth}.#${e.index}`;
    case 'Parameter':
      return `$${e.index + 1}`;
    case 'Call':
      if (e.operator !== undefined) return e.args.length === 1 ? `(${e.operator} ${text(e.args[0]!)})` : `(${text(e.args[0]!)} ${e.operator} ${text(e.args[1]!)})`;
      return `${e.fn.name}(${e.args.map(text).join(', ')})`;
    case 'Cast':
      return `${text(e.input)}::${typeName(e.type)}`;
    case 'And':
      return `(${e.args.map(text).join(' AND ')})`;
    case 'Or':
      return `(${e.args.map(text).join(' OR ')})`;
    case 'Not':
      return `(NOT ${text(e.arg)})`;
    case 'IsNull':
      return `(${text(e.arg)} IS ${e.negated ? 'NOT ' : ''}NULL)`;
    case 'IsBoolean':
      return `(${text(e.arg)} IS ${e.negated ? 'NOT ' : ''}${e.test.toUpperCase()})`;
    case 'IsDistinct':
      return `(${text(e.left)} IS ${e.negated ? 'NOT ' : ''}DISTINCT FROM ${text(e.right)})`;
    case 'Case':
      return `CASE ${e.whens.map((w) => `WHEN ${text(w.condition)} THEN ${text(w.result)}`).join(' ')} ELSE ${text(e.otherwise)} END`;
    case 'Coalesce':
      return `COALESCE(${e.args.map(text).join(', ')})`;
    case 'NullIf':
      return `NULLIF(${text(e.left)}, ${text(e.right)})`;
    case 'MinMax':
      return `${e.which.toUpperCase()}(${e.args.map(text).join(', ')})`;
    case 'Array':
      return `ARRAY[${e.elements.map(text).join(', ')}]`;
    case 'ArrayCompare':
      return `(${text(e.test)} ${e.compare.name} ${e.all ? 'ALL' : 'ANY'}(${text(e.array)}))`;
    case 'Subquery': {
      const label = `SubPlan ${printer.subplans.length + 1}${e.correlated ? ' (correlated)' : ''}`;
      printer.subplans.push({ label, plan: e.plan });
      const name = `(SubPlan ${printer.subplans.length})`;
      switch (e.mode) {
        case 'scalar':
          return name;
        case 'exists':
          return `EXISTS${name}`;
        case 'array':
          return `ARRAY${name}`;
        case 'any':
        case 'all':
          return `(${text(e.test!)} ${e.compare!.name} ${e.mode.toUpperCase()}${name})`;
      }
    }
  }
}

function sortText(keys: readonly SortKey[], columns: readonly OutputColumn[], printer: Printer): string {
  return keys
    .map((k) => `${expressionText(k.expression, columns, printer)}${k.descending ? ' DESC' : ''}${k.nullsFirst !== k.descending ? (k.nullsFirst ? ' NULLS FIRST' : ' NULLS LAST') : ''}`)
    .join(', ');
}

function aggregateText(a: AggregateCall, columns: readonly OutputColumn[], printer: Printer): string {
  const args = a.args.length === 0 ? '*' : a.args.map((x) => expressionText(x, columns, printer)).join(', ');
  const order = a.orderBy ? ` ORDER BY ${sortText(a.orderBy, columns, printer)}` : '';
  const filter = a.filter ? ` FILTER (WHERE ${expressionText(a.filter, columns, printer)})` : '';
  return `${a.name}(${a.distinct ? 'DISTINCT ' : ''}${args}${order})${filter}`;
}

function windowText(w: WindowCall, columns: readonly OutputColumn[], printer: Printer): string {
  const args = w.args.map((x) => expressionText(x, columns, printer)).join(', ');
  const parts: string[] = [];
  if (w.partitionBy.length) parts.push(`PARTITION BY ${w.partitionBy.map((x) => expressionText(x, columns, printer)).join(', ')}`);
  if (w.orderBy.length) parts.push(`ORDER BY ${sortText(w.orderBy, columns, printer)}`);
  const bound = (b: WindowCall['frame']['start'] | WindowCall['frame']['end']) =>
    b.range !== undefined ? `${expressionText(b.range.value, [], printer)} ${b.kind}` : b.offset === undefined ? b.kind : `${b.offset} ${b.kind}`;
  parts.push(`${w.frame.mode.toUpperCase()} ${bound(w.frame.start)} TO ${bound(w.frame.end)}`);
  return `${w.name}(${args}) OVER (${parts.join(' ')})`;
}

const list = (items: readonly string[]) => items.join(', ');
const joinColumns = (p: { left: Plan; right: Plan }) => [...p.left.columns, ...p.right.columns];

type Header = { [K in PlanKind]: (plan: PlanOf<K>, printer: Printer) => string };

const HEADERS: Header = {
  Scan: (p, pr) => {
    const all = p.relation.columns.map((c) => c.name).concat(['oxbow_valid_from', 'oxbow_valid_to']);
    let text = `Scan ${p.relation.schema}.${p.relation.name} [${list(p.projection.map((i) => all[i]!))}]`;
    if (p.systemTime?.kind === 'asOf') text += ` AS OF ${expressionText(p.systemTime.at, [], pr)}`;
    if (p.systemTime?.kind === 'proctime') text += ' AS OF PROCTIME()';
    if (p.systemTime?.kind === 'between') text += ` BETWEEN ${expressionText(p.systemTime.from, [], pr)} AND ${expressionText(p.systemTime.to, [], pr)}`;
    if (p.lookup) {
      const key = `(${list(p.relation.primaryKey.map((i) => all[i]!))})`;
      const tuples = p.lookup.map((t) => `(${list(t.map((e) => expressionText(e, [], pr)))})`);
      text += tuples.length === 1 ? ` lookup ${key} = ${tuples[0]}` : ` lookup ${key} IN (${list(tuples)})`;
    }
    if (p.indexLookup) {
      const index = p.indexLookup.index;
      const key = `(${list(index.indexOn!.columns.slice(0, p.indexLookup.keys[0]!.length).map((i) => all[i]!))})`;
      const tuples = p.indexLookup.keys.map((t) => `(${list(t.map((e) => expressionText(e, [], pr)))})`);
      text += tuples.length === 1 ? ` index lookup ${index.name} ${key} = ${tuples[0]}` : ` index lookup ${index.name} ${key} IN (${list(tuples)})`;
    }
    if (p.filter) text += ` filter=${expressionText(p.filter, p.columns, pr)}`;
    return text;
  },
  Values: (p, pr) => (p.rows.length <= 3 ? `Values ${p.rows.map((r) => `(${list(r.map((e) => expressionText(e, [], pr)))})`).join(', ')}` : `Values ${p.rows.length} rows`),
  TableFunction: (p, pr) => `TableFunction ${p.name}(${list(p.args.map((e) => expressionText(e, [], pr)))})${p.withOrdinality ? ' WITH ORDINALITY' : ''}`,
  Filter: (p, pr) => `Filter ${expressionText(p.predicate, p.input.columns, pr)}`,
  Project: (p, pr) => `Project ${list(p.expressions.map((e, i) => {
    const text = expressionText(e, p.input.columns, pr);
    return text === p.columns[i]!.name ? text : `${text} AS ${p.columns[i]!.name}`;
  }))}`,
  Join: (p, pr) => `Join ${p.joinType}${p.lateral ? ' lateral' : ''}${p.condition ? ` on ${expressionText(p.condition, joinColumns(p), pr)}` : ''}`,
  HashJoin: (p, pr) => {
    const keys = p.leftKeys.map((k, i) => `${expressionText(k, p.left.columns, pr)} ${p.nullSafe?.[i] ? 'IS NOT DISTINCT FROM' : '='} ${expressionText(p.rightKeys[i]!, p.right.columns, pr)}`);
    return `HashJoin ${p.joinType} on ${list(keys)}${p.residual ? ` residual ${expressionText(p.residual, joinColumns(p), pr)}` : ''}`;
  },
  NestedLoopJoin: (p, pr) => `NestedLoopJoin ${p.joinType}${p.lateral ? ' lateral' : ''}${p.condition ? ` on ${expressionText(p.condition, joinColumns(p), pr)}` : ''}`,
  Aggregate: (p, pr) => {
    const keys = p.groupKeys.length ? ` group by ${list(p.groupKeys.map((k) => expressionText(k, p.input.columns, pr)))}` : '';
    const sets = p.groupingSets === undefined ? '' : ` sets ${p.groupingSets.map((set) => `(${set.map((k) => k + 1).join(', ')})`).join(' ')}`;
    const grouping = p.groupingCalls === undefined ? '' : ` ${p.groupingCalls.map((args) => `grouping(${args.map((k) => k + 1).join(', ')})`).join(', ')}`;
    const parallel = p.parallel === undefined ? '' : ` (${p.parallel} workers, by key range)`;
    const name = p.parallel === undefined ? 'Aggregate' : 'ParallelAggregate';
    return `${name} ${list(p.aggregates.map((a) => aggregateText(a, p.input.columns, pr)))}${keys}${sets}${grouping}${parallel}`.replace('Aggregate  group', 'Aggregate group');
  },
  Window: (p, pr) => `Window ${list(p.calls.map((w) => windowText(w, p.input.columns, pr)))}`,
  Sort: (p, pr) => `Sort ${sortText(p.keys, p.input.columns, pr)}${p.topN ? ` top ${expressionText(p.topN.limit, [], pr)}${p.topN.offset ? ` + ${expressionText(p.topN.offset, [], pr)}` : ''}` : ''}`,
  Limit: (p, pr) => `Limit${p.limit ? ` ${expressionText(p.limit, [], pr)}` : ''}${p.withTies ? ' with ties' : ''}${p.offset ? ` offset ${expressionText(p.offset, [], pr)}` : ''}`,
  Distinct: (p, pr) => (p.on ? `Distinct on ${list(p.on.map((e) => expressionText(e, p.input.columns, pr)))}` : 'Distinct'),
  RecursiveUnion: (p) => `RecursiveUnion${p.all ? ' all' : ''} #${p.id}`,
  WorkTable: (p) => `WorkTable ${p.name} #${p.id}`,
  SetOperation: (p) => `${p.operation[0]!.toUpperCase()}${p.operation.slice(1)}${p.all ? ' all' : ''}`,
  Insert: (p, pr) => {
    const conflict = p.onConflict ? ` on conflict do ${p.onConflict.action}` : '';
    const returning = p.returning ? ` returning ${list(p.returning.map((e) => expressionText(e, relationColumns(p.relation), pr)))}` : '';
    return `Insert ${p.relation.schema}.${p.relation.name}${conflict}${returning}`;
  },
  Update: (p, pr) => `Update ${p.relation.schema}.${p.relation.name} set ${list(p.assignments.map((a) => `${p.relation.columns[a.column]!.name} = ${expressionText(a.value, p.input.columns, pr)}`))}`,
  Delete: (p) => `Delete ${p.relation.schema}.${p.relation.name}`,
};

function relationColumns(relation: PlanOf<'Insert'>['relation']): OutputColumn[] {
  return relation.columns.map((c) => ({ name: c.name, type: c.type, tableOid: 0, columnNumber: 0 }));
}

function print(plan: Plan, depth: number, printer: Printer): void {
  const saved = printer.subplans;
  printer.subplans = [];
  const header = (HEADERS[plan.kind] as (p: Plan, pr: Printer) => string)(plan, printer);
  const indent = '  '.repeat(depth);
  printer.lines.push(`${indent}${header}`);
  if (printer.options.verbose) {
    printer.lines.push(`${indent}  output: ${list(plan.columns.map((c) => `${c.name} ${typeName(c.type)}`))}`);
  }
  const subplans = printer.subplans;
  printer.subplans = saved;
  for (const sub of subplans) {
    printer.lines.push(`${indent}  ${sub.label}`);
    print(sub.plan, depth + 2, printer);
  }
  for (const input of inputs(plan)) print(input, depth + 1, printer);
}

export function explainPlan(plan: Plan, options: ExplainOptions = { verbose: false }): string[] {
  const printer: Printer = { lines: [], options, subplans: [] };
  print(plan, 0, printer);
  return printer.lines;
}
