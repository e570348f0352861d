// The chaos run of chaos.ts with the work spread: every node at --parallelism 2 with
// --remote-shares on, so the grouped views' keyed fragments have shares on the standbys (taken
// from their checkpoints when they join, failed over to the leader when they die, cut again when
// they come back) and the filter's Kafka source fragment has the nodes fetch its offset ranges.
// Ten SIGKILLs, the leader every other time: the views still equal their recomputation, the Kafka
// sink's topic holds every message once, and some node other than the leader of the moment
// processed rows of a keyed fragment and fetched Kafka offsets.
//
// A leader killed between a delivery's send and its commit leaves that Kafka transaction open;
// a new leader's sink fences it before it reads its topic's tail (executor/connectors/SINKS.md,
// "Kafka"). Before it did, the open transaction held the topic's last stable offset: the sink's
// tail reads failed and read_committed readers saw nothing past it (seed 7614 once lacked every
// message from id 3200 on).

import { describeChaos } from './chaos.js';

describeChaos({ name: 'chaos-shares', args: ['--parallelism', '2', '--cores', '8', '--remote-shares', 'on'], shares: true, sink: true });
