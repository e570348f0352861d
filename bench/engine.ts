// The engine facade without the wire: single-row INSERT statements per second (each one a parse,
// plan, execute and a WAL-synced commit of its own epoch), COPY FROM STDIN rows per second (text
// format, one epoch for the whole load), a full scan, and a catalog query (psql's \d), on the
// RocksDB store in a temporary directory. Prints JSON lines {"bench","metric","value","unit"}.
// Run: npm run build && node dist/bench/engine.js

import { openBenchEngine, reporter, seconds } from './support/harness.js';

const bench = await openBenchEngine('engine');
const session = bench.session;
/** Runs SQL; the number of rows the last statement returned. */
const run = async (sql: string): Promise<number> => (await bench.run(sql)).length;
const report = reporter('engine', 1);

await run('create table single (id int primary key, v text)');
const inserts = 2000;
let start = process.hrtime.bigint();
for (let index = 0; index < inserts; index++) await run(`insert into single values (${index}, 'value ${index}')`);
report('single-row INSERT (own epoch, WAL-synced)', inserts / seconds(start), 'statements/s');

await run('create table loaded (id int primary key, name text, amount numeric, at timestamptz)');
const copyRows = 200_000;
const lines: string[] = [];
for (let index = 0; index < copyRows; index++) lines.push(`${index}\tname ${index}\t${index}.25\t2024-01-01 00:00:00+00\n`);
const payload = new TextEncoder().encode(lines.join(''));
start = process.hrtime.bigint();
const [copy] = session.prepareMany('copy loaded from stdin');
const result = await session.execute(copy!, { parameters: [] });
if (result.kind !== 'copyIn') throw new Error('expected COPY FROM');
for (let offset = 0; offset < payload.length; offset += 65536) result.write(payload.subarray(offset, offset + 65536));
await result.end();
report('COPY FROM STDIN text, 4 columns', copyRows / seconds(start), 'rows/s');

start = process.hrtime.bigint();
const scanned = await run('select * from loaded');
report('full scan of the COPY table', scanned / seconds(start), 'rows/s');

const describe = `SELECT n.nspname, c.relname, c.relkind, pg_catalog.pg_get_userbyid(c.relowner)
  FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r','p','v','m','S','f','') AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema'
    AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1,2`;
const repeats = 200;
start = process.hrtime.bigint();
for (let index = 0; index < repeats; index++) await run(describe);
report("psql \\d catalog query", (seconds(start) * 1e3) / repeats, 'ms/query');

await bench.close();
