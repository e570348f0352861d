#!/usr/bin/env node
// Checks that Flink computes what oxbow computes: for each query, oxbow's view (bench/nexmark.js's
// runNexmarkQuery, the view read after the last event commits) and the Flink job's final rows
// (RunQuery --collect: the query's changes applied to a multiset) over the same events, compared
// as multisets. Values compare as strings: integers as they are, timestamps in milliseconds,
// decimals with a fraction rounded half up to 2 places (Flink's average is a DECIMAL(38, 6), oxbow's
// a numeric).
// Needs oxbow built (`npm run build`), the Flink jar (`mvn -q -f bench/flink/pom.xml package`) and
// oxbow's queries in bench/nexmark/.
// Run: node bench/flink/check-results.mjs [--queries q0,q4] [--events 20000] [--parallelism P (Flink's)]
//   [--form view|window] (oxbow's form, bench/nexmark.ts: window reads q5, q7 and q8's qN-window.sql
//   views; Flink runs the same job either way; the sink form keeps no rows to compare)
// q12 (processing time) has no fixed answer and q6 no Flink job (Flink's OVER window takes no
// retractions). Prints "N passed, N failed" (a query each; a run that fails is a failure) and
// exits 1 on a difference.

import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const at = args.indexOf(name);
  return at < 0 ? fallback : args[at + 1];
};
const queries = flag('--queries', 'q0,q1,q2,q3,q4,q5,q7,q8').split(',');
const events = Number(flag('--events', '20000'));
const parallelism = flag('--parallelism', '1');
const form = flag('--form', 'view');
if (form !== 'view' && form !== 'window') {
  console.error(`check-results: --form must be view or window (a sink keeps no rows to compare), not ${form}`);
  process.exit(2);
}

const { runNexmarkQuery } = await import(join(ROOT, 'dist', 'bench', 'nexmark.js'));

/** A decimal string rounded half up (away from zero) to `places` places. */
function roundDecimal(text, places) {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const digits = BigInt(whole + fraction.padEnd(places + 1, '0').slice(0, places + 1));
  let scaled = digits / 10n + (digits % 10n >= 5n ? 1n : 0n);
  const body = scaled.toString().padStart(places + 1, '0');
  const rounded = `${body.slice(0, -places)}.${body.slice(-places)}`;
  return scaled === 0n || !negative ? rounded : `-${rounded}`;
}

/** PostgreSQL's type ids of timestamp and timestamptz (a number in microseconds in oxbow's rows). */
const TIMESTAMP_TYPES = new Set([1114, 1184]);

/** oxbow's value as Flink's collect prints it; `type` is its column's type id. */
function oxbowValue(value, type) {
  if (value === null) return null;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return String(TIMESTAMP_TYPES.has(type) ? value / 1000 : value); // a timestamp in ms, as Flink prints it
  if (typeof value === 'string') return value;
  return decimal(String(value)); // a Numeric
}

/** A decimal with a fraction rounded to 2 places; an integer as it is (sum(bigint): numeric in oxbow, BIGINT in Flink). */
function decimal(text) {
  return /^-?\d+\.\d+$/.test(text) ? roundDecimal(text, 2) : text;
}

function flinkValue(value) {
  return typeof value === 'string' ? decimal(value) : value;
}

let passed = 0;
let failed = 0;
for (const query of queries) {
  try {
    await check(query);
  } catch (error) {
    failed++;
    console.log(`${query}: failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
}
console.log(`results: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

async function check(query) {
  let oxbowRows = [];
  let types = [];
  await runNexmarkQuery({
    query,
    events,
    form,
    inspect: async (run) => {
      oxbowRows = await run(`SELECT * FROM nexmark_${query}`);
      const columns = await run(`SELECT a.atttypid FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_class AS c ON a.attrelid = c.oid WHERE c.relname = 'nexmark_${query}' AND a.attnum > 0 ORDER BY a.attnum`);
      types = columns.map((column) => Number(column[0]));
    },
  });
  const oxbow = oxbowRows.map((row) => JSON.stringify(row.map((value, i) => oxbowValue(value, types[i])))).sort();
  const output = execFileSync('java', ['-cp', `${join(HERE, 'target', 'oxbow-flink-nexmark.jar')}:${join(HERE, 'target', 'lib', '*')}`, 'oxbow.nexmark.RunQuery', '--query', query, '--events', String(events), '--sql', join(HERE, 'queries', `${query}.sql`), '--parallelism', parallelism, '--collect'], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] });
  const flink = output.split('\n').filter((line) => line.startsWith('[')).map((line) => JSON.stringify(JSON.parse(line).map(flinkValue))).sort();
  const onlyOxbow = [];
  const onlyFlink = [];
  let i = 0;
  let j = 0;
  while (i < oxbow.length || j < flink.length) {
    if (j >= flink.length || (i < oxbow.length && oxbow[i] < flink[j])) onlyOxbow.push(oxbow[i++]);
    else if (i >= oxbow.length || flink[j] < oxbow[i]) onlyFlink.push(flink[j++]);
    else {
      i++;
      j++;
    }
  }
  if (onlyOxbow.length === 0 && onlyFlink.length === 0 && oxbow.length > 0) {
    passed++;
    console.log(`${query}: ${oxbow.length} rows, equal`);
  } else {
    failed++;
    console.log(`${query}: oxbow ${oxbow.length} rows, flink ${flink.length}; only in oxbow ${onlyOxbow.length}, only in flink ${onlyFlink.length}`);
    for (const row of onlyOxbow.slice(0, 3)) console.log(`  oxbow ${row}`);
    for (const row of onlyFlink.slice(0, 3)) console.log(`  flink ${row}`);
  }
}
