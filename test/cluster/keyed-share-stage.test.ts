// A joining node's seed sent ahead of the cut (executor/cluster/README.md, "Keyed shares"), and
// the node dying on either side of the cut: real oxbow nodes on a real etcd at --parallelism 2,
// the cut held 1.5 s (under b's 3 s lease) after the seeds are on the node (OXBOW_KEYED_SEED_CUT_HOLD_MS) so that a kill
// lands between them, the seeds in many small pieces (OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES).
//
// - node b joins a running GROUP BY and join; once b says a seed sent ahead is written, b is
//   SIGKILLed before the cut: a cut for b sends the seed whole (none sent ahead) and its share
//   fails over to the leader, or b's lease goes first and the read is dropped; the threads end up
//   with every vnode (a cut for b hands them back); writes go on
//   all along and each view equals the batch SELECT of its query; no share of b is counted in
//   oxbow_catalog.nodes (no row of b with seed rows);
// - node c joins: its seeds go ahead and the cut opens its shares with the kept writes only (the
//   log says 1 of 1 seed sent ahead for each fragment), c processes rows; SIGKILLed after the cut,
//   the leader takes its shares over, and the views equal their recomputation again.

import { describe, expect, it } from 'vitest';
import { clusterNodes, shareAddressListed } from './nodes.js';
import { expectKeyedViewsEqual, explain, keyedViews, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const cluster = clusterNodes('oxbow-keyed-share-stage-', {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
  // The leader reads and sends the seeds (the path a node that makes no store from a checkpoint takes).
  OXBOW_KEYED_SEED_FROM: 'read',
  OXBOW_KEYED_SEED_CUT_HOLD_MS: '1500',
  OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '4096',
});

const GROUPS = 1009;

const count = (text: string, pattern: RegExp): number => [...text.matchAll(pattern)].length;

describe("a keyed share's seed sent ahead of the cut", () => {
  it('a node killed after its seed went ahead and before the cut leaves the view whole; one killed after the cut is taken over', async () => {
    const a = await cluster.startNode('a');
    const leader = await connectWhenServing(a);
    await keyedViews(leader, { groups: GROUPS, t: 20000, u: 3000 });
    await expectKeyedViewsEqual(leader, () => a.stderr());

    let next = 20000;
    let writing = true;
    let step = 0;
    const writer = (async () => {
      while (writing) {
        step++;
        await leader.query(`update t set v = v + 1 where id % 13 = ${step % 13}`);
        await leader.query(`delete from t where id % 97 = ${step % 97}`);
        await leader.query(`insert into t select g, g % ${GROUPS}, g * 3 % 1000 from generate_series(${next + 1}, ${next + 50}) g`);
        await leader.query(`update u set w = w + 2 where id % 17 = ${step % 17}`);
        next += 50;
      }
    })();
    const b = await cluster.startNode('b');
    let c: Awaited<ReturnType<typeof cluster.startNode>> | undefined;
    const stderr = () => `--- a ---\n${a.stderr()}\n--- b ---\n${b.stderr()}${c === undefined ? '' : `\n--- c ---\n${c.stderr()}`}`;
    let bId: string;
    try {
      bId = await shareAddressListed(leader, b, stderr);
      // b holds a seed sent ahead; the cut waits 1.5 s more: b dies before it.
      await until("node b never wrote a seed sent ahead", async () => (/a keyed share's seed sent ahead is written/.test(b.stderr()) ? true : undefined), 60_000, stderr);
      expect(a.stderr()).not.toMatch(/took vnodes/);
      await b.kill('SIGKILL');
      // A cut for b may come (its seed goes whole: none is staged on b any more) and its share
      // fails over, or b's lease goes first and the read is dropped; either way the threads end
      // up with every vnode.
      for (const view of ['kv', 'ju']) {
        await until(`${view} never cut its vnodes back to the threads`, async () => (/to 2 workers, vnodes cut again \d+ times?/.test(await explain(leader, view)) ? true : undefined), 60_000, stderr);
      }
    } finally {
      writing = false;
      await writer;
    }
    const cutsForB = [...a.stderr().matchAll(/node (\S+) took vnodes \(seeds read in \d+ ms while the owners ran, (\d+) of 1 seed sent ahead([^,]*)/g)];
    // A seed was on b when b died: that cut says its link closed, after the seed was staged or, on
    // a loaded machine, before b's `staged` answer (written after its log line) reached the leader.
    expect(cutsForB.length, stderr()).toBeGreaterThan(0);
    for (const cut of cutsForB) expect([cut[1], cut[2]]).toEqual([bId, '0']);
    expect(cutsForB.some((cut) => new RegExp(`node ${bId}: (the link closed after the seed was staged|the connection closed|read ECONNRESET|write EPIPE)`).test(cut[3]!)), stderr()).toBe(true);
    expect(count(a.stderr(), new RegExp(`node ${bId}( \\(failed over before\\))? handed its vnodes back`, 'g'))).toBe(cutsForB.length);
    await leader.query('update t set v = v + 5');
    await leader.query(`delete from t where id % 7 = 3`);
    await leader.query('update u set w = w + 1');
    await expectKeyedViewsEqual(leader, stderr);
    // Nothing of b's shares is counted on the leader any more.
    const bRows = (await leader.query<{ share_seed_rows: string | null }>('select share_seed_rows from oxbow_catalog.nodes where node_id = $1', [bId])).rows;
    expect(bRows.filter((row) => Number(row.share_seed_rows ?? 0) > 0)).toEqual([]);

    // c joins: its seeds go ahead and its shares open with the kept writes only.
    c = await cluster.startNode('c');
    const cId = await shareAddressListed(leader, c, stderr);
    await until('the views never took shares on node c', async () => (count(a.stderr(), new RegExp(`node ${cId} took vnodes`, 'g')) === 2 ? true : undefined), 60_000, stderr);
    for (const view of ['kv', 'ju']) expect(await explain(leader, view)).toMatch(/to 2 workers and 1 other node, vnodes cut again \d+ times?/);
    const cutsForC = [...a.stderr().matchAll(new RegExp(`node ${cId} took vnodes \\(seeds read in \\d+ ms while the owners ran, (\\d+) of 1 seed sent ahead,`, 'g'))];
    expect(cutsForC.map((cut) => cut[1])).toEqual(['1', '1']);
    await leader.query(`insert into t select g, g % ${GROUPS}, g % 1000 from generate_series(${next + 1}, ${next + 3000}) g`);
    next += 3000;
    await leader.query('update u set w = w + 3');
    await expectKeyedViewsEqual(leader, stderr);
    const cRows = (await leader.query<{ share_rows: string | null }>('select share_rows from oxbow_catalog.nodes where node_id = $1', [cId])).rows[0]?.share_rows;
    expect(Number(cRows ?? 0)).toBeGreaterThan(0);
    expect(a.stderr()).not.toMatch(new RegExp(`the keyed share on node ${cId} .* failed`));

    // c dies after the cut: the leader takes its shares over, nothing lost or doubled.
    await c.kill('SIGKILL');
    await leader.query(`insert into t select g, g % ${GROUPS}, g % 1000 from generate_series(${next + 1}, ${next + 2000}) g`);
    await leader.query(`delete from t where id % 11 = 4`);
    await until('the leader never took c\'s shares over', async () => (count(a.stderr(), new RegExp(`the keyed share on node ${cId} \\(\\S+\\) failed: .*; its share runs on this node from now on`, 'g')) === 2 ? true : undefined), 60_000, stderr);
    await expectKeyedViewsEqual(leader, stderr);
    expect(a.stderr()).not.toMatch(/could not be seeded/);
    await leader.end();
  }, 300_000);
});
