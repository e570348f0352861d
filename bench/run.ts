// `npm run bench [-- SUITE ...] [--out FILE] [--scale X]`: runs the benchmark suites of bench/
// one after another, each in its own process so one suite's heap and native state do not skew
// the next, and passes their JSON lines {"bench","metric","value","unit"} through to stdout (and
// to FILE with --out). Suites: the other files of this folder, by stem (storage, stream, ...);
// without a suite named, all of them but vs-flink (Apache Flink side by side: only when named).
// --scale sets BENCH_SCALE for the suites that read it (a quick run: --scale 0.1). Any other flag
// is passed to the suites: `--flag value` (nexmark: --queries q0,q1 --events N), a switch with no
// value (kafka: --skip-generator), or `--flag=value` (support/run-args.ts says how they are told
// apart). An unknown suite or a malformed flag is refused with the usage.

import { spawn } from 'node:child_process';
import { appendFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRunArguments, RunArgumentError, type RunArguments } from './support/run-args.js';

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((name) => name.endsWith('.js') && name !== 'run.js')
  .map((name) => name.slice(0, -3))
  .sort();
/** Suites run only when named: vs-flink builds and runs Apache Flink (bench/flink/), minutes a query. */
const byNameOnly = new Set(['vs-flink']);

function usage(message?: string): never {
  if (message !== undefined) console.error(`bench: ${message}`);
  console.error(`usage: npm run bench -- [SUITE ...] [--out FILE] [--scale X] [--FLAG [VALUE] | --FLAG=VALUE for the suites]\nsuites: ${available.join(', ')}`);
  process.exit(2);
}

let parsed: RunArguments;
try {
  parsed = parseRunArguments(process.argv.slice(2), available);
} catch (error) {
  if (error instanceof RunArgumentError) usage(error.message);
  throw error;
}
if (parsed.help) usage();
const { suites, out, scale, suiteArgs } = parsed;
if (out !== undefined) writeFileSync(out, '');

function runSuite(suite: string): Promise<number> {
  return new Promise((resolve) => {
    const env = { ...process.env, ...(scale === undefined ? {} : { BENCH_SCALE: scale }) };
    const child = spawn(process.execPath, [join(here, `${suite}.js`), ...suiteArgs], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let partial = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        process.stdout.write(`${line}\n`);
        if (out !== undefined && line.startsWith('{')) appendFileSync(out, `${line}\n`);
      }
    });
    child.on('close', (code) => {
      if (partial.length > 0) process.stdout.write(`${partial}\n`);
      resolve(code ?? 1);
    });
  });
}

let failed = 0;
for (const suite of suites.length > 0 ? suites : available.filter((name) => !byNameOnly.has(name))) {
  console.error(`bench: ${suite}`);
  const code = await runSuite(suite);
  if (code !== 0) {
    failed++;
    console.error(`bench: ${suite} exited with ${code}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
