// The test files are type-checked too: tsconfig.json (the build) leaves out *.test.ts and test/,
// and vitest strips types without checking them, so a wrong name or a stale call in a test surfaced
// only when that line ran. tsconfig.test.json checks everything the build checks plus every test.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');

it('every source, bench and test file type-checks (tsc -p tsconfig.test.json)', () => {
  let output = '';
  try {
    execFileSync(process.execPath, [resolve(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.test.json'], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    output = `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message;
  }
  expect(output.split('\n').filter((line) => line.includes('error TS'))).toEqual([]);
}, 600_000);
