// Parser throughput: microseconds per statement for PostgreSQL's grammar alone (libpg-query
// parseSync) and for oxbow's parse() (tokenizer + extension layer + grammar + location mapping),
// on a simple query, a 10-way join, a query with FOR SYSTEM_TIME, and RisingWave's nexmark
// CREATE SOURCE. Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && node dist/bench/parser.js

import { parseSync } from 'libpg-query';
import { initParser, parse } from '../sql/parser/index.js';

const simple = 'SELECT id, name FROM users WHERE id = 42';
const tables = Array.from({ length: 10 }, (_, index) => `t${index}`);
const join10 = `SELECT ${tables.map((table) => `${table}.v`).join(', ')} FROM t0 ${tables
  .slice(1)
  .map((table, index) => `JOIN ${table} ON ${table}.k = t${index}.k`)
  .join(' ')} WHERE t0.v > 10 ORDER BY 1 LIMIT 100`;
const timeTravel = "SELECT * FROM mv FOR SYSTEM_TIME AS OF now() - interval '5 minutes' AS m JOIN t ON m.k = t.k";
const source = `CREATE SOURCE nexmark (event_type BIGINT, bid STRUCT<auction BIGINT, price BIGINT, date_time TIMESTAMP>,
  date_time TIMESTAMP AS (bid).date_time, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
  WITH (connector = 'nexmark', nexmark.split.num = '2') FORMAT PLAIN ENCODE JSON`;

function microsecondsPerCall(run: () => void): number {
  for (let index = 0; index < 200; index++) run();
  let iterations = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0n;
  while (elapsed < 500_000_000n) {
    for (let index = 0; index < 100; index++) run();
    iterations += 100;
    elapsed = process.hrtime.bigint() - start;
  }
  return Number(elapsed) / 1000 / iterations;
}

function report(metric: string, value: number): void {
  console.log(JSON.stringify({ bench: 'parser', metric, value: Number(value.toFixed(1)), unit: 'us/statement' }));
}

await initParser();
report('libpg-query simple select', microsecondsPerCall(() => parseSync(simple)));
report('oxbow parse simple select', microsecondsPerCall(() => parse(simple)));
report('libpg-query 10-way join', microsecondsPerCall(() => parseSync(join10)));
report('oxbow parse 10-way join', microsecondsPerCall(() => parse(join10)));
report('oxbow parse FOR SYSTEM_TIME join', microsecondsPerCall(() => parse(timeTravel)));
report('oxbow parse nexmark CREATE SOURCE', microsecondsPerCall(() => parse(source)));
