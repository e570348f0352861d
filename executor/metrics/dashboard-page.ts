// The dashboard page served at / on the metrics port: one self-contained HTML document (inline CSS,
// an inline script, inline SVG; no build step, no CDN, works offline). It polls /api/dashboard
// every second and draws each materialized view's dataflow as a graph, charts of the server-side
// sample history (dashboard.ts) and tables of objects, checkpoints and errors.

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>oxbow dashboard</title>
<link rel="icon" href="data:,">
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
  header { background: #1d3557; color: #fff; padding: 8px 16px; display: flex; gap: 24px; align-items: baseline; }
  header h1 { font-size: 18px; margin: 0; }
  header span { opacity: .85; }
  main { padding: 12px 16px; }
  section { background: #fff; border: 1px solid #d8dce3; border-radius: 6px; margin-bottom: 12px; padding: 8px 12px; }
  h2 { font-size: 14px; margin: 4px 0 8px; }
  h3 { font-size: 13px; margin: 8px 0 4px; color: #1d3557; }
  .graphs { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: flex-start; }
  .graph h3 { margin-top: 0; max-width: 440px; }
  .edge.input { stroke: #2f8f46; stroke-dasharray: 4 3; }
  .charts { display: flex; flex-wrap: wrap; gap: 12px; }
  .chart { border: 1px solid #e3e6eb; border-radius: 4px; padding: 4px 8px; }
  .chart .title { font-weight: 600; }
  .chart { width: 212px; } .chart .muted { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 2px 8px; border-bottom: 1px solid #eceef2; white-space: nowrap; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  td.def { white-space: normal; max-width: 520px; color: #555; }
  .muted { color: #888; }
  svg text { font: 11px system-ui, sans-serif; }
  .op rect { fill: #e8f0fb; stroke: #3a6ea5; }
  .op.stateful rect { fill: #fdf0dc; stroke: #c17d11; }
  .rel rect { fill: #e6f4ea; stroke: #2f8f46; }
  .edge { stroke: #7a869a; stroke-width: 1.5; fill: none; }
  .err { color: #b3261e; }
</style>
</head>
<body>
<header><h1>oxbow</h1><span id="summary">connecting…</span></header>
<main>
  <section><h2>Last minutes</h2><div class="charts" id="charts"></div></section>
  <section><h2>Dataflows</h2><div id="graphs" class="graphs"><span class="muted">no materialized views</span></div></section>
  <section><h2>Objects</h2><table id="objects"></table></section>
  <section><h2>Sources</h2><table id="sources"></table></section>
  <section><h2>Checkpoints</h2><table id="checkpoints"></table></section>
  <section><h2>Errors</h2><table id="errors"></table></section>
</main>
<script>
'use strict';
const NS = 'http://www.w3.org/2000/svg';
function el(name, attrs, text) {
  const node = document.createElementNS(NS, name);
  for (const key in attrs) node.setAttribute(key, String(attrs[key]));
  if (text !== undefined) node.textContent = text;
  return node;
}
function esc(text) { return String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]); }
function bytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0; let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + units[i];
}
function rate(n) { return (n >= 100 ? Math.round(n) : Math.round(n * 10) / 10) + ' rows/s'; }
function time(ms) { return new Date(ms).toISOString().slice(11, 19); }

const BOX_W = 170, BOX_H = 54, GAP_X = 20, GAP_Y = 26;

function drawDataflow(data, dataflow) {
  const ops = dataflow.operators;
  const children = new Map();
  for (const op of ops) { if (!children.has(op.parentId)) children.set(op.parentId, []); children.get(op.parentId).push(op); }
  const stateBytes = new Map();
  for (const t of data.status.stateTables) if (t.objectId === dataflow.viewId && t.operatorId !== null) stateBytes.set(t.operatorId, (stateBytes.get(t.operatorId) || 0) + t.bytes);
  // Tidy tree: leaves left to right, a parent centred over its children, the root on top.
  const pos = new Map();
  let nextLeaf = 0; let maxDepth = 0;
  function place(op, depth) {
    maxDepth = Math.max(maxDepth, depth);
    const kids = children.get(op.operatorId) || [];
    let x;
    if (kids.length === 0) x = nextLeaf++;
    else { const xs = kids.map((k) => place(k, depth + 1)); x = (xs[0] + xs[xs.length - 1]) / 2; }
    pos.set(op.operatorId, { x, depth });
    return x;
  }
  for (const root of children.get(null) || []) place(root, 0);
  // The relations the view reads, one row below the deepest operator, each under the scans reading it.
  const scans = ops.filter((op) => op.relationId !== null && op.relationId !== undefined && pos.has(op.operatorId));
  const view = data.status.objects.find((o) => o.id === dataflow.viewId);
  const relIds = [];
  for (const op of scans) if (!relIds.includes(op.relationId)) relIds.push(op.relationId);
  for (const id of view ? view.dependsOn : []) if (!relIds.includes(id)) relIds.push(id);
  const rels = relIds.map((id) => data.status.objects.find((o) => o.id === id) || { id, name: String(id), kind: 'relation' });
  const relRow = maxDepth + 1;
  const relX = new Map();
  const taken = new Set();
  for (const rel of rels) {
    const own = scans.filter((op) => op.relationId === rel.id).map((op) => pos.get(op.operatorId).x);
    let x = own.length ? own.reduce((a, b) => a + b, 0) / own.length : 0;
    while (taken.has(x)) x += 1;
    taken.add(x);
    relX.set(rel.id, x);
  }
  const columns = Math.max(nextLeaf, ...[...relX.values()].map((x) => x + 1), 1);
  const width = columns * (BOX_W + GAP_X) + GAP_X;
  const height = (relRow + 1) * (BOX_H + GAP_Y) + GAP_Y / 2;
  const svg = el('svg', { width, height, viewBox: '0 0 ' + width + ' ' + height, class: 'dataflow', 'data-view': dataflow.name, 'data-view-id': dataflow.viewId });
  const cx = (x) => GAP_X + x * (BOX_W + GAP_X) + BOX_W / 2;
  const cy = (depth) => GAP_Y / 2 + depth * (BOX_H + GAP_Y) + BOX_H / 2;
  const edges = el('g', {});
  svg.appendChild(edges);
  const edge = (x1, d1, x2, d2, cls) => {
    const y1 = cy(d1) - BOX_H / 2, y2 = cy(d2) + BOX_H / 2, ym = (y1 + y2) / 2;
    edges.appendChild(el('path', { class: cls, d: 'M' + cx(x1) + ' ' + y1 + ' C' + cx(x1) + ' ' + ym + ' ' + cx(x2) + ' ' + ym + ' ' + cx(x2) + ' ' + y2 }));
  };
  for (const op of ops) {
    if (op.parentId === null || !pos.has(op.parentId) || !pos.has(op.operatorId)) continue;
    const a = pos.get(op.operatorId), b = pos.get(op.parentId);
    edge(a.x, a.depth, b.x, b.depth, 'edge');
  }
  for (const rel of rels) {
    const rx = relX.get(rel.id);
    for (const op of scans) if (op.relationId === rel.id) { const a = pos.get(op.operatorId); edge(rx, relRow, a.x, a.depth, 'edge input'); }
    const input = data.status.throughput.inputs.find((r) => r.relationId === rel.id);
    const source = data.sources.find((s) => s.sourceId === rel.id);
    const g = el('g', { class: 'rel', 'data-relation-id': rel.id, 'data-rows': input ? input.rows : 0, transform: 'translate(' + (cx(rx) - BOX_W / 2) + ',' + (cy(relRow) - BOX_H / 2) + ')' });
    g.appendChild(el('rect', { width: BOX_W, height: BOX_H, rx: 5 }));
    g.appendChild(el('text', { x: 8, y: 15, 'font-weight': 600 }, rel.kind + ' ' + rel.name));
    g.appendChild(el('text', { x: 8, y: 31, class: 'rel-rate' }, rate(data.rates['rel:' + rel.id] || 0) + ' · ' + (input ? input.rows : 0) + ' changes'));
    g.appendChild(el('text', { x: 8, y: 47, class: 'rel-lag' }, rel.kind === 'source' ? 'lag ' + (source ? source.lag : 0) + ' · ' + rate(data.rates['src:' + rel.id] || 0) + ' read' : ''));
    svg.appendChild(g);
  }
  for (const op of ops) {
    const p = pos.get(op.operatorId);
    if (!p) continue;
    const state = stateBytes.has(op.operatorId) ? stateBytes.get(op.operatorId) : null;
    const g = el('g', {
      class: 'op' + (op.stateful ? ' stateful' : ''), 'data-operator-id': op.operatorId, 'data-kind': op.kind,
      'data-rows-out': op.rowsOut, 'data-state-bytes': state === null ? '' : state,
      transform: 'translate(' + (cx(p.x) - BOX_W / 2) + ',' + (cy(p.depth) - BOX_H / 2) + ')',
    });
    g.appendChild(el('rect', { width: BOX_W, height: BOX_H, rx: 5 }));
    g.appendChild(el('text', { x: 8, y: 15, 'font-weight': 600 }, '#' + op.operatorId + ' ' + op.kind.replace(/^Stream/, '')));
    g.appendChild(el('text', { x: 8, y: 31, class: 'op-rate' }, rate(data.rates[dataflow.viewId + '/' + op.operatorId] || 0) + ' · ' + op.rowsOut + ' out'));
    g.appendChild(el('text', { x: 8, y: 47, class: 'op-state' }, state === null ? 'no state' : 'state ' + bytes(state)));
    svg.appendChild(g);
  }
  return svg;
}

function chart(title, unit, samples, series) {
  const W = 212, H = 120, L = 16, R = 8, T = 8, B = 20;
  const box = document.createElement('div');
  box.className = 'chart';
  const points = [];
  for (const s of series) for (const smp of samples) { const v = s.value(smp); if (v !== null && v !== undefined) points.push({ s, t: smp.atMillis, v }); }
  const t1 = samples.length ? samples[samples.length - 1].atMillis : Date.now();
  const t0 = samples.length ? Math.min(samples[0].atMillis, t1 - 30000) : t1 - 30000;
  const vmax = Math.max(1e-9, ...points.map((p) => p.v)) * 1.1;
  const latest = series.map((s) => { for (let i = samples.length - 1; i >= 0; i--) { const v = s.value(samples[i]); if (v !== null && v !== undefined) return s.name + ' ' + s.format(v); } return s.name + ' –'; });
  box.innerHTML = '<div class="title">' + esc(title) + '</div><div class="muted">' + esc(latest.join(' · ')) + '</div>';
  const svg = el('svg', { width: W, height: H, class: 'chart-svg', 'data-chart': title });
  svg.appendChild(el('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#bbb' }));
  svg.appendChild(el('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#bbb' }));
  svg.appendChild(el('text', { x: L + 4, y: T + 8 }, 'max ' + series[0].format(vmax / 1.1)));
  svg.appendChild(el('text', { x: L - 4, y: H - B, 'text-anchor': 'end' }, '0'));
  svg.appendChild(el('text', { x: L, y: H - 4 }, time(t0)));
  svg.appendChild(el('text', { x: W - R, y: H - 4, 'text-anchor': 'end' }, time(t1)));
  const px = (t) => L + ((t - t0) / Math.max(1, t1 - t0)) * (W - L - R);
  const py = (v) => H - B - (v / vmax) * (H - T - B);
  for (const s of series) {
    const own = points.filter((p) => p.s === s);
    if (own.length > 1) svg.appendChild(el('polyline', { points: own.map((p) => px(p.t).toFixed(1) + ',' + py(p.v).toFixed(1)).join(' '), fill: 'none', stroke: s.color, 'stroke-width': 1.5 }));
    for (const p of own) svg.appendChild(el('circle', { class: 'pt', cx: px(p.t).toFixed(1), cy: py(p.v).toFixed(1), r: 2, fill: s.color }));
  }
  box.appendChild(svg);
  return box;
}

function table(id, head, rows) {
  const t = document.getElementById(id);
  t.innerHTML = '<tr>' + head.map((h) => '<th' + (h.num ? ' class="num"' : '') + '>' + esc(h.name) + '</th>').join('') + '</tr>' +
    (rows.length === 0 ? '<tr><td class="muted" colspan="' + head.length + '">none</td></tr>' :
      rows.map((r) => '<tr>' + r.map((c, i) => '<td class="' + (head[i].num ? 'num' : head[i].cls || '') + '">' + esc(c === null || c === undefined ? '' : c) + '</td>').join('') + '</tr>').join(''));
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf'];
function render(data) {
  const st = data.status;
  document.getElementById('summary').textContent = 'committed epoch ' + st.epochs.committedEpoch + ' · ' + st.epochs.epochsCommitted + ' epochs · ' + st.epochs.epochsInFlight + ' in flight · ' +
    st.statements.total + ' statements (' + st.statements.errors + ' errors) · ' + st.sessions.length + ' sessions · rss ' + bytes(st.process.residentBytes) + ' · updated ' + time(data.generatedAtMillis);
  const graphs = document.getElementById('graphs');
  graphs.textContent = '';
  for (const df of st.dataflows) {
    const h = document.createElement('h3');
    const viewRate = data.rates['view:' + df.viewId] || 0;
    const viewState = st.stateTables.filter((t) => t.objectId === df.viewId).reduce((a, t) => a + t.bytes, 0);
    h.textContent = df.schema + '.' + df.name + ' — ' + df.operators.length + ' operators · ' + rate(viewRate) + ' · state ' + bytes(viewState);
    const box = document.createElement('div');
    box.className = 'graph';
    box.appendChild(h);
    box.appendChild(drawDataflow(data, df));
    graphs.appendChild(box);
  }
  if (st.dataflows.length === 0) graphs.innerHTML = '<span class="muted">no materialized views</span>';
  const samples = data.series.samples;
  const ms = (v) => v.toFixed(v < 10 ? 2 : 0) + ' ms';
  const charts = document.getElementById('charts');
  charts.textContent = '';
  charts.appendChild(chart('Barrier latency', 'ms', samples, [{ name: 'mean', color: COLORS[0], format: ms, value: (s) => s.barrierLatencyMs }]));
  charts.appendChild(chart('Epoch commit latency', 'ms', samples, [{ name: 'mean', color: COLORS[1], format: ms, value: (s) => s.commitLatencyMs }]));
  charts.appendChild(chart('Checkpoint size', 'bytes', samples, [{ name: 'referenced', color: COLORS[2], format: bytes, value: (s) => s.checkpointBytes }]));
  charts.appendChild(chart('Checkpoint duration', 'ms', samples, [{ name: 'last', color: COLORS[3], format: ms, value: (s) => s.checkpointDurationMs }]));
  charts.appendChild(chart('View throughput', 'rows/s', samples, st.dataflows.map((df, i) => ({ name: df.name, color: COLORS[i % COLORS.length], format: rate, value: (s) => s.viewRowsPerSecond[df.viewId] ?? null }))
    .concat(st.dataflows.length === 0 ? [{ name: 'none', color: '#999', format: rate, value: () => null }] : [])));
  const stateOf = (id) => st.stateTables.filter((t) => t.objectId === id).reduce((a, t) => a + t.bytes, 0);
  const keysOf = (id) => st.stateTables.filter((t) => t.objectId === id).reduce((a, t) => a + t.keys, 0);
  table('objects', [{ name: 'id', num: true }, { name: 'schema' }, { name: 'name' }, { name: 'kind' }, { name: 'state', num: true }, { name: 'keys', num: true }, { name: 'created' }, { name: 'definition', cls: 'def' }],
    st.objects.map((o) => [o.id, o.schema, o.name, o.kind, bytes(stateOf(o.id)), keysOf(o.id), o.createdAtMillis === null ? '' : new Date(o.createdAtMillis).toISOString().replace('T', ' ').slice(0, 19), o.definition || '']));
  table('sources', [{ name: 'id', num: true }, { name: 'name' }, { name: 'lag', num: true }, { name: 'partitions', num: true }, { name: 'errors', num: true }, { name: 'status' }],
    data.sources.map((s) => [s.sourceId, s.name, s.lag, s.partitions, s.errors, s.trouble || 'ok']));
  const cp = data.checkpoints;
  table('checkpoints', [{ name: 'epoch' }, { name: 'started' }, { name: 'status' }, { name: 'duration', num: true }, { name: 'uploaded', num: true }, { name: 'size', num: true }, { name: 'files', num: true }],
    cp === null ? [] : cp.history.map((c) => [c.epoch, time(c.startedAtMs), c.status, Math.round(c.durationMs) + ' ms', bytes(c.bytesUploaded), bytes(c.bytesReferenced), c.files]));
  table('errors', [{ name: 'last' }, { name: 'kind' }, { name: 'object' }, { name: 'count', num: true }, { name: 'message', cls: 'def' }],
    data.errors.map((e) => [time(e.atMillis), e.kind, e.object, e.count, e.message]));
  document.body.setAttribute('data-updated', String(data.generatedAtMillis));
}

const samples = [];
async function poll() {
  try {
    // The first request gets the server's whole history, later ones only the newer samples.
    const since = samples.length ? '?since=' + samples[samples.length - 1].atMillis : '';
    const response = await fetch('api/dashboard' + since, { cache: 'no-store' });
    if (!response.ok) throw new Error('HTTP ' + response.status);
    const data = await response.json();
    for (const sample of data.series.samples) samples.push(sample);
    if (samples.length > data.series.capacity) samples.splice(0, samples.length - data.series.capacity);
    data.series.samples = samples;
    render(data);
  } catch (error) {
    document.getElementById('summary').innerHTML = '<span class="err">' + esc('cannot reach oxbow: ' + error.message) + '</span>';
  }
  setTimeout(poll, 1000);
}
poll();
</script>
</body>
</html>
`;
