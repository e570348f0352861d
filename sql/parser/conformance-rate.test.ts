// How much of RisingWave's e2e SQL the parser accepts: every statement and query of every
// `*.slt` / `*.slt.part` file under ../shared/conformance/risingwave/e2e_test beside the checkout
// (read with the slt reader of test/slt; skipped when missing, a failure under CI=true:
// test/support/external-suites.ts). The rate is printed with every statement not parsed; the
// floor asserted is the rate measured, 1290/1290 (`SELECT * EXCEPT (...)` and `UNION
// CORRESPONDING` included), so any statement that stops parsing fails the build.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { externalSuite } from '../../test/support/external-suites.js';
import { parseSlt } from '../../test/slt/slt-file.js';
import { initParser, parse } from './index.js';

const root = externalSuite('RisingWave e2e conformance', '../shared/conformance/risingwave/e2e_test');
const MEASURED_FLOOR = 1;

function sltFiles(dir: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...sltFiles(path));
    else if (/\.slt(\.part)?$/.test(name)) files.push(path);
  }
  return files;
}

beforeAll(async () => {
  await initParser();
});

it.skipIf(root === undefined)('parses RisingWave e2e statements at or above the measured rate', () => {
  const files = sltFiles(root!);
  expect(files.length).toBeGreaterThan(40);
  let parsed = 0;
  const failures: string[] = [];
  for (const file of files) {
    for (const record of parseSlt(readFileSync(file, 'utf8'), file)) {
      if (record.kind !== 'statement' && record.kind !== 'query' && record.kind !== 'queryError') continue;
      try {
        parse(record.sql);
        parsed++;
      } catch (error) {
        failures.push(`${relative(root!, file)}:${record.line}: ${(error as Error).message}`);
      }
    }
  }
  const total = parsed + failures.length;
  const rate = parsed / total;
  console.log(`parse rate over ${files.length} RisingWave e2e files: ${parsed}/${total} = ${(rate * 100).toFixed(2)}%`);
  for (const failure of failures) console.log(`  not parsed: ${failure}`);
  expect(total).toBeGreaterThan(1000);
  expect(rate).toBeGreaterThanOrEqual(MEASURED_FLOOR);
});

const nexmarkRoot = externalSuite("RisingWave's Nexmark SQL", '../shared/nexmark/risingwave');

it.skipIf(nexmarkRoot === undefined)("parses every statement of RisingWave's nexmark benchmark SQL", () => {
  let statements = 0;
  let files = 0;
  for (const folder of ['ci_bench_sql', 'mv_sql']) {
    for (const name of readdirSync(join(nexmarkRoot!, folder)).sort()) {
      let text = readFileSync(join(nexmarkRoot!, folder, name), 'utf8');
      // Benchmark templates with ${VARIABLE} placeholders are not SQL until substituted.
      if (text.includes('${')) continue;
      // A few files carry `#` comment lines, which the benchmark harness strips.
      text = text.replace(/^#.*$/gm, '');
      statements += parse(text).length;
      files++;
    }
  }
  for (const file of sltFiles(join(nexmarkRoot!, 'e2e_data'))) {
    for (const record of parseSlt(readFileSync(file, 'utf8'), file)) if ('sql' in record) statements += parse(record.sql).length;
    files++;
  }
  console.log(`nexmark: ${statements} statements in ${files} files parse`);
  expect(files).toBeGreaterThan(150);
  expect(statements).toBeGreaterThan(files);
});
