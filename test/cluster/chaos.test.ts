// Ten SIGKILLs of random nodes of a three-node cluster (the leader every other time) while a Kafka
// topic feeds views and a sink (chaos.ts says what is checked): the leader does all the work.

import { describeChaos } from './chaos.js';

describeChaos({ name: 'chaos', args: [], shares: false, sink: true });
