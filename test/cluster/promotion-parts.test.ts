// A promoted leader takes the nodes' vnodes from their checkpoint parts (executor/cluster/README.md,
// "Each node owning its vnodes' state", step 5; OXBOW_KEYED_NODE_CHECKPOINTS=on): three real oxbow
// nodes on a real etcd at --parallelism 2, checkpoints to a folder.
//
// A GROUP BY view and a join view run with shares on both standbys while updates, deletes and
// inserts go on, until a checkpoint names the four stores. The leader is SIGKILLed: the standby
// promoted restores the last recorded checkpoint and takes each of its parts (every one naming its
// tables keyed by vnode) into its state (storage/checkpoint/parts.ts), its log saying the four
// parts, their vnode ranges and entries. The views then equal their queries recomputed, before and
// after more writes: a part taken with versions past the checkpoint, or a range not deleted before
// the ingest, would count some rows twice or keep deleted ones.

import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { manifests } from './manifests.js';
import { clusterNodes } from './nodes.js';
import { expectKeyedViewsEqual, keyedViews, newLeader, threeNodesWithShares, until } from './remote-share-views.js';

const cluster = clusterNodes('oxbow-promotion-parts-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  OXBOW_KEYED_NODE_CHECKPOINTS: 'on',
});

const GROUPS = 2003;

describe("a promoted leader and the nodes' checkpoint parts", () => {
  it("a leader killed, the one promoted takes the nodes' vnodes from their parts and the views go on", async () => {
    const { a, b, c, first, stderr } = await threeNodesWithShares(cluster);
    await keyedViews(first, { groups: GROUPS, t: 20000, u: 3000 });
    const folder = join(cluster.work, 'checkpoints');
    // Both standbys run shares of both views, and a checkpoint names their four stores.
    const full = () => manifests(folder).filter((manifest) => new Set((manifest.parts ?? []).map((part) => part.node)).size === 2 && manifest.parts!.length === 4);
    let next = 20000;
    const round = async (step: number): Promise<void> => {
      await first.query(`update t set v = v + 1 where id % 13 = ${step % 13}`);
      await first.query(`delete from t where id % 89 = ${step % 89}`);
      await first.query(`insert into t select g, g % ${GROUPS}, g * 7 % 1000 from generate_series(${next + 1}, ${next + 200}) g`);
      next += 200;
      await first.query(`update u set w = w + 2, k = (k + 3) % ${GROUPS} where id % 19 = ${step % 19}`);
    };
    let step = 0;
    await until('no checkpoint named both standbys\' two stores', async () => {
      await round(step++);
      return full().at(-1);
    }, 90_000, stderr);
    await expectKeyedViewsEqual(first, stderr);
    for (let more = 0; more < 5; more++) await round(step++);
    await until('no checkpoint after the last writes named all four stores', async () => full().at(-1), 60_000, stderr);
    await first.end();

    await a.kill('SIGKILL');
    // What the dead leader left (the new one's retention deletes some soon).
    const left = manifests(folder);
    const { node, client: leader } = await newLeader([b, c], stderr);
    const line = await until('the new leader never said what it restored', async () => /is the leader \(checkpoint (\d+) restored, [^\n]*/.exec(node.stderr()) ?? undefined, 60_000, stderr);
    const restored = left.find((manifest) => manifest.epoch === line[1]);
    expect(restored, line[0]).toBeDefined();
    // Every part of the restored checkpoint names its tables keyed by vnode, and every one was taken.
    expect(restored!.parts?.length, line[0]).toBe(4);
    for (const part of restored!.parts!) expect(part.tables?.length).toBeGreaterThan(0);
    const taken = new RegExp(`, 4 node parts taken \\((\\d+) vnode ranges, (\\d+) entries, (\\d+) bytes\\);`).exec(line[0]);
    expect(taken, line[0]).not.toBeNull();
    expect(Number(taken![1])).toBeGreaterThan(0);
    expect(Number(taken![2])).toBeGreaterThan(1000);

    // The views equal their queries over what the checkpoint and the replay hold, and go on.
    await expectKeyedViewsEqual(leader, stderr);
    const rounds = async (count: number): Promise<void> => {
      for (let more = 0; more < count; more++) {
        await leader.query(`update t set v = v + 5 where id % 7 = ${more % 7}`);
        await leader.query(`insert into t select g, g % ${GROUPS}, g % 1000 from generate_series(${next + 1}, ${next + 100}) g`);
        next += 100;
        await leader.query(`update u set w = w + 1 where id % 11 = ${more % 11}`);
      }
    };
    await rounds(10);
    await expectKeyedViewsEqual(leader, stderr);
    await leader.end();
  }, 300_000);
});
