// The one-way layer rule of DESIGN.md section 2, as a failing test:
//   pgwire -> executor -> {planner, storage} -> sql
// pgwire sees only the engine facade (executor/engine.ts); planner and storage never import each
// other; storage never imports the SQL parser. bin/ is the composition root and may import all.
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
          } else if (layer === 'pgwire' && targetLayer === 'executor' && !relative(root, target).startsWith(`executor${sep}engine`)) {
            violations.push(`${where} imports ${relative(root, target)} (pgwire may only use executor/engine.ts)`);
          } else if (layer === 'storage' && relative(root, target).startsWith(`sql${sep}parser`)) {
            violations.push(`${where} imports the parser`);
          }
        }
      }
      expect(violations).toEqual([]);
    });
  }
});
