// The chaos run of chaos-shares.test.ts with every node's keyed share stores in the leader's
// checkpoints (OXBOW_KEYED_NODE_CHECKPOINTS=on): each checkpoint to s3rver also asks every node
// running a keyed share for its stores, cut and uploaded under nodes/<node id>/. Ten SIGKILLs, the
// leader every other time, land while nodes cut and upload and while the leader waits for them:
// the views still equal their recomputation, the Kafka sink's topic holds every message once, and
// some node answered the leader's checkpoints with its stores.

import { describeChaos } from './chaos.js';

describeChaos({
  name: 'chaos-node-checkpoints',
  args: ['--parallelism', '2', '--cores', '8', '--remote-shares', 'on'],
  shares: true,
  sink: true,
  env: { OXBOW_KEYED_NODE_CHECKPOINTS: 'on' },
  logged: /[1-9]\d* keyed share stores? checkpointed at epoch \d+/,
});
