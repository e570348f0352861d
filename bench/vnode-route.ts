// The keyed exchange's routing of a row to its owner (executor/stream/parallel/parallel-fragment.ts
// `route`): the key's vnode (VnodeHasher), then its owner by `vnode mod owners` (before the vnode
// map) or by the map's 256-entry lookup (parallel/vnode-map.ts, after a rebalance), then the row
// encoded into that owner's buffer, as the exchange does. 4 owners (2 threads, 2 nodes), rows of
// (int8 key, int8 value, text), batches of 4,096; the two routings alternate A B A B (`--rounds`,
// default 4) over the same rows, each round 2,000,000 rows (x `--scale`) after a warm-up. Prints
// ns per row of each round, the medians, their ratio and the 1-minute load average; `--first map`
// runs the map's routing first in each round.
// Run: npm run build && npm run bench -- vnode-route [--scale 0.1] [--first map]

import { loadavg } from 'node:os';
import { ByteWriter } from '../storage/byte-writer.js';
import { type as scalar } from '../sql/types.js';
import type { Row } from '../sql/value.js';
import { encodeChange } from '../executor/stream/parallel/batch-codec.js';
import { ownerOf, VnodeHasher } from '../executor/stream/parallel/vnode.js';
import { balancedMap, rebalanceMap } from '../executor/stream/parallel/vnode-map.js';
import { BENCH_SCALE, flag, median, reporter } from './support/harness.js';

const report = reporter('vnode-route');
const OWNERS = 4;
const BATCH = 4096;
const rows = Math.max(BATCH, Math.round(2_000_000 * BENCH_SCALE));
const rounds = Number(flag('--rounds') ?? 4);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a positive integer, not ${flag('--rounds')}`);

const hasher = new VnodeHasher([scalar('int8')]);
const key = [0];
const batch: Row[] = Array.from({ length: BATCH }, (_, i) => [BigInt(i * 7919), BigInt(i), `name ${i % 100}`]);
const signs = new Array<number>(BATCH).fill(1);
// A map as a cut leaves it: 3 owners, then a 4th joined.
const map = rebalanceMap(balancedMap(3), [0, 1, 2], OWNERS);
const writers = Array.from({ length: OWNERS }, () => new ByteWriter(64 * 1024));
const counts = new Array<number>(OWNERS).fill(0);

function routeModulo(): void {
  for (let i = 0; i < batch.length; i++) {
    const row = batch[i]!;
    const owner = ownerOf(hasher.ofColumns(row, key), OWNERS);
    encodeChange(writers[owner]!, row, signs[i]!);
    counts[owner]!++;
  }
}

function routeMap(): void {
  for (let i = 0; i < batch.length; i++) {
    const row = batch[i]!;
    const owner = map[hasher.ofColumns(row, key)]!;
    encodeChange(writers[owner]!, row, signs[i]!);
    counts[owner]!++;
  }
}

/** ns per row of routing `rows` rows with `route`. */
function run(route: () => void): number {
  const start = process.hrtime.bigint();
  for (let done = 0; done < rows; done += BATCH) {
    route();
    for (const writer of writers) writer.reset();
    counts.fill(0);
  }
  return Number(process.hrtime.bigint() - start) / rows;
}

// `--first map` runs the map first in each round (an order effect shows as the two swapping).
const mapFirst = flag('--first') === 'map';
if (flag('--first') !== undefined && flag('--first') !== 'map' && flag('--first') !== 'modulo') throw new Error(`--first must be map or modulo, not ${flag('--first')}`);
const modulo: number[] = [];
const mapped: number[] = [];
const ways = [
  { name: 'modulo', route: routeModulo, figures: modulo },
  { name: 'map', route: routeMap, figures: mapped },
];
if (mapFirst) ways.reverse();
// One warm-up run of each, then the rounds, each way in the same order every round.
for (const way of ways) run(way.route);
for (let round = 0; round < rounds; round++) {
  for (const way of ways) {
    way.figures.push(run(way.route));
    report(`${way.name}_round${round + 1}`, way.figures.at(-1)!, 'ns/row');
  }
}
report('modulo_median', median(modulo), 'ns/row');
report('map_median', median(mapped), 'ns/row');
report('map_over_modulo', median(mapped) / median(modulo), 'ratio');
report('load_1m', loadavg()[0]!, 'load');
