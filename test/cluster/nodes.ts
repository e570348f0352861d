// The nodes of one test file's cluster: a real etcd (test/support/etcd.ts), a temporary folder
// holding each node's data directory and the shared checkpoint folder (a file: URL), oxbow server
// processes started on them with the folder's usual cadence (a checkpoint every 300 ms, a barrier
// every 100 ms), and everything stopped and removed after the file's tests; and the wait for a
// node to be listed on the leader with its share address (the remote-share tests).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { startEtcd, type EtcdServer } from '../support/etcd.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { nodes, until } from './remote-share-views.js';

export interface ClusterNodes {
  /** The temporary folder: node `name`'s data directory is `<work>/<name>`. */
  readonly work: string;
  /** etcd's client endpoint, `http://host:port`. */
  readonly etcdEndpoint: string;
  /** Starts node `name` as a member of the cluster (stopped after the file's tests), with `extraEnv` besides the file's. */
  startNode(name: string, extraEnv?: Readonly<Record<string, string>>): Promise<OxbowServer>;
}

/**
 * Registers the file's beforeAll (etcd, the folder) and afterAll (every node started, etcd, the
 * folder); `env` goes to every node (the lease TTL, the standby-writes mode, deadlines).
 */
export function clusterNodes(prefix: string, env: Readonly<Record<string, string>>): ClusterNodes {
  let etcd: EtcdServer | undefined;
  let work: string | undefined;
  const nodes: OxbowServer[] = [];

  beforeAll(async () => {
    etcd = await startEtcd();
    work = mkdtempSync(join(tmpdir(), prefix));
  });

  afterAll(async () => {
    for (const node of nodes) await node.stop().catch(() => undefined);
    await etcd?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  return {
    get work(): string {
      if (work === undefined) throw new Error('the cluster starts in beforeAll');
      return work;
    },
    get etcdEndpoint(): string {
      if (etcd === undefined) throw new Error('the cluster starts in beforeAll');
      return etcd.endpoint;
    },
    async startNode(name: string, extraEnv: Readonly<Record<string, string>> = {}): Promise<OxbowServer> {
      if (etcd === undefined || work === undefined) throw new Error('the cluster starts in beforeAll');
      const node = await startOxbow({
        dataDir: join(work, name),
        args: ['--cluster', etcd.url, '--checkpoint-url', pathToFileURL(join(work, 'checkpoints')).href, '--checkpoint-interval-ms', '300', '--barrier-interval-ms', '100'],
        env: { ...env, ...extraEnv },
      });
      nodes.push(node);
      return node;
    },
  };
}

/**
 * The node id of `node` once the leader's `oxbow_catalog.nodes` lists it (its address, the port of
 * its ready line) with a share address: what `--remote-shares on` needs before the leader gives it
 * a share. Past `timeoutMs` the error names the node and carries `stderr()`.
 */
export async function shareAddressListed(leader: pg.Client, node: OxbowServer, stderr: () => string, timeoutMs = 30_000): Promise<string> {
  return await until(
    `the leader never listed node ${node.host}:${node.port} with a share address`,
    async () => (await nodes(leader)).find((row) => row.address.endsWith(`:${node.port}`) && row.share_address !== null)?.node_id,
    timeoutMs,
    stderr,
  );
}
