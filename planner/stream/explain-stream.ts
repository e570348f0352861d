// EXPLAIN text of a streaming plan: one line per streaming node (children indented by two spaces),
// each saying whether it is linear or stateful and naming its state tables (id and what they hold).
// A node's details are the header the batch EXPLAIN prints for the equivalent batch node (for a
// keyed operator: its template, top to bottom, joined by " / "), so both stages read alike.

import type { Plan } from '../plan.js';
import { explainPlan } from '../explain.js';
import { streamInputs, type StateTableDeclaration, type StreamPlan } from './stream-plan.js';
import { carriesRowIds } from './unique-key.js';
import { operatorNumber } from './share.js';
import { distributionText, fragmentAt, sharedSources, type Fragment } from './parallel.js';
import { fragmentSource, keyedSourceScan, sourceFragmentText, sourceFragmentWorkers, workerGeneratedSources } from './parallel-source.js';

const PLACEHOLDER_SCAN = /^\s*Scan \.stream_input_\d+/;

function batchHeader(plan: Plan): string {
  return explainPlan(plan)[0]!;
}

/** The template's node headers without the placeholder input scans. */
function templateText(template: Plan): string {
  return explainPlan(template)
    .filter((line) => !PLACEHOLDER_SCAN.test(line))
    .map((line) => line.trim())
    .join(' / ');
}

function stateText(tables: readonly StateTableDeclaration[]): string {
  if (tables.length === 0) return '';
  return `; state: ${tables.map((table) => `#${table.tableId} ${table.purpose}`).join(', ')}`;
}

/** The key a view's rows are stored by (incrementalize.ts `viewStorageKey`), in words. */
function storedBy(plan: Extract<StreamPlan, { kind: 'StreamMaterialize' }>): string {
  const key = plan.key;
  if (key === undefined) return 'stored by row, duplicate number';
  const width = plan.columns.length;
  if (key.length === 1 && key[0] === width && plan.numbered === true) return 'stored by row number';
  if (key.length === 1 && key[0] === width) return carriesRowIds(plan.input) ? 'stored by source row id' : 'stored by () (one row)';
  return `stored by (${key.map((column) => plan.columns[column]!.name).join(', ')})`;
}

function header(plan: StreamPlan, root: StreamPlan): string {
  switch (plan.kind) {
    case 'StreamShared': {
      // Operators are numbered in pre-order from the root, as EXPLAIN ANALYZE numbers them.
      const columns = plan.map === undefined ? '' : ` (${plan.map.map((index) => plan.source.columns[index]!.name).join(', ')})`;
      return `output of operator ${operatorNumber(root, plan.source) ?? '?'}${columns}`;
    }
    case 'StreamTableScan': {
      const scan: Plan = { kind: 'Scan', relation: plan.relation, projection: plan.projection, ...(plan.filter ? { filter: plan.filter } : {}), columns: plan.columns };
      return batchHeader(scan).replace(/^Scan /, '');
    }
    case 'StreamValues':
      return batchHeader(plan.plan);
    case 'StreamFilter':
      return batchHeader({ kind: 'Filter', input: { kind: 'Values', rows: [], columns: plan.input.columns }, predicate: plan.predicate, columns: plan.columns }).replace(/^Filter /, '');
    case 'StreamProject':
      return batchHeader({ kind: 'Project', input: { kind: 'Values', rows: [], columns: plan.input.columns }, expressions: plan.expressions, columns: plan.columns }).replace(/^Project /, '');
    case 'StreamUnion':
      return 'all';
    case 'StreamLateral':
      return templateText(plan.template);
    case 'StreamMaterialize':
      return `${plan.name} ${storedBy(plan)}`;
    case 'StreamWatermarkFilter':
      return `${plan.inputs[0]!.columns[plan.column]!.name} - '${plan.delay}'::interval`;
    case 'StreamEmitOnWindowClose':
      return `on ${plan.columns[plan.column]!.name}`;
    case 'StreamDynamicFilter': {
      const bound = plan.now === undefined ? 'scalar subquery' : 'now';
      const columns = [...plan.inputs[0]!.columns, { name: bound, type: plan.key.type, tableOid: 0, columnNumber: 0 }];
      return `${batchHeader({ kind: 'Filter', input: { kind: 'Values', rows: [], columns }, predicate: plan.predicate, columns }).replace(/^Filter /, '')}`;
    }
    case 'StreamTemporalJoin': {
      const relation = plan.relation;
      const left = plan.inputs[0]!.columns;
      const lookup = plan.lookupKeys.map((key) => batchHeader({ kind: 'Filter', input: { kind: 'Values', rows: [], columns: left }, predicate: key, columns: left }).replace(/^Filter /, '')).join(', ');
      const columns = relation.columns.map((column) => column.name);
      const scan = batchHeader({ kind: 'Scan', relation, projection: plan.projection, ...(plan.filter ? { filter: plan.filter } : {}), columns: plan.projection.map((i) => ({ name: columns[i]!, type: relation.columns[i]!.type, tableOid: relation.id, columnNumber: i + 1 })) }).replace(/^Scan /, '');
      const residual = plan.residual === undefined ? '' : ' with residual';
      return `${plan.joinType} ${scan} AS OF PROCTIME() lookup ${plan.index === undefined ? '' : `index ${plan.index.name} `}(${(plan.index?.indexOn!.columns ?? relation.primaryKey).map((i) => columns[i]!).join(', ')}) = (${lookup})${plan.otherKeys === undefined ? '' : ' and other keys'}${residual}`;
    }
    default:
      return `${templateText(plan.template)}${cleaningText(plan)}`;
  }
}

/** State cleaning by watermark (EMIT ON WINDOW CLOSE): the key whose closed values' state is deleted. */
function cleaningText(plan: StreamPlan): string {
  if ((plan.kind !== 'StreamHashAggregate' && plan.kind !== 'StreamHashJoin') || plan.clean === undefined) return '';
  const at = plan.clean.key;
  const expression = plan.kind === 'StreamHashAggregate' ? plan.groupKeys[at]! : plan.keys[0]![at]!;
  const key = expression.kind === 'Column' ? plan.inputs[0]!.columns[expression.index]!.name : `key ${at + 1}`;
  return ` cleaned by watermark on ${key}`;
}

/** One line of a streaming plan's EXPLAIN: the node it describes (none for an exchange line), run by the workers or not. */
export interface StreamPlanLine {
  readonly text: string;
  readonly plan?: StreamPlan;
  readonly inWorkers: boolean;
}

function line(plan: StreamPlan, depth: number, root: StreamPlan): string {
  return `${'  '.repeat(depth)}${plan.kind} ${header(plan, root)} (${plan.property}${stateText(plan.stateTables)})`;
}

/** A node run where its parent is (the main thread); a fragment's root at parallelism N > 1. `rootWorkers`: a source fragment's workers at the root (1: none). */
function print(plan: StreamPlan, depth: number, lines: StreamPlanLine[], root: StreamPlan, parallelism: number, shared: ReadonlySet<StreamPlan>, generated: ReadonlySet<number>, rootWorkers = 1): void {
  const fragment = parallelism > 1 ? fragmentAt(plan, shared) : undefined;
  if (fragment !== undefined) {
    printFragment(fragment, plan, depth, lines, root, parallelism, shared, generated);
    return;
  }
  lines.push({ text: line(plan, depth, root), plan, inWorkers: false });
  // A source fragment: the whole view runs in N workers, each over its share of the source's split ranges.
  const source = rootWorkers > 1 && plan === root ? fragmentSource(plan) : undefined;
  if (source !== undefined) lines.push({ text: `${'  '.repeat(depth + 1)}${sourceFragmentText(source, rootWorkers)}`, inWorkers: false });
  const inputDepth = source === undefined ? depth + 1 : depth + 2;
  for (const input of streamInputs(plan)) print(input, inputDepth, lines, root, parallelism, shared, generated);
}

/** A fragment's node (run by the N workers); each cut input reaches them through a hash exchange. */
function printFragment(fragment: Fragment, plan: StreamPlan, depth: number, lines: StreamPlanLine[], root: StreamPlan, parallelism: number, shared: ReadonlySet<StreamPlan>, generated: ReadonlySet<number>): void {
  lines.push({ text: line(plan, depth, root), plan, inWorkers: true });
  for (const input of streamInputs(plan)) {
    const cut = fragment.inputs.find((candidate) => candidate.plan === input);
    if (cut === undefined) {
      printFragment(fragment, input, depth + 1, lines, root, parallelism, shared, generated);
      continue;
    }
    // An input the workers generate (a replayed generator source's chain): each worker makes its
    // share of the source's units and sends each row to the worker owning its key.
    const source = keyedSourceScan(input);
    if (source === undefined || !generated.has(source.relation.id)) {
      lines.push({ text: `${'  '.repeat(depth + 1)}StreamExchange dist by (${distributionText(cut)}) (${parallelism} workers)`, inWorkers: false });
      print(input, depth + 2, lines, root, parallelism, shared, generated);
      continue;
    }
    lines.push({ text: `${'  '.repeat(depth + 1)}StreamExchange dist by (${distributionText(cut)}) (${parallelism} workers, worker to worker)`, inWorkers: false });
    lines.push({ text: `${'  '.repeat(depth + 2)}StreamSourceFragment ${source.relation.name} split across ${parallelism} workers`, inWorkers: false });
    print(input, depth + 3, lines, root, parallelism, shared, generated);
  }
}

/**
 * EXPLAIN's lines with the node each describes; at `parallelism` > 1 a StreamExchange line above
 * each fragment input. `keyedSourceWorkers`: the engine's --keyed-source-workers (the inputs its
 * keyed fragments' workers generate, `workerGeneratedSources`). `rootFragment` false: a plan that
 * would be a source fragment runs on the main thread (a sink AS the query whose target needs its
 * change log: executor/stream/parallel/source-fragment.ts), so no StreamSourceFragment line.
 * `cores` (the engine's --cores) and `storesRows` (false: a direct sink) give a source fragment's
 * workers (`sourceFragmentWorkers`): below 2, the view runs as at parallelism 1 and EXPLAIN says so.
 */
export function explainStreamLines(plan: StreamPlan, parallelism = 1, keyedSourceWorkers = false, rootFragment = true, cores = Number.POSITIVE_INFINITY, storesRows = true): StreamPlanLine[] {
  const lines: StreamPlanLine[] = [];
  const shared = parallelism > 1 ? sharedSources(plan) : new Set<StreamPlan>();
  const generated = parallelism > 1 ? workerGeneratedSources(plan, keyedSourceWorkers, shared) : new Set<number>();
  print(plan, 0, lines, plan, parallelism, shared, generated, rootFragment ? sourceFragmentWorkers(parallelism, cores, storesRows) : 1);
  return lines;
}

/** One line per streaming node; at `parallelism` > 1 a StreamExchange line above each input of a parallel fragment. */
export function explainStreamPlan(plan: StreamPlan, parallelism = 1, keyedSourceWorkers = false, cores = Number.POSITIVE_INFINITY): string[] {
  return explainStreamLines(plan, parallelism, keyedSourceWorkers, true, cores).map((entry) => entry.text);
}
