#!/usr/bin/env node
// Checks that the Java Nexmark generator (src/main/java/oxbow/nexmark/NexmarkGenerator.java, the
// events Flink reads in bench/vs-flink.ts) produces the same events as oxbow's
// (executor/connectors/generators/nexmark-generator.ts): it compiles the generator and DumpEvents with
// javac alone (no Flink, no Maven), prints events from a few ranges with both and compares every
// field. Needs a JDK and oxbow built (`npm run build`).
// Run: node bench/flink/check-generator.mjs [--count N] [--seed S]
// Exits 0 and prints "N passed, 0 failed" when every event matches; 1 with the first mismatches.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const at = args.indexOf(name);
  return at < 0 ? fallback : args[at + 1];
};
const count = Number(flag('--count', '20000'));
const seeds = flag('--seed', '0,42,5000000000').split(',').map(Number);

const { NexmarkGenerator } = await import(join(ROOT, 'dist', 'executor', 'connectors', 'generators', 'nexmark-generator.js'));

const classes = mkdtempSync(join(tmpdir(), 'oxbow-nexmark-java-'));
let passed = 0;
let failed = 0;
try {
  const sources = join(HERE, 'src', 'main', 'java', 'oxbow', 'nexmark');
  execFileSync('javac', ['-d', classes, join(sources, 'NexmarkGenerator.java'), join(sources, 'DumpEvents.java')], { stdio: 'inherit' });
  // The first events, a range far in (large ids, times, hot ids), and a sparse sweep past 2^31.
  const ranges = [
    { from: 0, count, step: 1 },
    { from: 123_456_789, count: Math.min(count, 5000), step: 1 },
    { from: 1, count: Math.min(count, 2000), step: 1_234_567 },
  ];
  for (const seed of seeds) {
    const generator = new NexmarkGenerator({ seed });
    for (const range of ranges) {
      const output = execFileSync('java', ['-cp', classes, 'oxbow.nexmark.DumpEvents', '--from', String(range.from), '--count', String(range.count), '--step', String(range.step), '--seed', String(seed)], { maxBuffer: 1 << 30, encoding: 'utf8' });
      const lines = output.split('\n').filter((line) => line.length > 0);
      if (lines.length !== range.count) throw new Error(`DumpEvents printed ${lines.length} events, not ${range.count}`);
      for (let i = 0; i < range.count; i++) {
        const n = range.from + i * range.step;
        const { kind, row } = generator.event(n);
        // Timestamps are microseconds in oxbow's rows, milliseconds in DumpEvents'.
        const isTime = (field) => (kind === 2 ? field === 5 : kind === 1 ? field === 5 || field === 6 : field === 6);
        const expected = [String(n), String(kind), ...row.map((value, field) => String(isTime(field) ? Number(value) / 1000 : value))];
        const actual = JSON.parse(lines[i]);
        if (JSON.stringify(actual) === JSON.stringify(expected)) {
          passed++;
        } else {
          failed++;
          if (failed <= 5) console.error(`seed ${seed} event ${n}:\n  oxbow ${JSON.stringify(expected)}\n  java  ${JSON.stringify(actual)}`);
        }
      }
    }
  }
} finally {
  rmSync(classes, { recursive: true, force: true });
}
console.log(`generator: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
