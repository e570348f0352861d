// The web dashboard on the metrics port, in headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core) against a real oxbow server process. A known workload: a table, a datagen source
// that ends (ROWS rows), a view over the table and a join view over both. The page must draw each
// view's dataflow with as many operator boxes as oxbow_catalog.dataflow has rows for it, show the
// same rows-out and state bytes as /api/status and the system tables, draw chart points from the
// server-side sample history, log no console errors, and render a non-blank screenshot.

// The page callbacks below run in Chromium, where `document` exists; the type check has no DOM lib.
declare const document: any; // eslint-disable-line @typescript-eslint/no-explicit-any
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import pg from 'pg';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, metricsPortOf, type HttpAnswer } from '../support/metrics-http.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { waitForCommittedOffsets } from '../support/source-offsets.js';

const ROWS = 600; // datagen sequence 1..ROWS
const T_ROWS = 50; // table rows, ids 1..T_ROWS, g = id % 5
const WIDTH = 1280;
const HEIGHT = 1000;

let oxbow: OxbowServer;
let metricsPort: number;
let client: pg.Client;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];
const outDir = mkdtempSync(join(tmpdir(), 'oxbow-dashboard-'));

function get(path: string): Promise<HttpAnswer> {
  return httpGet(metricsPort, path);
}

interface Operator {
  operatorId: number;
  parentId: number | null;
  kind: string;
  relationId: number | null;
  rowsOut: number;
}
interface Status {
  objects: { id: number; name: string; kind: string; dependsOn: number[] }[];
  dataflows: { viewId: number; name: string; operators: Operator[] }[];
  stateTables: { objectId: number; operatorId: number | null; bytes: number }[];
}

async function apiStatus(): Promise<Status> {
  const response = await get('/api/status');
  expect(response.status).toBe(200);
  return JSON.parse(response.body) as Status;
}

/** The same formatting the page uses, recomputed here: bytes in 1024 steps, one decimal above bytes. */
function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? String(v) : v.toFixed(1)} ${units[i]}`;
}

/** A minimal PNG decoder (8-bit RGB/RGBA, non-interlaced, which is what Chromium writes): width, height, pixels as RGBA. */
function decodePng(png: Buffer): { width: number; height: number; rgba: Buffer } {
  expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (;;) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      expect(data[8]).toBe(8); // bit depth
      expect([2, 6]).toContain(data[9]); // RGB or RGBA
      expect(data[12]).toBe(0); // not interlaced
      channels = data[9] === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  expect(raw.length).toBe(height * (stride + 1));
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels]! : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels]! : 0;
      let predictor = 0;
      if (filter === 1) predictor = a;
      else if (filter === 2) predictor = b;
      else if (filter === 3) predictor = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else expect(filter).toBe(0);
      pixels[y * stride + x] = (line[x]! + predictor) & 0xff;
    }
  }
  const rgba = Buffer.alloc(width * height * 4, 255);
  for (let i = 0; i < width * height; i++) for (let k = 0; k < channels; k++) rgba[i * 4 + k] = pixels[i * channels + k]!;
  return { width, height, rgba };
}

beforeAll(async () => {
  oxbow = await startOxbow({ args: ['--metrics-port', '0', '--barrier-interval-ms', '200', '--checkpoint-interval-ms', '1000'] });
  metricsPort = metricsPortOf(oxbow);
  client = new pg.Client({ connectionString: oxbow.url });
  await client.connect();
  await client.query('CREATE TABLE t (id int PRIMARY KEY, g int, v int)');
  await client.query(`INSERT INTO t SELECT i, i % 5, i FROM generate_series(1, ${T_ROWS / 2}) AS i`);
  await client.query(
    `CREATE SOURCE readings (id INT, v INT) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '${ROWS}', fields.v.min = '0', fields.v.max = '9', datagen.rows.per.second = '400')`,
  );
  await client.query('CREATE MATERIALIZED VIEW by_g AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g');
  await client.query('CREATE MATERIALIZED VIEW joined AS SELECT t.g, count(*) AS n, max(r.v) AS m FROM readings r JOIN t ON t.id = r.id % 50 + 1 GROUP BY t.g');
  // A view with an error inside (id 3 and id 28 divide by zero: NULL in the view, counted in view_errors).
  await client.query('CREATE MATERIALIZED VIEW ratios AS SELECT id, 100 / (id % 25 - 3) AS r FROM t');
  await client.query(`INSERT INTO t SELECT i, i % 5, i FROM generate_series(${T_ROWS / 2 + 1}, ${T_ROWS}) AS i`);
  await waitForCommittedOffsets(client, 'readings', ROWS);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: WIDTH, height: HEIGHT } });
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  await page.goto(`http://127.0.0.1:${metricsPort}/`);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await client?.end();
  await oxbow?.stop();
});

describe('the dashboard at / on the metrics port', () => {
  it('serves one self-contained page (no external script, style or image)', async () => {
    const response = await get('/');
    expect(response.status).toBe(200);
    expect(response.type).toContain('text/html');
    expect(response.body).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    const data = JSON.parse((await get('/api/dashboard')).body) as { status: Status; series: { samples: unknown[] } };
    expect(data.status.dataflows.map((dataflow) => dataflow.name).sort()).toEqual(['by_g', 'joined', 'ratios']);
  });

  it('serves only the samples newer than ?since= and rejects a bad since with 400', async () => {
    const all = (JSON.parse((await get('/api/series')).body) as { samples: { atMillis: number }[] }).samples;
    expect(all.length).toBeGreaterThanOrEqual(2);
    const cut = all[all.length - 2]!.atMillis;
    const newer = (JSON.parse((await get(`/api/dashboard?since=${cut}`)).body) as { series: { samples: { atMillis: number }[] } }).series.samples;
    expect(newer.length).toBeGreaterThanOrEqual(1);
    expect(newer.every((sample) => sample.atMillis > cut)).toBe(true);
    expect(newer[0]!.atMillis).toBe(all[all.length - 1]!.atMillis);
    const bad = await get('/api/dashboard?since=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('since must be a time in milliseconds');
  });

  it("draws each view's dataflow with one box per operator of oxbow_catalog.dataflow, and its input relations", async () => {
    await page.waitForSelector('svg.dataflow[data-view="joined"]');
    for (const view of ['by_g', 'joined', 'ratios']) {
      const { rows } = await client.query('SELECT operator_id, parent_id, kind FROM oxbow_catalog.dataflow WHERE view_name = $1 ORDER BY operator_id', [view]);
      expect(rows.length).toBeGreaterThan(1);
      const boxes = await page.$$eval(`svg.dataflow[data-view="${view}"] g.op`, (nodes) => nodes.map((node) => ({ id: Number(node.getAttribute('data-operator-id')), kind: node.getAttribute('data-kind') })));
      expect(boxes.sort((a, b) => a.id - b.id)).toEqual(rows.map((row: { operator_id: number; kind: string }) => ({ id: row.operator_id, kind: row.kind })));
      // An edge per operator with a parent, plus one from the relation box to each scan reading it
      // (/api/status names the relation of each scan).
      const edges = await page.$$eval(`svg.dataflow[data-view="${view}"] path.edge`, (nodes) => nodes.length);
      const withParent = rows.filter((row: { parent_id: number | null }) => row.parent_id !== null).length;
      const scans = (await apiStatus()).dataflows.find((dataflow) => dataflow.name === view)!.operators.filter((operator) => operator.relationId !== null);
      expect(scans.length).toBe(rows.filter((row: { kind: string }) => row.kind === 'StreamTableScan').length);
      expect(edges).toBe(withParent + scans.length);
      const relationBoxes = await page.$$eval(`svg.dataflow[data-view="${view}"] g.rel`, (nodes) => nodes.map((node) => Number(node.getAttribute('data-relation-id'))));
      expect(relationBoxes.sort()).toEqual([...new Set(scans.map((operator) => operator.relationId))].sort());
    }
    const status = await apiStatus();
    const idOf = (name: string): number => status.objects.find((object) => object.name === name)!.id;
    const relations = await page.$$eval('svg.dataflow[data-view="joined"] g.rel', (nodes) => nodes.map((node) => [Number(node.getAttribute('data-relation-id')), node.querySelector('text')!.textContent]));
    expect(relations.sort()).toEqual([[idOf('readings'), 'source readings'], [idOf('t'), 'table t']].sort());
    // Each relation box shows the changes /api/status counts into the dataflows (settled: the source has ended).
    const inputs = (JSON.parse((await get('/api/status')).body) as { throughput: { inputs: { relationId: number; rows: number }[] } }).throughput.inputs;
    await page.waitForFunction((at) => Number(document.body.getAttribute('data-updated')) > at, Date.now());
    const shown = await page.$$eval('svg.dataflow[data-view="joined"] g.rel', (nodes) => nodes.map((node) => [Number(node.getAttribute('data-relation-id')), node.querySelector('.rel-rate')!.textContent!.replace(/^.* · /, '')]));
    expect(shown.sort()).toEqual(inputs.filter((input) => [idOf('readings'), idOf('t')].includes(input.relationId)).map((input) => [input.relationId, `${input.rows} changes`]).sort());
  });

  it('shows the rows out and state bytes of /api/status and the system tables', async () => {
    // The workload has ended (the source is finite), so the figures are settled; a page refresh
    // (once a second) and a state size estimate (RocksDB flush) may still move between reads: retry.
    let last = '';
    for (let attempt = 0; attempt < 20; attempt++) {
      const before = await apiStatus();
      await page.waitForFunction((at) => Number(document.body.getAttribute('data-updated')) > at, Date.now());
      const shown = await page.$$eval('svg.dataflow g.op', (nodes) =>
        nodes.map((node) => ({
          view: node.closest('svg')!.getAttribute('data-view'),
          id: Number(node.getAttribute('data-operator-id')),
          rowsOut: Number(node.getAttribute('data-rows-out')),
          state: node.getAttribute('data-state-bytes'),
          rateText: node.querySelector('.op-rate')!.textContent,
          stateText: node.querySelector('.op-state')!.textContent,
        })),
      );
      const after = await apiStatus();
      const expected = after.dataflows.flatMap((dataflow) =>
        dataflow.operators.map((operator) => {
          const tables = after.stateTables.filter((table) => table.objectId === dataflow.viewId && table.operatorId === operator.operatorId);
          const bytes = tables.reduce((sum, table) => sum + table.bytes, 0);
          return { view: dataflow.name, id: operator.operatorId, rowsOut: operator.rowsOut, state: tables.length === 0 ? '' : String(bytes), stateText: tables.length === 0 ? 'no state' : `state ${formatBytes(bytes)}` };
        }),
      );
      const got = shown.map(({ rateText: _rate, ...rest }) => rest);
      if (JSON.stringify([before.dataflows, before.stateTables]) !== JSON.stringify([after.dataflows, after.stateTables]) || JSON.stringify(got) !== JSON.stringify(expected)) {
        last = JSON.stringify({ got, expected });
        continue;
      }
      // The text in the box says the same rows out; the system tables agree with /api/status.
      for (const box of shown) expect(box.rateText).toMatch(new RegExp(`rows/s · ${box.rowsOut} out$`));
      const { rows } = await client.query('SELECT view_name, operator_id, rows_out FROM oxbow_catalog.dataflow ORDER BY view_name, operator_id');
      expect(rows.map((row: { view_name: string; operator_id: number; rows_out: string }) => ({ view: row.view_name, id: row.operator_id, rowsOut: Number(row.rows_out) }))).toEqual(
        [...got].sort((a, b) => (a.view! < b.view! ? -1 : a.view! > b.view! ? 1 : a.id - b.id)).map(({ view, id, rowsOut }) => ({ view, id, rowsOut })),
      );
      // The view's output equals the rows written to it: by_g's Materialize output is its groups' changes.
      const materialize = got.find((box) => box.view === 'by_g' && box.id === Math.min(...got.filter((b) => b.view === 'by_g').map((b) => b.id)))!;
      expect(materialize.rowsOut).toBeGreaterThanOrEqual(5);
      // The join view read every generated row: its scan of readings put out ROWS rows.
      const joinedScans = after.dataflows.find((dataflow) => dataflow.name === 'joined')!.operators.filter((operator) => operator.kind === 'StreamTableScan');
      expect(joinedScans.map((operator) => operator.rowsOut)).toContain(ROWS);
      return;
    }
    throw new Error(`the page never showed the figures of /api/status: ${last}`);
  });

  it('shows the objects of /api/status in the objects table and the source lag of oxbow_catalog.source_partitions', async () => {
    const status = await apiStatus();
    const names = await page.$$eval('#objects tr td:nth-child(3)', (cells) => cells.map((cell) => cell.textContent));
    expect(names).toEqual(status.objects.map((object) => object.name));
    const { rows } = await client.query("SELECT sum(lag)::int8 AS lag FROM oxbow_catalog.source_partitions WHERE source_name = 'readings'");
    const lagText = await page.$eval('#sources tr:nth-child(2) td:nth-child(3)', (cell) => cell.textContent);
    expect(lagText).toBe(String(Number(rows[0].lag)));
    const relLag = await page.$eval('svg.dataflow[data-view="joined"] g.rel .rel-lag', (node) => node.textContent);
    expect(relLag).toMatch(new RegExp(`^lag ${Number(rows[0].lag)} · [0-9.]+ rows/s read$`));
  });

  it('lists the errors of oxbow_catalog.view_errors in the errors table', async () => {
    const { rows } = await client.query('SELECT view_schema, view_name, message, error_count FROM oxbow_catalog.view_errors ORDER BY message');
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows.reduce((sum: number, row: { error_count: string }) => sum + Number(row.error_count), 0)).toBe(2); // ids 3 and 28
    await page.waitForFunction(() => document.querySelectorAll('#errors td.num').length > 0);
    const shown = await page.$$eval('#errors tr', (trs) => trs.slice(1).map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(shown.map((cells) => [cells[1], cells[2], cells[3], cells[4]]).sort()).toEqual(
      rows.map((row: { view_schema: string; view_name: string; message: string; error_count: string }) => ['view', `${row.view_schema}.${row.view_name}`, String(Number(row.error_count)), row.message]).sort(),
    );
  });

  it('charts barrier and commit latency and checkpoints from the server-side history', async () => {
    // An epoch (a barrier) is committed when there are changes: write to a table no view reads for
    // a few seconds. The server samples once a second; the page draws that history.
    await client.query('CREATE TABLE ticks (n int)');
    for (let i = 0; i < 16; i++) {
      await client.query(`INSERT INTO ticks VALUES (${i})`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await page.waitForFunction(() => document.querySelectorAll('svg[data-chart="Barrier latency"] circle.pt').length >= 3, undefined, { timeout: 20_000 });
    await page.waitForFunction(() => document.querySelectorAll('svg[data-chart="Checkpoint size"] circle.pt').length >= 1, undefined, { timeout: 20_000 });
    const series = JSON.parse((await get('/api/series')).body) as { samples: { barrierLatencyMs: number | null; commitLatencyMs: number | null; checkpointBytes: number | null }[] };
    expect(series.samples.filter((sample) => sample.barrierLatencyMs !== null).length).toBeGreaterThanOrEqual(3);
    for (const sample of series.samples) {
      if (sample.barrierLatencyMs !== null) expect(sample.barrierLatencyMs).toBeGreaterThan(0);
      if (sample.commitLatencyMs !== null && sample.barrierLatencyMs !== null) expect(sample.commitLatencyMs).toBeLessThanOrEqual(sample.barrierLatencyMs + 1e-9);
    }
    const commitPoints = await page.$$eval('svg[data-chart="Epoch commit latency"] circle.pt', (nodes) => nodes.length);
    expect(commitPoints).toBeGreaterThanOrEqual(3);
    const { rows } = await client.query("SELECT count(*)::int AS n FROM oxbow_catalog.checkpoints WHERE status = 'complete'");
    expect(rows[0].n).toBeGreaterThanOrEqual(1);
    const checkpointRows = await page.$$eval('#checkpoints tr', (nodes) => nodes.length - 1);
    expect(checkpointRows).toBeGreaterThanOrEqual(1);
  });

  it('renders a non-blank screenshot and logs no console errors', async () => {
    const png = await page.screenshot();
    const path = join(outDir, 'dashboard.png');
    process.stdout.write(`dashboard screenshot: ${path}\n`);
    writeFileSync(path, png);
    if (process.env.OXBOW_DASHBOARD_PNG !== undefined) copyFileSync(path, process.env.OXBOW_DASHBOARD_PNG);
    const { width, height, rgba } = decodePng(png);
    expect([width, height]).toEqual([WIDTH, HEIGHT]);
    // The graph area: the first dataflow's box on the page, clipped to the screenshot.
    // (measured in the page: the page redraws every second, so a held element handle may be detached)
    const box = await page.evaluate(() => {
      const rect = document.querySelector('svg.dataflow')!.getBoundingClientRect();
      return { x: rect.x, y: rect.y, width: rect.width, height: rect.height };
    });
    const x0 = Math.max(0, Math.floor(box.x));
    const y0 = Math.max(0, Math.floor(box.y));
    const x1 = Math.min(width, Math.floor(box.x + box.width));
    const y1 = Math.min(height, Math.floor(box.y + box.height));
    expect(x1 - x0).toBeGreaterThan(100);
    expect(y1 - y0).toBeGreaterThan(100);
    const colors = new Set<number>();
    let nonWhite = 0;
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const i = (y * width + x) * 4;
        const color = (rgba[i]! << 16) | (rgba[i + 1]! << 8) | rgba[i + 2]!;
        colors.add(color);
        if (color !== 0xffffff) nonWhite++;
      }
    }
    expect(colors.size).toBeGreaterThanOrEqual(20); // box fills, strokes, text anti-aliasing
    expect(nonWhite / ((x1 - x0) * (y1 - y0))).toBeGreaterThan(0.05);
    expect(consoleErrors).toEqual([]);
  });
});
