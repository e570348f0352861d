// The one-way layer rule of DESIGN.md section 2, as a failing test:
//   pgwire -> executor -> {planner, storage} -> sql
// pgwire sees only the engine facade (executor/engine/engine.ts); planner and storage never import
// each other; storage never imports the SQL parser. bin/ is the composition root and may import all.
// Inside executor/, folders import one way (executor/README.md):
//   cluster -> engine -> ddl -> metrics -> connectors -> stream -> system -> batch -> expr -> catalog
// each folder importing only folders to its right, no file at executor/'s top level, and no cycle
// between folders (strongly connected components of the folder graph).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const layers = ['sql', 'storage', 'planner', 'executor', 'pgwire'] as const;
type Layer = (typeof layers)[number];

const allowed: Record<Layer, readonly Layer[]> = {
  sql: ['sql'],
  storage: ['storage', 'sql'],
  planner: ['planner', 'sql'],
  executor: ['executor', 'planner', 'storage', 'sql'],
  pgwire: ['pgwire', 'executor', 'sql'],
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'build') continue;
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  const pattern = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const match of text.matchAll(pattern)) found.push(match[1] ?? match[2]!);
  return found;
}

function layerOf(path: string): string {
  return relative(root, path).split(sep)[0]!;
}

describe('layer rule', () => {
  for (const layer of layers) {
    it(`${layer}/ imports only ${allowed[layer].join(', ')}`, () => {
      const violations: string[] = [];
      for (const file of sourceFiles(join(root, layer))) {
        for (const spec of imports(file)) {
          if (!spec.startsWith('.')) continue;
          const target = resolve(dirname(file), spec);
          const targetLayer = layerOf(target);
          const where = relative(root, file);
          if (!(allowed[layer] as readonly string[]).includes(targetLayer)) {
            violations.push(`${where} imports ${relative(root, target)}`);
          } else if (layer === 'pgwire' && targetLayer === 'executor' && relative(root, target) !== join('executor', 'engine', 'engine.js')) {
            violations.push(`${where} imports ${relative(root, target)} (pgwire may only use executor/engine/engine.ts)`);
          } else if (layer === 'storage' && relative(root, target).startsWith(`sql${sep}parser`)) {
            violations.push(`${where} imports the parser`);
          }
        }
      }
      expect(violations).toEqual([]);
    });
  }
});

// Folders of executor/, top to bottom: each may import only the folders after it.
const executorFolders = ['cluster', 'engine', 'ddl', 'metrics', 'connectors', 'stream', 'system', 'batch', 'expr', 'catalog'] as const;
const executorRoot = join(root, 'executor');

/** The folder of executor/ a path is in ('' for a file at the top level). */
function executorFolderOf(path: string): string {
  const parts = relative(executorRoot, path).split(sep);
  return parts.length > 1 ? parts[0]! : '';
}

/** Imports between executor folders, tests' helpers left out: `from -> to -> files`. */
function executorFolderGraph(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sourceFiles(executorRoot)) {
    if (relative(executorRoot, file).split(sep).includes('tests')) continue;
    const from = executorFolderOf(file);
    for (const spec of imports(file)) {
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec);
      if (relative(executorRoot, target).startsWith('..')) continue;
      const to = executorFolderOf(target);
      if (to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, edges);
      edges.set(to, [...(edges.get(to) ?? []), `${relative(root, file)} imports ${relative(root, target)}`]);
    }
  }
  return graph;
}

/** Tarjan's strongly connected components of a directed graph. */
function stronglyConnected(nodes: readonly string[], edges: (node: string) => Iterable<string>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of edges(node)) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component);
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return components;
}

describe('executor folders', () => {
  const graph = executorFolderGraph();

  it('keep no source file at executor/ top level', () => {
    const topLevel = readdirSync(executorRoot).filter((name) => name.endsWith('.ts'));
    expect(topLevel).toEqual([]);
  });

  it(`import one way: ${executorFolders.join(' -> ')}`, () => {
    const violations: string[] = [];
    for (const [from, edges] of graph) {
      const rank = (executorFolders as readonly string[]).indexOf(from);
      for (const [to, files] of edges) {
        const target = (executorFolders as readonly string[]).indexOf(to);
        if (rank < 0 || target < 0 || target < rank) violations.push(...files.map((file) => `${file} (${from || 'top level'} -> ${to || 'top level'})`));
      }
    }
    expect(violations).toEqual([]);
  });

  it('have no import cycle between them', () => {
    const nodes = [...new Set([...graph.keys(), ...[...graph.values()].flatMap((edges) => [...edges.keys()])])];
    const cycles = stronglyConnected(nodes, (node) => graph.get(node)?.keys() ?? []).filter((component) => component.length > 1);
    expect(cycles.map((component) => component.sort().join(' <-> '))).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const edges: Record<string, string[]> = { a: ['b'], b: ['c'], c: ['a'], d: ['a'] };
    const cycles = stronglyConnected(Object.keys(edges), (node) => edges[node] ?? []).filter((component) => component.length > 1);
    expect(cycles.map((component) => component.sort())).toEqual([['a', 'b', 'c']]);
  });
});
