// A sink delivery's cost as its relation grows: a `blackhole` sink of a table (`FROM t`, reading the
// table's versions) and of a query over it (`AS SELECT id, v FROM t`, reading its change log), each
// in its own engine on RocksDB (barrier 10 ms). The table grows to each size in statements of
// 50,000 rows; at each size, 1,000 new rows in one INSERT, timed from the INSERT's return until the
// sink has delivered them (oxbow_catalog.sink_status, polled every 2 ms), five times, the median
// reported. A delivery that reads only its changes stays flat; one that scans the relation grows
// with it.
// Prints JSON lines {"bench":"sink-delivery","metric":"delivery_ms_<form>_<rows>","value","unit"}.
// Run: npm run build && npm run bench -- sink-delivery [--sizes 100000,200000,400000,800000] [--forms from,as]

import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { flag, median, milliseconds, openBenchEngine, reporter } from './support/harness.js';

const report = reporter('sink-delivery', 1);
const BATCH = 1000;
const ROUNDS = 5;

async function measure(form: string, sizes: readonly number[]): Promise<void> {
  const bench = await openBenchEngine('sink-delivery', { barrierIntervalMs: 10, memoryLimitBytes: 1 << 30 });
  try {
    const { run } = bench;
    await run('CREATE TABLE t (id int8 PRIMARY KEY, v int8)');
    await run(form === 'from' ? "CREATE SINK s FROM t WITH (connector = 'blackhole')" : "CREATE SINK s AS SELECT id, v FROM t WITH (connector = 'blackhole')");
    const delivered = async (): Promise<number> => Number((await run("SELECT coalesce(sum(rows_delivered), 0) FROM oxbow_catalog.sink_status WHERE sink_name = 's'"))[0]?.[0] ?? 0);
    const waitFor = async (count: number): Promise<void> => {
      while ((await delivered()) < count) await new Promise((resolve) => setTimeout(resolve, 2));
    };
    let rows = 0;
    const insert = async (count: number): Promise<void> => {
      await run(`INSERT INTO t SELECT g, g * 7 FROM generate_series(${rows + 1}, ${rows + count}) AS g`);
      rows += count;
    };
    for (const size of sizes) {
      while (rows < size) await insert(Math.min(50_000, size - rows));
      await waitFor(rows);
      const times: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const target = (await delivered()) + BATCH;
        await insert(BATCH);
        const start = process.hrtime.bigint();
        await waitFor(target);
        times.push(milliseconds(start));
      }
      report(`delivery_ms_${form}_${size}`, median(times), 'ms');
    }
  } finally {
    await bench.close();
  }
}

async function main(): Promise<void> {
  const sizes = (flag('--sizes') ?? '100000,200000,400000,800000').split(',').map(Number);
  const forms = (flag('--forms') ?? 'from,as').split(',');
  for (const size of sizes) if (!(size > 0) || !Number.isSafeInteger(size)) throw new Error(`--sizes must be positive integers, not ${String(size)}`);
  for (const form of forms) if (form !== 'from' && form !== 'as') throw new Error(`--forms takes from and as, not ${form}`);
  for (const form of forms) await measure(form, sizes);
  report('load_average_1m', loadavg()[0]!, 'load');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
