// A node's share that takes back vnodes it gave away is kept: its node's store is first rid of
// every vnode the share held and does not own, its caches emptied (executor/cluster/README.md,
// "Membership"). A real oxbow leader at --parallelism 2 (--cores 8) on a real etcd with
// --remote-shares on, node b's share running throughout; other nodes join and are drained one
// after another, each taking some of b's vnodes and handing them back, until a drain gives b
// back vnodes it held (the third, with the map's choices). Both ways a share's store is made:
//
// - from the checkpoint b's node follows (the default): the checkpoint holds every vnode, and b's
//   node copies only b's vnodes' key ranges out of it into the share's store (an older view's
//   store: the vnodes b does not own deleted from it, its log naming exactly those vnodes, and
//   their rows, counted here);
// - of SST files the leader copies out of its own database (OXBOW_KEYED_SEED_FROM=files): b's
//   vnodes' key ranges only, exported at the seed read's start and ingested by b's node, and the
//   vnodes b takes back the same way (files its node keeps until the cut, ingested after the range
//   deletes);
// - from the seed the leader reads (OXBOW_KEYED_SEED_FROM=read): b's vnodes only.
//
// The view's state keys carry their vnode (plan version 11), so b's node deletes vnodes by range
// deletes, and takes the vnodes it gains from its checkpoint as SST files of their ranges; once more with the view made at plan version 10 (OXBOW_STREAM_PLAN_VERSION), as a view
// an older build made, whose keys have vnode byte 0: deleted key by key, each row's vnode hashed.
//
// A GROUP BY view over 40,000 groups (more than an aggregate loads whole, so b's groups are cached
// as read and written) is written all over once b runs, then only in the groups b does not own,
// so b's caches keep their entries of the groups it gives away while others change them, and all
// over again once b took vnodes back:
//
// - every cut keeps every owner running (started: only the node that joins);
// - the drain that gives b back vnodes (worked out from the maps oxbow_catalog.vnodes showed
//   after each cut) says b's store was rid of exactly the vnodes it held and did not own then,
//   and b's node dropped the rows of exactly the groups of those vnodes (counted by hashing each
//   group key as the exchange does);
// - after each phase the view equals the batch SELECT of its query: a share answering from its
//   caches as they were before it gave a vnode away would count those groups from their rows of then.

import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { vnodeOf } from '../../executor/stream/parallel/vnode.js';
import { type as scalar } from '../../sql/types.js';
import type { OxbowServer } from '../support/server.js';
import { clusterNodes, shareAddressListed, type ClusterNodes } from './nodes.js';
import { expectKvEqual, explain, groupedView, until } from './remote-share-views.js';
import { connectWhenServing } from './sessions.js';

const settings = {
  OXBOW_CLUSTER_LEASE_TTL_S: '3',
  OXBOW_PARALLELISM: '2',
  OXBOW_CORES: '8',
  OXBOW_REMOTE_SHARES: 'on',
  OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000',
};
const fromCheckpoints = clusterNodes('oxbow-keyed-share-take-back-', settings);
const fromFiles = clusterNodes('oxbow-keyed-share-take-back-files-', { ...settings, OXBOW_KEYED_SEED_FROM: 'files' });
const fromReads = clusterNodes('oxbow-keyed-share-take-back-read-', { ...settings, OXBOW_KEYED_SEED_FROM: 'read' });
const olderView = clusterNodes('oxbow-keyed-share-take-back-older-', settings);

const GROUPS = 40_000;

/** How many runs of consecutive vnodes a set of them makes (one range delete each per table). */
function vnodeRuns(vnodes: ReadonlySet<number>): number {
  let runs = 0;
  for (let vnode = 0; vnode < 256; vnode++) if (vnodes.has(vnode) && !vnodes.has(vnode - 1)) runs++;
  return runs;
}

/** The view's owner of each vnode: a node id, or `node/thread` for the leader's threads. */
async function owners(leader: pg.Client): Promise<string[]> {
  const rows = (await leader.query<{ vnode: number; node_id: string; thread: number | null }>(`select vnode, node_id, thread from oxbow_catalog.vnodes where view_name = 'kv' order by vnode`)).rows;
  expect(rows.map((row) => row.vnode)).toEqual(Array.from({ length: 256 }, (_, vnode) => vnode));
  return rows.map((row) => (row.thread === null ? row.node_id : `${row.node_id}/${row.thread}`));
}

describe("a keyed fragment whose node's share takes back vnodes", () => {
  it('keeps it running, its store made from a checkpoint with its own vnodes only, the view equal to its recomputation', async () => {
    await takeBack(fromCheckpoints, 'checkpoint');
  }, 300_000);
  it("keeps it running, its store made of SST files of the leader's, the view equal to its recomputation", async () => {
    await takeBack(fromFiles, 'files');
  }, 300_000);
  it('keeps it running, its store seeded by the leader, the view equal to its recomputation', async () => {
    await takeBack(fromReads, 'read');
  }, 300_000);
  it("keeps it running with an older view's state, keyed under vnode 0 (read and deleted key by key)", async () => {
    await takeBack(olderView, 'checkpoint', 10);
  }, 300_000);
});

/** `planVersion` 10: the view made as a build before the vnode in the key made it (OXBOW_STREAM_PLAN_VERSION on the leader). */
async function takeBack(cluster: ClusterNodes, seeds: 'checkpoint' | 'files' | 'read', planVersion?: number): Promise<void> {
  {
    const a = await cluster.startNode('a', planVersion === undefined ? {} : { OXBOW_STREAM_PLAN_VERSION: String(planVersion) });
    /**
     * How b's node says it deleted `vnodes` (a set of them): by one range delete per run of them
     * per state table (a multiple of their runs, the same one every time), or, in a view whose
     * keys do not carry their vnode, key by key, the rows of exactly their groups counted.
     */
    let tablesDeleted: number | undefined;
    const expectDeleted = (said: string, vnodes: ReadonlySet<number>): void => {
      if (planVersion === undefined) {
        const ranges = /^(\d+) range deletes?, about [\d.]+ MiB$/.exec(said);
        expect(ranges, `${said}\n${stderr()}`).not.toBeNull();
        const runs = vnodeRuns(vnodes);
        expect(Number(ranges![1]) % runs, said).toBe(0);
        tablesDeleted ??= Number(ranges![1]) / runs;
        expect(Number(ranges![1])).toBe(runs * tablesDeleted);
        expect(tablesDeleted).toBeGreaterThan(0);
      } else {
        const rows = groupVnodes.filter((vnode) => vnodes.has(vnode)).length;
        expect(rows).toBeGreaterThan(0);
        expect(said, stderr()).toMatch(new RegExp(`^${rows} rows, \\d+ entries, no range delete$`));
      }
    };
    const leader = await connectWhenServing(a);
    let b: OxbowServer | undefined;
    let other: OxbowServer | undefined;
    const stderr = () => `--- a ---\n${a.stderr()}${b === undefined ? '' : `\n--- b ---\n${b.stderr()}`}${other === undefined ? '' : `\n--- other ---\n${other.stderr()}`}`;
    const { writeAll, nextRound } = await groupedView(leader, GROUPS);
    const int4 = scalar('int4');
    const groupVnodes = Array.from({ length: GROUPS }, (_, k) => vnodeOf([k], [int4]));
    /** Every row of the groups node b's share does not own in the map now. */
    const writeOthers = async () => {
      const others = groupVnodes.flatMap((vnode, k) => (map[vnode] === bId ? [] : [k]));
      expect(others.length).toBeLessThan(GROUPS);
      await leader.query('update t set v = v + $1 where k = any($2::int[])', [nextRound(), others]);
    };
    await writeAll();
    await expectKvEqual(leader, GROUPS, stderr);

    // b joins once every group is there (its store from a checkpoint holds them all).
    b = await cluster.startNode('b');
    const bId = await shareAddressListed(leader, b, stderr);
    let cuts = 1;
    await until('the view never took a share on node b', async () => (/to 2 workers and 1 other node, vnodes cut again 1 time/.test(await explain(leader)) ? true : undefined), 60_000, stderr);
    let map: string[] = await owners(leader);
    // Every vnode b's share's store may hold entries of: those it owned since it started.
    const held = new Set<number>();
    const notB = new Set(map.flatMap((owner, vnode) => (owner === bId ? [] : [vnode])));
    if (seeds === 'checkpoint' && planVersion === undefined) {
      // Its store from the checkpoint holds b's vnodes only: their key ranges copied, the others left out.
      const made = /a keyed share's store is made from checkpoint \d+ \([^)]*; the (\d+) vnodes? it owns copied into [1-9]\d* SST files? \(([1-9]\d*) entries, [1-9]\d* bytes\) in \d+ ms, the others left out\)/.exec(b.stderr());
      expect(made, stderr()).not.toBeNull();
      expect(Number(made![1])).toBe(256 - notB.size);
    } else if (seeds === 'checkpoint') {
      // An older view's: its store from the checkpoint kept b's vnodes only, every other vnode's groups deleted.
      const made = /a keyed share's store is made from checkpoint \d+ \([^)]*; the (\d+) vnodes it does not own deleted \(([^)]*)\) in \d+ ms\)/.exec(b.stderr());
      expect(made, stderr()).not.toBeNull();
      expect(Number(made![1])).toBe(notB.size);
      expectDeleted(made![2]!, notB);
    } else if (seeds === 'files') {
      // Its store is the leader's export of b's vnodes at the read's start (and the records), ingested.
      expect(b.stderr(), stderr()).toMatch(/a keyed share's store is made of [12] SST files? the leader copied out of its database at epoch \d+ \([^;]*; [1-9]\d* bytes received in \d+ ms, ingested in \d+ ms\)/);
      expect(a.stderr()).toMatch(new RegExp(`node ${bId} as SST files of epoch \\d+, \\d+ bytes sent`));
      expect(b.stderr()).not.toContain("a keyed share's store is made from checkpoint");
    } else {
      expect(b.stderr()).not.toContain("a keyed share's store is made from checkpoint");
      expect(b.stderr()).not.toContain('SST files the leader copied');
    }
    const note = () => map.forEach((owner, vnode) => owner === bId && held.add(vnode));
    note();
    await writeAll();
    await expectKvEqual(leader, GROUPS, stderr);

    let tookBack = false;
    for (const name of ['c', 'd', 'e', 'f', 'g']) {
      other = await cluster.startNode(name);
      await shareAddressListed(leader, other, stderr);
      cuts++;
      await until(`the view never took a share on node ${name}`, async () => (new RegExp(`to 2 workers and 2 other nodes, vnodes cut again ${cuts} times`).test(await explain(leader)) ? true : undefined), 60_000, stderr);
      map = await owners(leader);
      note();
      await writeOthers();
      await expectKvEqual(leader, GROUPS, stderr);

      const before = map;
      await other.kill('SIGTERM');
      cuts++;
      await until(`the view never cut its owners without node ${name}`, async () => (new RegExp(`to 2 workers and 1 other node, vnodes cut again ${cuts} times`).test(await explain(leader)) ? true : undefined), 60_000, stderr);
      map = await owners(leader);
      const drain = a.stderr().split('\n').filter((line) => line.includes('handed its vnodes back')).at(-1) ?? '';
      // Every owner kept: the threads and b's share.
      expect(drain, stderr()).toMatch(/kept 3 owners running \(2 threads, 1 node's share; 3 of them took vnodes.*\), started 0/);
      const backToB = map.flatMap((owner, vnode) => (owner === bId && before[vnode] !== bId && held.has(vnode) ? [vnode] : []));
      if (backToB.length === 0) {
        note();
        await writeOthers();
        await expectKvEqual(leader, GROUPS, stderr);
        continue;
      }
      // b takes back vnodes it held: its store loses every vnode it held and did not own then.
      const dropped = [...held].filter((vnode) => before[vnode] !== bId);
      expect(dropped.length).toBeGreaterThanOrEqual(backToB.length);
      expect(drain).toContain(`1 node's store rid of ${dropped.length} vnode${dropped.length === 1 ? '' : 's'} not owned`);
      // Its node drops them, then writes the vnodes it gains and passes the remap on.
      await until('node b never said its share took back vnodes', async () => (b.stderr().includes('a keyed share took vnodes, some it held before,') ? true : undefined), 30_000, stderr);
      const drop = new RegExp(`a keyed share's store dropped the entries of ${dropped.length} vnodes? it did not own \\(([^)]*), in \\d+ ms\\)`).exec(b.stderr());
      expect(drop, stderr()).not.toBeNull();
      expectDeleted(drop![1]!, new Set(dropped));
      // The vnodes it takes: from its checkpoint or the leader's export, as SST files of their key
      // ranges ingested after the range deletes (an older view's tables are read into memory and
      // written instead); from the leader's read, written.
      const took = /a keyed share took vnodes, some it held before, \(([^)]*)\)/.exec(b.stderr());
      expect(took, stderr()).not.toBeNull();
      if (seeds !== 'read' && planVersion === undefined) expect(took![1]).toMatch(/^\d+ bytes of their seed written to its store, [1-9]\d* bytes of SST files ingested$/);
      else expect(took![1]).toMatch(/^[1-9]\d* bytes of their seed written to its store$/);
      // The leader's export of the vnodes b gains, kept by b's node until the cut.
      if (seeds === 'files') expect(b.stderr()).toMatch(/a keyed share's gained vnodes came as 1 SST file the leader copied out of its database at epoch \d+ \([1-9]\d* entries, [1-9]\d* bytes received in \d+ ms\)/);
      else expect(b.stderr()).not.toContain("a keyed share's gained vnodes came as");
      await writeAll();
      await expectKvEqual(leader, GROUPS, stderr);
      await writeAll();
      await expectKvEqual(leader, GROUPS, stderr);
      tookBack = true;
      break;
    }
    expect(tookBack, 'no drain gave node b back vnodes it held').toBe(true);
    expect(await explain(leader)).toMatch(/vnodes cut again \d+ times \(\d+ owners kept, \d+ of them taking vnodes, \d+ started\)/);
    await leader.end();
  }
}
