// A loopback port for a server a test starts: the operating system's choice of a free one, released
// at once (it can be taken before the server binds it: the callers that can retry, do).

import { createServer } from 'node:net';

/** A port nothing listens on at 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
