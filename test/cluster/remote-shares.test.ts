// A source fragment's shares on other nodes (--remote-shares on): three real oxbow nodes on a real
// etcd at --parallelism 2. The leader cuts each range of a datagen source into four shares (its
// two worker threads and the two standbys) and writes the standbys' batches in its own epochs.
//
// - the leader's oxbow_catalog.nodes lists the standbys' share addresses, and the units each
//   standby generated grow: the other processes did the work;
// - the view holds every number of the datagen sequence once, and its rows equal those of a second
//   source of the same definition aggregated on the leader's main thread (datagen's values are a
//   function of the seed, the column and the unit number);
// - one standby stopped (SIGSTOP) mid-run: the leader gives it up at the 10 s batch deadline and
//   runs its share itself from the epochs it had not answered on; then the other SIGKILLed: given
//   up at once (its connection closes); the leader goes on alone, and the view still holds every number once, with no gap, equal to its recomputation.

import { describe, expect, it } from 'vitest';
import { clusterNodes } from './nodes.js';
import { checkView, GEN, nodes, until, viewMax } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-remote-shares-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  // A view over the source runs as a source fragment (its shares on other nodes) at 2 workers on any machine.
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  // Twice the default deadline: a fresh node's first batch comes after its worker thread started
  // and built the plan, which a loaded machine (CI's two cores) stretched past 3 s, and once past
  // the default 10 s at load 43 (the node then counted as failed: "1 other node").
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '20000',
});

describe('remote shares of source fragments', () => {
  it("standbys generate shares of the leader's view; one stopped, one SIGKILLed: the leader takes their shares with no gap or duplicate", async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    const b = await cluster.startNode('b');
    const c = await cluster.startNode('c');
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}\n--- c ---\n${c.stderr()}`;
    const standbys = await until(
      'the standbys never listed their share addresses on the leader',
      async () => {
        const rows = (await nodes(leader)).filter((row) => row.role === 'standby' && row.share_address !== null);
        return rows.length === 2 ? rows : undefined;
      },
      30_000,
      stderr,
    );
    for (const row of standbys) {
      expect(row.share_address).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(row.share_address).not.toBe(row.address);
    }
    const idOf = (node: { host: string; port: number }) => standbys.find((row) => row.address === `${node.host}:${node.port}`)!.node_id;
    const [bId, cId] = [idOf(b), idOf(c)];
    const unitsOf = async (id: string) => Number((await nodes(leader)).find((row) => row.node_id === id)?.share_units ?? 0);

    await leader.query(GEN('gen'));
    await leader.query(GEN('gen_check'));
    await leader.query('create materialized view v as select id, v, id * 3 + 1 as w from gen');
    // The recomputation: the same rows, generated and aggregated on the leader's main thread.
    await leader.query('create materialized view v_check as select id, v, count(*) as n from gen_check group by id, v');
    const plan = (await leader.query({ text: 'explain v', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
    expect(plan).toContain('StreamSourceFragment gen split across 2 workers');

    const analyzed = (await leader.query({ text: 'explain analyze v', rowMode: 'array' })).rows.map((row) => String(row[0])).join('\n');
    expect(analyzed).toMatch(/StreamSourceFragment gen split across 2 workers and 2 other nodes: \d+ units/);
    await until('the standbys generated no units', async () => ((await unitsOf(bId)) >= 1500 && (await unitsOf(cId)) >= 1500 ? true : undefined), 60_000, stderr);
    // share_units count a batch when the leader receives it, before the epoch that carries it is
    // written and read: the view may lag them.
    await until('the view never held 3000 rows', async () => ((await viewMax(leader)) >= 3000 ? true : undefined), 60_000, stderr);
    expect((await checkView(leader)).max).toBeGreaterThanOrEqual(3000);

    try {
      // A node that stops answering (its process stopped): given up at the 20 s deadline.
      c.process.kill('SIGSTOP');
      const stoppedAt = (await checkView(leader)).max;
      await until(
        'the leader never gave up the stopped node',
        async () => (new RegExp(`the remote share on node ${cId} \\(127\\.0\\.0\\.1:\\d+\\) failed: no batch of epoch \\d+ within 20000 ms`).test(a.stderr()) ? true : undefined),
        60_000,
        stderr,
      );
      await until('the view did not grow after the node stopped', async () => ((await viewMax(leader)) > stoppedAt + 4000 ? true : undefined), 60_000, stderr);

      // A node killed: its connection closes, given up at once.
      await b.kill('SIGKILL');
      const killedAt = (await checkView(leader)).max;
      await until(
        'the view did not grow after the node was killed',
        async () => ((await viewMax(leader)) > killedAt + 8000 ? true : undefined),
        60_000,
        stderr,
      );
      expect(a.stderr()).toMatch(new RegExp(`the remote share on node ${bId} \\(127\\.0\\.0\\.1:\\d+\\) failed: .*; its share runs on this node from now on`));
      const after = await checkView(leader);
      expect(after.max).toBeGreaterThan(killedAt + 8000);
      expect(after.count).toBe(after.max);
    } finally {
      c.process.kill('SIGCONT');
    }
    await leader.end();
  }, 240_000);
});
