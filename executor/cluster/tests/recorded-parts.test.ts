// Which of the nodes' parts a leader's checkpoint records (remote-shares.ts' `neededParts` and
// `recordedParts`): with OXBOW_KEYED_NODE_STATE a part of each share whose state only its node held
// as the cut began or holds after it, never a part of another share (its state is in the leader's
// files; the node's store would bring back older state where a promotion or a store made from the
// checkpoint takes it); without it every part; a missing part, and a share that came back while
// the cut was made, fail the checkpoint.

import { describe, expect, it } from 'vitest';
import type { ManifestPart } from '../../../storage/checkpoint/manifest.js';
import { neededParts, recordedParts } from '../remote-shares.js';

function part(node: string, share?: string): ManifestPart {
  return { node, incarnation: 'i', view: 1, owner: 2, vnodes: [0, 1], tables: [7], ...(share === undefined ? {} : { share }), epoch: '5', files: [], totalBytes: 0 };
}

describe("the nodes' parts a checkpoint records", () => {
  it('needs the shares held at the cut or after it, and fails on one that came back meanwhile', () => {
    expect([...neededParts(new Map([['s1', 'b']]), new Map([['s1', 'b'], ['s2', 'c']]))]).toEqual([['s1', 'b'], ['s2', 'c']]);
    expect([...neededParts(new Map(), new Map())]).toEqual([]);
    expect(() => neededParts(new Map([['s1', 'b'], ['s3', 'c']]), new Map([['s1', 'b']]))).toThrow('the state of keyed share s3 came back from node c to this node while the checkpoint was cut');
  });

  it("keeps the needed shares' parts only with node state, and every part without it", () => {
    const given = [part('b', 's1'), part('b', 'old'), part('c', 's2'), part('c')];
    expect(recordedParts(given, new Map([['s1', 'b'], ['s2', 'c']]), true)).toEqual([given[0], given[2]]);
    expect(recordedParts(given, new Map(), true)).toEqual([]);
    expect(recordedParts(given, new Map(), false)).toEqual(given);
  });

  it('fails without a part of a needed share', () => {
    expect(() => recordedParts([part('b', 's1')], new Map([['s1', 'b'], ['s9', 'c']]), true)).toThrow('node c gave no part of keyed share s9, whose state only it holds');
  });
});
