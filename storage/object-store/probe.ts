// The check at start that the checkpoint URL works: a small object is written, read back,
// compared and deleted, each step within the request deadline (at most PROBE_TIMEOUT_MS), so a
// folder that cannot be written (`file:///sys/...`), a folder that never answers (`file:///proc/...`,
// a hung mount), a missing bucket or refused credentials stop the server before it says it is
// ready, instead of failing every checkpoint after. The error names the URL and the cause.

import { randomBytes } from 'node:crypto';
import { SqlError, SqlState } from '../../sql/errors.js';
import { ObjectStoreError, type ObjectStore } from './object-store.js';

/** The probe's objects: outside the checkpoint layout (manifests/, sst/, files/), never swept. */
export const PROBE_PREFIX = 'probe/';

/** A start-up check waits at most this long for one request, whatever the request deadline. */
export const PROBE_TIMEOUT_MS = 15_000;

function hintFor(error: unknown, url: string): string {
  const folder = url.startsWith('file://');
  if (!(error instanceof ObjectStoreError)) return 'check --checkpoint-url';
  switch (error.code) {
    case 'AccessDenied':
      return folder
        ? 'the folder cannot be written: fix its permissions or choose another --checkpoint-url'
        : 'the bucket refuses the request: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket policy';
    case 'NoSuchBucket':
      return 'create the bucket or fix --checkpoint-url';
    case 'Unavailable':
      return folder
        ? 'the folder does not answer (a hung mount?): fix it or choose another --checkpoint-url; --object-store-timeout-ms sets the deadline of each request'
        : 'check that the object store is reachable and answers (AWS_ENDPOINT_URL, network); --object-store-timeout-ms sets the deadline of each request';
    default:
      return 'check --checkpoint-url';
  }
}

/**
 * Writes `probe/<random>`, reads it back, checks the bytes and deletes it. Throws SqlError 58030
 * naming `url` and the cause. open-object-store.ts runs it on a store of its own whose deadline is
 * at most PROBE_TIMEOUT_MS.
 */
export async function probeObjectStore(store: ObjectStore, url: string): Promise<void> {
  const key = `${PROBE_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`;
  const body = new TextEncoder().encode(`oxbow start-up probe ${new Date().toISOString()}\n`);
  try {
    await store.putBytes(key, body);
    const read = await store.getBytes(key);
    if (Buffer.compare(Buffer.from(read), Buffer.from(body)) !== 0) {
      throw new ObjectStoreError('Corrupt', `the probe object ${key} read back ${read.length} bytes that differ from the ${body.length} written`, { key });
    }
    await store.delete([key]);
  } catch (error) {
    const cause = error instanceof Error ? error.message : String(error);
    throw new SqlError(SqlState.ioError, `the checkpoint URL ${url} cannot be used: ${cause}`, { hint: hintFor(error, url), cause: error });
  }
}
