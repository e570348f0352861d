// `oxbow --cluster etcd://...`: serves a cluster node (executor/cluster/cluster-node.ts) instead of
// a single engine. The wire protocol port listens first (a standby answers 57P03 naming the
// leader), then the node joins etcd with the listening address, then the ready line is printed. A
// node that cannot reach etcd does not start (exit 1). A leader that loses its lease exits at once
// with code 3 (fencing: it must not commit once another node may lead); restarted, it joins as a
// standby. SIGINT/SIGTERM close the node and give its lease back, so a standby takes over at once.

import type { Server as HttpServer } from 'node:http';
import { ClusterNode } from '../executor/cluster/cluster-node.js';
import type { EngineOptions } from '../executor/engine/create-engine.js';
import type { EngineMetrics } from '../executor/metrics/engine-metrics.js';
import { PgServer } from '../pgwire/server.js';
import type { TlsSettings } from '../pgwire/tls.js';
import { onShutdownSignals, readyLine, startMetrics, type CliConfig } from './cli.js';

/** Exit code of a leader fenced off by the loss of its etcd lease. */
export const FENCED_EXIT_CODE = 3;

/**
 * Tuning for tests and benchmarks (not flags), parsed with the command line (CliConfig: the lease
 * TTL, the stall bound, the forward timeout; a malformed value is refused at start), and
 * OXBOW_CLUSTER_COLD_STANDBY=1: a standby that does not follow checkpoints (it downloads everything
 * when promoted: the benchmark's cold node).
 */
function clusterTuning(config: CliConfig, env: Readonly<Record<string, string | undefined>>): { leaseTtlSeconds?: number; stallMs?: number; followCheckpoints?: boolean; forwardTimeoutMs?: number } {
  return {
    ...(config.forwardTimeoutMs === undefined ? {} : { forwardTimeoutMs: config.forwardTimeoutMs }),
    ...(config.leaseTtlSeconds === undefined ? {} : { leaseTtlSeconds: config.leaseTtlSeconds }),
    ...(config.stallSeconds === undefined ? {} : { stallMs: config.stallSeconds * 1000 }),
    ...(env['OXBOW_CLUSTER_COLD_STANDBY'] === '1' ? { followCheckpoints: false } : {}),
  };
}

export async function serveClusterNode(
  config: CliConfig,
  engineOptions: EngineOptions,
  tls: TlsSettings | undefined,
  engineMetrics: EngineMetrics,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  const node = new ClusterNode(engineOptions, {
    endpoints: config.cluster!.endpoints,
    prefix: config.cluster!.prefix,
    standbyWrites: config.standbyWrites,
    ...(config.remoteShares
      ? {
          remoteShares: {
            host: config.host,
            ...(config.remoteShareTimeoutMs === undefined ? {} : { timeoutMs: config.remoteShareTimeoutMs }),
            ...(config.keyedSeedFrom === undefined ? {} : { seedFrom: config.keyedSeedFrom }),
            ...(config.keyedNodeCheckpoints === true ? { nodeCheckpoints: true } : {}),
            ...(config.keyedNodeState === true ? { nodeState: true } : {}),
          },
        }
      : {}),
    ...clusterTuning(config, env),
    log: (line) => void process.stderr.write(line + '\n'),
    onFenced: (reason) => {
      process.stderr.write(`oxbow: ${reason}; exiting at once (code ${FENCED_EXIT_CODE}): restarted, this node joins as a standby\n`);
      process.exit(FENCED_EXIT_CODE);
    },
  });
  const server = new PgServer({ engine: node, host: config.host, port: config.port, password: config.password, tls });
  let address: { host: string; port: number };
  try {
    address = await server.listen();
  } catch (error) {
    process.stderr.write(`oxbow: could not listen on ${config.host}:${config.port}: ${error instanceof Error ? error.message : String(error)}\n`);
    await node.close().catch(() => undefined);
    process.exitCode = 1;
    return;
  }
  const advertised = address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
  try {
    await node.join(advertised);
  } catch (error) {
    process.stderr.write(
      `oxbow: could not join the cluster at ${config.cluster!.endpoints.join(',')} (keys under ${config.cluster!.prefix}): ${error instanceof Error ? error.message : String(error)}\nhint: check that etcd is running and reachable (--cluster)\n`,
    );
    await server.close().catch(() => undefined);
    await node.close().catch(() => undefined);
    process.exit(1);
  }
  let metrics: HttpServer | undefined;
  if (config.metricsPort !== undefined) {
    engineMetrics.startEventLoopMonitor();
    metrics = await startMetrics(config.host, config.metricsPort, server, engineMetrics, () => node.prometheusText());
  }
  onShutdownSignals(config.shutdownTimeoutMs, () => node.closingStep ?? 'leaving the cluster', async () => {
    metrics?.close();
    await server.close();
    await node.close();
  });
  process.stdout.write(readyLine(address.host, address.port) + '\n');
}
