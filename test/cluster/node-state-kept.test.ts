// The bound on what the leader keeps of a node's state writes (OXBOW_KEYED_NODE_STATE=on,
// OXBOW_KEYED_NODE_STATE_KEPT_MIB; executor/cluster/keyed-share-worker.ts): two real oxbow nodes on
// a real etcd at --parallelism 2, checkpoints to a folder, the bound 1 MiB.
//
// A GROUP BY view built with a share on node b takes statements of 100,000 rows over 100,000 groups,
// whose batches pass the bound before a checkpoint holds them: the share comes back to the leader as at a cut
// (its log names the bound), its state restored from what the leader kept, and runs there. The
// view equals its query recomputed, node b answers no checkpoint for it any more, and the leader's
// /metrics show nothing kept of b's writes.

import { describe, expect, it } from 'vitest';
import { httpGet, metricsPortOf } from '../support/metrics-http.js';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKvEqual, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-node-state-kept-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  OXBOW_KEYED_NODE_STATE: 'on',
  OXBOW_KEYED_NODE_STATE_KEPT_MIB: '1',
  OXBOW_METRICS_PORT: '0',
});

const GROUPS = 100_000;

describe("the leader's bound on a node's kept writes", () => {
  it('brings the share back to the leader once its kept writes pass it', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    const b = await cluster.startNode('b');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}`;
    const bId = await shareAddressListed(leader, b, stderr);
    await leader.query('create table t (id int8 primary key, k int, v int8)');
    await leader.query('create materialized view kv as select k, count(*) as n, sum(v) as s from t group by k');
    let next = 0;
    const back = new RegExp(`the keyed share on node ${bId} \\([^)]*\\) comes back to this node: this node keeps (\\d+) bytes of its writes no checkpoint holds yet, more than OXBOW_KEYED_NODE_STATE_KEPT_MIB \\(1 MiB\\)`);
    const line = await until('the share never came back past the bound', async () => {
      await leader.query(`insert into t select g, g % ${GROUPS}, g from generate_series(${next + 1}, ${next + 100_000}) g`);
      next += 100_000;
      return back.exec(a.stderr()) ?? undefined;
    }, 60_000, stderr);
    expect(Number(line[1])).toBeGreaterThan(1 << 20);
    expect(a.stderr()).toMatch(new RegExp(`the keyed share on node ${bId} is restored on this node from`));
    await leader.query(`update t set v = v + 1 where id % 7 = 3`);
    await leader.query(`insert into t select g, g % ${GROUPS}, g from generate_series(${next + 1}, ${next + 1000}) g`);
    await expectKvEqual(leader, GROUPS, stderr);
    // The share runs on the leader: nothing of b's writes is kept any more.
    await until('the leader still keeps bytes of b\'s writes', async () => {
      const body = (await httpGet(metricsPortOf(a), '/metrics')).body;
      const sample = new RegExp(`^oxbow_cluster_node_share_kept_bytes\\{node="${bId}"\\} (\\d+)$`, 'm').exec(body);
      return sample !== null && Number(sample[1]) === 0 ? true : undefined;
    }, 30_000, stderr);
    await leader.end();
  }, 200_000);
});
