// Retained size by owner from a V8 .heapsnapshot (bench/nexmark.ts --heap-snapshot; too large for
// JSON.parse at a few hundred MiB): parses the nodes and edges arrays into typed arrays, builds the
// dominator tree (Cooper-Harvey-Kennedy over a reverse postorder, weak and shortcut edges
// ignored), and prints
//   - the top classes by self size,
//   - the objects whose class is one of the owners (default: the caches, state tables, operators)
//     with their retained sizes,
//   - every node's self size attributed to the nearest owner dominating it, by node class,
//   - the largest retained objects with their dominator chain.
// DRILL_OWNER=JoinSideCache [DRILL_CLASS=Object]: the owner's objects of that class, retained size
// by outgoing property (q4's join groups: .rows, .counts, ...) and a histogram of its arrays' sizes.
// FIELDS=JoinSideCache,...: each such object's properties.
// Usage: node --max-old-space-size=8000 scripts/heap-owners.mjs FILE [Owner,Owner,...]
// (a 790 MiB snapshot of q4 at 3M events: 25 s, about 3 GiB.)
import { readFileSync } from 'node:fs';

const file = process.argv[2];
const owners = new Set((process.argv[3] ?? 'JoinSideCache,AggregateGroupCache,RowCache,MvccStateTable,StreamHashJoin,HashJoinOperator,StreamHashAggregate,GroupCacheBudget,MemoryBudget').split(','));
const buf = readFileSync(file);
const text = (from, to) => buf.toString('latin1', from, to);
const find = (needle, from = 0) => {
  const at = buf.indexOf(needle, from, 'latin1');
  if (at < 0) throw new Error(`no ${needle}`);
  return at;
};
const nodesAt = find('"nodes":[');
const header = JSON.parse(text(0, nodesAt).replace(/,\s*$/, '') + '}');
const meta = header.snapshot.meta;
const nodeFieldCount = meta.node_fields.length;
const edgeFieldCount = meta.edge_fields.length;
const nodeCount = header.snapshot.node_count;
const edgeCount = header.snapshot.edge_count;

function parseNumbers(start, out) {
  let i = start;
  let n = 0;
  let value = 0;
  let inNumber = false;
  for (;;) {
    const c = buf[i++];
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      inNumber = true;
    } else {
      if (inNumber) {
        out[n++] = value;
        value = 0;
        inNumber = false;
      }
      if (c === 93) return i; // ]
    }
  }
}
const nodes = new Float64Array(nodeCount * nodeFieldCount);
let at = parseNumbers(nodesAt + 9, nodes);
const edgesAt = find('"edges":[', at);
const edges = new Uint32Array(edgeCount * edgeFieldCount);
at = parseNumbers(edgesAt + 9, edges);
const stringsAt = find('"strings":[', at);
const strings = [];
{
  let i = stringsAt + 11;
  const u = buf;
  for (;;) {
    while (u[i] !== 34 && u[i] !== 93) i++;
    if (u[i] === 93) break;
    const start = i;
    i++;
    while (u[i] !== 34) i += u[i] === 92 ? 2 : 1;
    i++;
    strings.push(JSON.parse(buf.toString('utf8', start, i)));
  }
}
console.error(`nodes ${nodeCount}, edges ${edgeCount}, strings ${strings.length}`);

const nodeTypes = meta.node_types[0];
const edgeTypes = meta.edge_types[0];
const TYPE = 0, NAME = 1, SELF = 3, EDGES = 4;
const weakType = edgeTypes.indexOf('weak');
const shortcutType = edgeTypes.indexOf('shortcut');
const firstEdge = new Uint32Array(nodeCount + 1);
for (let n = 0; n < nodeCount; n++) firstEdge[n + 1] = firstEdge[n] + nodes[n * nodeFieldCount + EDGES];
const edgeTarget = (e) => edges[e * edgeFieldCount + 2] / nodeFieldCount;
const essential = (e) => {
  const type = edges[e * edgeFieldCount];
  return type !== weakType && type !== shortcutType;
};

// Postorder from the root (node 0).
const post = new Int32Array(nodeCount).fill(-1);
const order = new Uint32Array(nodeCount);
let postCount = 0;
{
  const stack = new Uint32Array(nodeCount);
  const cursor = new Uint32Array(nodeCount);
  const visited = new Uint8Array(nodeCount);
  let top = 0;
  stack[top++] = 0;
  visited[0] = 1;
  cursor[0] = firstEdge[0];
  while (top > 0) {
    const n = stack[top - 1];
    if (cursor[n] < firstEdge[n + 1]) {
      const e = cursor[n]++;
      if (!essential(e)) continue;
      const t = edgeTarget(e);
      if (visited[t]) continue;
      visited[t] = 1;
      cursor[t] = firstEdge[t];
      stack[top++] = t;
    } else {
      top--;
      post[n] = postCount;
      order[postCount++] = n;
    }
  }
}
console.error(`reachable ${postCount}`);
// Predecessors (reachable, essential edges).
const predCount = new Uint32Array(nodeCount + 1);
for (let n = 0; n < nodeCount; n++) {
  if (post[n] < 0) continue;
  for (let e = firstEdge[n]; e < firstEdge[n + 1]; e++) if (essential(e)) predCount[edgeTarget(e) + 1]++;
}
for (let n = 0; n < nodeCount; n++) predCount[n + 1] += predCount[n];
const preds = new Uint32Array(predCount[nodeCount]);
{
  const fill = predCount.slice(0, nodeCount);
  for (let n = 0; n < nodeCount; n++) {
    if (post[n] < 0) continue;
    for (let e = firstEdge[n]; e < firstEdge[n + 1]; e++) if (essential(e)) preds[fill[edgeTarget(e)]++] = n;
  }
}
// Dominators by postorder number.
const UNDEF = 0xffffffff;
const idom = new Uint32Array(postCount).fill(UNDEF);
const rootPost = post[0];
idom[rootPost] = rootPost;
let changed = true;
let rounds = 0;
while (changed) {
  changed = false;
  rounds++;
  for (let p = postCount - 1; p >= 0; p--) {
    if (p === rootPost) continue;
    const n = order[p];
    let newIdom = UNDEF;
    for (let k = predCount[n]; k < predCount[n + 1]; k++) {
      const q = post[preds[k]];
      if (q < 0 || idom[q] === UNDEF) continue;
      if (newIdom === UNDEF) newIdom = q;
      else {
        let a = q, b = newIdom;
        while (a !== b) {
          while (a < b) a = idom[a];
          while (b < a) b = idom[b];
        }
        newIdom = a;
      }
    }
    if (newIdom !== UNDEF && idom[p] !== newIdom) {
      idom[p] = newIdom;
      changed = true;
    }
  }
}
console.error(`dominators in ${rounds} rounds`);
const retained = new Float64Array(postCount);
for (let p = 0; p < postCount; p++) retained[p] += nodes[order[p] * nodeFieldCount + SELF];
for (let p = 0; p < postCount; p++) if (p !== rootPost) retained[idom[p]] += retained[p];

const className = (n) => {
  const type = nodeTypes[nodes[n * nodeFieldCount + TYPE]];
  const name = strings[nodes[n * nodeFieldCount + NAME]];
  if (type === 'object' || type === 'native') return name;
  if (type === 'hidden' || type === 'synthetic') return `(${type}) ${name.slice(0, 40)}`;
  return `(${type})`;
};
const MiB = (b) => (b / 1048576).toFixed(1);

// Top classes by self size.
const byClass = new Map();
for (let p = 0; p < postCount; p++) {
  const n = order[p];
  const c = className(n);
  const entry = byClass.get(c) ?? { count: 0, self: 0 };
  entry.count++;
  entry.self += nodes[n * nodeFieldCount + SELF];
  byClass.set(c, entry);
}
let total = 0;
for (const e of byClass.values()) total += e.self;
console.log(`total reachable ${MiB(total)} MiB`);
console.log('--- top classes by self size');
for (const [c, e] of [...byClass].sort((a, b) => b[1].self - a[1].self).slice(0, 30)) console.log(`${MiB(e.self).padStart(8)} MiB ${String(e.count).padStart(9)}  ${c}`);

// Owners: label each node with its nearest owner dominator (top-down = decreasing postorder).
const label = new Int32Array(postCount).fill(-1);
for (let p = postCount - 1; p >= 0; p--) {
  const n = order[p];
  const type = nodeTypes[nodes[n * nodeFieldCount + TYPE]];
  if (type === 'object' && owners.has(strings[nodes[n * nodeFieldCount + NAME]])) label[p] = p;
  else if (p !== rootPost) label[p] = label[idom[p]];
}
console.log('--- owners (retained)');
const ownerRows = [];
for (let p = 0; p < postCount; p++) if (label[p] === p) ownerRows.push(p);
const byOwnerClass = new Map();
for (const p of ownerRows) {
  const c = className(order[p]);
  const entry = byOwnerClass.get(c) ?? { count: 0, retained: 0, top: [] };
  entry.count++;
  entry.retained += retained[p];
  entry.top.push(retained[p]);
  byOwnerClass.set(c, entry);
}
for (const [c, e] of byOwnerClass) console.log(`${MiB(e.retained).padStart(8)} MiB ${String(e.count).padStart(6)}  ${c}  largest: ${e.top.sort((a, b) => b - a).slice(0, 6).map(MiB).join(', ')}`);
// Self sizes by (owner class, node class) for owned nodes (a nested owner's nodes count to it, not its parent).
console.log('--- attributed to the nearest owner, by node class');
const breakdown = new Map();
for (let p = 0; p < postCount; p++) {
  const owner = label[p] < 0 ? '(no owner)' : className(order[label[p]]);
  const key = `${owner} | ${className(order[p])}`;
  const entry = breakdown.get(key) ?? { count: 0, self: 0 };
  entry.count++;
  entry.self += nodes[order[p] * nodeFieldCount + SELF];
  breakdown.set(key, entry);
}
for (const [c, e] of [...breakdown].sort((a, b) => b[1].self - a[1].self).slice(0, 60)) console.log(`${MiB(e.self).padStart(8)} MiB ${String(e.count).padStart(9)}  ${c}`);
// The largest retainers that are no owner's: their class and the path from an owner or the root.
console.log('--- largest retained objects (over 4 MiB) with their dominator chain');
const big = [];
for (let p = 0; p < postCount; p++) if (retained[p] > 4 * 1048576 && p !== rootPost) big.push(p);
big.sort((a, b) => retained[b] - retained[a]);
for (const p of big.slice(0, 40)) {
  const chain = [];
  for (let q = idom[p], k = 0; q !== rootPost && k < 6; q = idom[q], k++) chain.push(className(order[q]));
  console.log(`${MiB(retained[p]).padStart(8)} MiB  ${className(order[p])}  <- ${chain.join(' <- ')}`);
}
// Drill: for objects of class DRILL_CLASS (env) under owner DRILL_OWNER, retained size by outgoing property name,
// and a histogram of (array) self sizes under that owner.
if (process.env.DRILL_OWNER) {
  const ownerName = process.env.DRILL_OWNER;
  const drillClass = process.env.DRILL_CLASS ?? 'Object';
  const edgeNames = meta.edge_types[0];
  const byProp = new Map();
  const arrayHist = new Map();
  let objects = 0;
  for (let p = 0; p < postCount; p++) {
    if (label[p] < 0 || className(order[label[p]]) !== ownerName) continue;
    const n = order[p];
    const c = className(n);
    if (c === '(array)') {
      const s = nodes[n * nodeFieldCount + SELF];
      arrayHist.set(s, (arrayHist.get(s) ?? 0) + 1);
    }
    if (c !== drillClass) continue;
    objects++;
    for (let e = firstEdge[n]; e < firstEdge[n + 1]; e++) {
      const type = edgeNames[edges[e * edgeFieldCount]];
      const nameOrIndex = edges[e * edgeFieldCount + 1];
      const name = type === 'element' || type === 'hidden' ? `[${type}]` : strings[nameOrIndex];
      const t = edgeTarget(e);
      const tp = post[t];
      const dominated = idom[tp] === p;
      const entry = byProp.get(name) ?? { count: 0, retained: 0, shared: 0, targetClass: new Map() };
      entry.count++;
      if (dominated) entry.retained += retained[tp];
      else entry.shared++;
      const tc = className(t);
      entry.targetClass.set(tc, (entry.targetClass.get(tc) ?? 0) + 1);
      byProp.set(name, entry);
    }
  }
  console.log(`--- drill ${drillClass} under ${ownerName}: ${objects} objects`);
  for (const [name, e] of [...byProp].sort((a, b) => b[1].retained - a[1].retained)) console.log(`${MiB(e.retained).padStart(8)} MiB ${String(e.count).padStart(9)} (not dominated ${e.shared})  .${name}  -> ${[...e.targetClass].slice(0, 4).map(([k, v]) => `${k}:${v}`).join(' ')}`);
  console.log('--- (array) self sizes under owner (bytes: count)');
  console.log([...arrayHist].sort((a, b) => b[0] * b[1] - a[0] * a[1]).slice(0, 25).map(([s, c]) => `${s}: ${c}`).join(', '));
}
if (process.env.FIELDS) {
  const edgeNames = meta.edge_types[0];
  for (const cls of process.env.FIELDS.split(',')) {
    for (let n = 0; n < nodeCount; n++) {
      if (nodeTypes[nodes[n * nodeFieldCount + TYPE]] !== 'object' || strings[nodes[n * nodeFieldCount + NAME]] !== cls) continue;
      const parts = [];
      for (let e = firstEdge[n]; e < firstEdge[n + 1]; e++) {
        if (edgeNames[edges[e * edgeFieldCount]] !== 'property') continue;
        const t = edgeTarget(e);
        const tt = nodeTypes[nodes[t * nodeFieldCount + TYPE]];
        const v = tt === 'number' || tt === 'string' || tt === 'hidden' ? strings[nodes[t * nodeFieldCount + NAME]] : `<${className(t)} ${post[t] >= 0 ? MiB(retained[post[t]]) : '?'}MiB>`;
        parts.push(`${strings[edges[e * edgeFieldCount + 1]]}=${String(v).slice(0, 40)}`);
      }
      console.log(`${cls}: ${parts.join(' ')}`);
    }
  }
}
