// The chaos run of chaos-shares.test.ts with the keyed shares' state kept on their nodes
// (OXBOW_KEYED_NODE_STATE=on): the leader's database gets none of a node's state writes, keeping
// them in memory until a checkpoint to s3rver holds the node's part. Ten SIGKILLs, the leader every
// other time: a killed node's shares come back to the leader from its part and the writes kept
// since, a cut first takes back the same way each share it stops or takes vnodes from (a share it
// keeps whole stays on its node), a promoted leader takes the nodes' vnodes from the parts of the
// checkpoint it restores, and so do the nodes' stores its first cut makes from that checkpoint.
// The views still equal their recomputation, the Kafka sink's topic holds every message once, and
// some node's share was restored on the leader that way.

import { describeChaos } from './chaos.js';

describeChaos({
  name: 'chaos-node-state',
  args: ['--parallelism', '2', '--cores', '8', '--remote-shares', 'on'],
  shares: true,
  sink: true,
  env: { OXBOW_KEYED_NODE_STATE: 'on' },
  logged: /the keyed share on node \S+ is restored on this node from/,
});
