// Value library throughput: nanoseconds per value for PostgreSQL text output (formatValue) and
// input (parseValue) of the common types, compareValues/hashValue, and numeric arithmetic, over
// batches of 10,000 prepared values (the per-value cost the wire protocol, COPY and sorting pay).
// Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && node dist/bench/values.js

import { DEFAULT_EVAL_CONTEXT, compareValues, formatValue, hashValue, parseValue } from '../sql/functions.js';
import { Numeric } from '../sql/numeric.js';
import { type, type DataType } from '../sql/types.js';
import type { Value } from '../sql/value.js';

const BATCH = 10_000;

function nanosecondsPerValue(run: () => void): number {
  for (let index = 0; index < 3; index++) run();
  let rounds = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0n;
  while (elapsed < 300_000_000n) {
    run();
    rounds++;
    elapsed = process.hrtime.bigint() - start;
  }
  return Number(elapsed) / (rounds * BATCH);
}

function report(metric: string, value: number): void {
  console.log(JSON.stringify({ bench: 'values', metric, value: Number(value.toFixed(1)), unit: 'ns/value' }));
}

let seed = 42;
function random(): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

const samples: [string, DataType, () => string][] = [
  ['int4', type('int4'), () => String(Math.floor(random() * 2e9) - 1e9)],
  ['int8', type('int8'), () => String(BigInt(Math.floor(random() * 1e15)) * 1000n)],
  ['float8', type('float8'), () => String(random() * 1e6)],
  ['numeric', type('numeric'), () => (random() * 1e6).toFixed(4)],
  ['text', type('text'), () => `name-${Math.floor(random() * 1e6)}`],
  ['date', type('date'), () => `20${10 + Math.floor(random() * 20)}-0${1 + Math.floor(random() * 9)}-1${Math.floor(random() * 9)}`],
  ['timestamp', type('timestamp'), () => `2024-03-1${Math.floor(random() * 9)} 12:34:56.${Math.floor(random() * 999999)}`],
  ['timestamptz', type('timestamptz'), () => `2024-03-1${Math.floor(random() * 9)} 12:34:56+02`],
  ['interval', type('interval'), () => `${Math.floor(random() * 30)} days ${Math.floor(random() * 24)}:00:00`],
  ['jsonb', type('jsonb'), () => `{"id": ${Math.floor(random() * 1e6)}, "tags": ["a", "b"], "price": ${(random() * 100).toFixed(2)}}`],
];

for (const [name, dataType, make] of samples) {
  const texts = Array.from({ length: BATCH }, make);
  const values: Value[] = texts.map((text) => parseValue(text, dataType));
  report(`parseValue ${name}`, nanosecondsPerValue(() => {
    for (let index = 0; index < BATCH; index++) parseValue(texts[index]!, dataType, DEFAULT_EVAL_CONTEXT);
  }));
  report(`formatValue ${name}`, nanosecondsPerValue(() => {
    for (let index = 0; index < BATCH; index++) formatValue(values[index]!, dataType, DEFAULT_EVAL_CONTEXT);
  }));
  report(`compareValues ${name}`, nanosecondsPerValue(() => {
    for (let index = 1; index < BATCH; index++) compareValues(values[index - 1]!, values[index]!, dataType);
  }));
  report(`hashValue ${name}`, nanosecondsPerValue(() => {
    for (let index = 0; index < BATCH; index++) hashValue(values[index]!, dataType);
  }));
}

const numerics = Array.from({ length: BATCH }, () => Numeric.parse((random() * 1e6).toFixed(4)));
report('numeric add', nanosecondsPerValue(() => {
  let sum = Numeric.ZERO;
  for (let index = 0; index < BATCH; index++) sum = sum.add(numerics[index]!);
}));
report('numeric multiply', nanosecondsPerValue(() => {
  for (let index = 1; index < BATCH; index++) numerics[index - 1]!.multiply(numerics[index]!);
}));
report('numeric divide', nanosecondsPerValue(() => {
  for (let index = 1; index < BATCH; index++) numerics[index - 1]!.divide(numerics[index]!);
}));
