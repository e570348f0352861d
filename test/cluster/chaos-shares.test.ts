// The chaos run of chaos.ts with the work spread: every node at --parallelism 2 with
// --remote-shares on, so the grouped views' keyed fragments have shares on the standbys (taken
// from their checkpoints when they join, failed over to the leader when they die, cut again when
// they come back) and the filter's Kafka source fragment has the nodes fetch its offset ranges.
// Ten SIGKILLs, the leader every other time: the views still equal their recomputation, the sink
// holds every message once, and some node other than the leader of the moment processed rows of a
// keyed fragment and fetched Kafka offsets.

import { describeChaos } from './chaos.js';

describeChaos({ name: 'chaos-shares', args: ['--parallelism', '2', '--cores', '8', '--remote-shares', 'on'], shares: true });
