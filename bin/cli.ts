// The command line: every flag of DESIGN.md section 1 with its OXBOW_* environment twin, --help,
// value checks (a bad value prints a clear message and exits with code 2), and the composition
// root that wires the layers together: createEngine (executor) then the wire protocol server
// (pgwire), the ready line once connections are accepted, and a clean shutdown on SIGINT/SIGTERM.
//
// Precedence: a flag on the command line, then its environment variable, then the default.

import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { availableParallelism, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createEngine, type EngineOptions } from '../executor/engine/create-engine.js';
import type { Engine } from '../executor/engine/engine.js';
import { PgServer } from '../pgwire/server.js';
import { loadTlsSettings, TlsConfigurationError, type TlsFiles, type TlsSettings } from '../pgwire/tls.js';
import { SqlError } from '../sql/errors.js';
import { CheckpointMetrics } from '../storage/checkpoint/checkpoint-metrics.js';
import { SourceStatus } from '../executor/connectors/source-status.js';
import { EngineMetrics } from '../executor/metrics/engine-metrics.js';
import { prometheusText } from '../executor/metrics/prometheus.js';
import { statusJson } from '../executor/metrics/status.js';
import { DashboardSeries, dashboardData, dashboardJson } from '../executor/metrics/dashboard.js';
import { DASHBOARD_HTML } from '../executor/metrics/dashboard-page.js';
import { runRestore } from './restore.js';
import { serveClusterNode } from './cluster.js';
import { parseClusterUrl, type ClusterUrl } from '../executor/cluster/etcd-coordinator.js';
import { MAX_SEED_CHUNK_BYTES, MAX_SHARE_PROTOCOL_VERSION } from '../executor/cluster/remote-share-link.js';
import { MAX_SEED_WRITE_DELAY_MS } from '../executor/cluster/remote-share-server.js';
import { streamPlanVersionOf } from '../executor/ddl/create-materialized-view.js';
import { STREAM_PLAN_VERSION } from '../planner/stream/index.js';

export interface CliConfig {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly checkpointUrl: string;
  readonly barrierIntervalMs: number;
  readonly checkpointIntervalMs: number;
  readonly timeTravelRetentionMs: number;
  readonly memoryLimitBytes: number;
  readonly password: string | undefined;
  readonly metricsPort: number | undefined;
  readonly durability: 'local' | 'remote';
  readonly keepCheckpoints: number;
  readonly objectStoreTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  /** --tls-cert and --tls-key (and --tls-required): TLS on the wire protocol port; undefined: none. */
  readonly tls: TlsFiles | undefined;
  readonly parallelism: number;
  /** --cores: the cores oxbow may use (a view's source fragment takes at most cores - 1 workers); --parallelism's default. */
  readonly cores: number;
  /** --cluster etcd://HOST:PORT[,...][/PREFIX]: the etcd client endpoints (http://HOST:PORT) and key prefix; undefined: a single node. */
  readonly cluster: ClusterUrl | undefined;
  /** --standby-writes: what a cluster's standby does with writes and DDL. */
  readonly standbyWrites: 'forward' | 'refuse';
  /** --remote-shares: in a cluster, nodes run shares of the leader's source fragments. */
  readonly remoteShares: boolean;
  /** --keyed-source-workers: keyed fragments' workers generate their replayed generator sources' rows. */
  readonly keyedSourceWorkers: boolean;
  /** OXBOW_KAFKA_FRAGMENT_DECODE: a Kafka source fragment's workers decode its messages (default on). */
  readonly kafkaFragmentDecode: boolean;
  /** OXBOW_KEYED_SOURCE_CREDIT: units of generated sources a keyed fragment's workers hold before the source waits. */
  readonly keyedSourceCredit: number | undefined;
  /** OXBOW_PEER_TIMEOUT_MS: how long a fragment's worker waits at a seal for its peers' rows. */
  readonly peerTimeoutMs: number | undefined;
  /** OXBOW_KEYED_SEED_SLICE_ENTRIES: entries a keyed fragment's seed read routes per step (default: steps of about 10 ms). */
  readonly keyedSeedSliceEntries: number | undefined;
  /** OXBOW_KEYED_SEED_CUT_HOLD_MS: how long a keyed fragment's cut waits after its seeds were sent ahead (tests; default 0). */
  readonly keyedSeedCutHoldMs: number | undefined;
  /** OXBOW_PARALLEL_SCAN_MIN_BYTES: the table size from which a batch aggregate's scan runs in the workers (0: always). */
  readonly parallelScanMinBytes: number | undefined;
  /** OXBOW_SOURCE_CHUNK_ROWS: rows a source pushes through the views between barriers (0: at the barrier). */
  readonly sourceChunkRows: number | undefined;
  /** OXBOW_AGG_COMBINE_GROUPS: dirty groups a hash aggregate holds within an epoch (0: none). */
  readonly aggregateCombineGroups: number | undefined;
  /** OXBOW_CLUSTER_LEASE_TTL_S: a cluster node's etcd lease TTL in seconds (bin/cluster.ts; default 5). */
  readonly leaseTtlSeconds: number | undefined;
  /** OXBOW_CLUSTER_STALL_S: seconds a node's main thread may not run before it gives its lease up (default 30). */
  readonly stallSeconds: number | undefined;
  /** OXBOW_CLUSTER_FORWARD_TIMEOUT_MS: how long a standby tries to reach a leader for a forwarded statement (default 10000). */
  readonly forwardTimeoutMs: number | undefined;
  /** OXBOW_REMOTE_SHARE_TIMEOUT_MS: the deadline of a remote share's handshake and of each epoch's batch (default 10000). */
  readonly remoteShareTimeoutMs: number | undefined;
  /** OXBOW_KEYED_SEED_FROM: where a joining node's keyed share's store comes from, `checkpoint` (the one it follows; default) or `read` (the leader reads and sends the seed). */
  readonly keyedSeedFrom: 'checkpoint' | 'files' | 'read' | undefined;
  /** OXBOW_KEYED_NODE_CHECKPOINTS: `on` makes the leader's checkpoints name each node's keyed share stores, cut and uploaded by the node (executor/cluster/README.md, step 4); `off` (default). */
  readonly keyedNodeCheckpoints: boolean | undefined;
  /** OXBOW_KEYED_NODE_STATE: `on` leaves a keyed share's state writes on its node (the leader keeps them in memory until a checkpoint holds the node's part; executor/cluster/README.md, step 3), which needs the node checkpoints (on by it); `off` (default). */
  readonly keyedNodeState: boolean | undefined;
}

/** A bad command line: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {}

interface FlagSpec {
  readonly flag: string;
  readonly env: string;
  readonly value: string;
  readonly defaultText: string;
  readonly meaning: string;
  /** A switch: takes no value (`--flag`, or `--flag=on|off`); its variable is on/off, true/false, 1/0. */
  readonly switch?: true;
}

const FLAGS: readonly FlagSpec[] = [
  { flag: '--host', env: 'OXBOW_HOST', value: 'ADDRESS', defaultText: '127.0.0.1', meaning: 'listen address; a non-loopback address requires --password' },
  { flag: '--port', env: 'OXBOW_PORT', value: 'PORT', defaultText: '6543', meaning: 'PostgreSQL wire protocol port (0: any free port, shown in the ready line)' },
  { flag: '--data-dir', env: 'OXBOW_DATA_DIR', value: 'PATH', defaultText: './oxbow-data', meaning: 'local state (RocksDB), catalog, logs' },
  {
    flag: '--checkpoint-url',
    env: 'OXBOW_CHECKPOINT_URL',
    value: 'URL',
    defaultText: 'file://<data-dir>/checkpoints',
    meaning: 'where checkpoints go: file:///path or s3://bucket/prefix (AWS_* env vars, AWS_ENDPOINT_URL for S3-compatible stores)',
  },
  { flag: '--barrier-interval-ms', env: 'OXBOW_BARRIER_INTERVAL_MS', value: 'MS', defaultText: '1000', meaning: 'how often an epoch is committed (freshness, time-travel granularity)' },
  { flag: '--checkpoint-interval-ms', env: 'OXBOW_CHECKPOINT_INTERVAL_MS', value: 'MS', defaultText: '10000', meaning: 'how often committed state is uploaded' },
  {
    flag: '--time-travel-retention',
    env: 'OXBOW_TIME_TRAVEL_RETENTION',
    value: 'DURATION',
    defaultText: '10 minutes',
    meaning: 'how long old versions stay readable (e.g. "10 minutes", "90s", "2h", "1 day")',
  },
  {
    flag: '--memory-limit',
    env: 'OXBOW_MEMORY_LIMIT',
    value: 'SIZE',
    defaultText: '25% of RAM',
    meaning: "the process's memory, e.g. \"512MB\", \"4GB\", \"30%\": state caches (beyond them state is served from RocksDB), V8 heap room and RocksDB's block cache are sized inside it; RSS stays within about this plus 250 MiB",
  },
  {
    flag: '--durability',
    env: 'OXBOW_DURABILITY',
    value: 'local|remote',
    defaultText: 'local',
    meaning: 'local: DML returns once committed on the local disk (a lost disk loses at most the last --checkpoint-interval-ms); remote: once its epoch is in the object store',
  },
  { flag: '--keep-checkpoints', env: 'OXBOW_KEEP_CHECKPOINTS', value: 'N', defaultText: '3', meaning: 'complete checkpoints kept in the object store, besides those within --time-travel-retention' },
  {
    flag: '--object-store-timeout-ms',
    env: 'OXBOW_OBJECT_STORE_TIMEOUT_MS',
    value: 'MS',
    defaultText: '60000',
    meaning: 'deadline of one object-store request (a put, a get, a listing, one part of a multipart upload); a request past it is aborted and retried with backoff',
  },
  {
    flag: '--shutdown-timeout-ms',
    env: 'OXBOW_SHUTDOWN_TIMEOUT_MS',
    value: 'MS',
    defaultText: '10000',
    meaning: 'bound on shutdown after SIGTERM/SIGINT: a checkpoint still uploading after half of it is abandoned, anything else still hanging at it too (committed state is on the local disk; the next start uploads it)',
  },
  {
    flag: '--parallelism',
    env: 'OXBOW_PARALLELISM',
    value: 'N',
    defaultText: 'the cores (--cores)',
    meaning: 'worker threads per parallel fragment: an aggregate or join runs in N threads, each owning a share of the keys; a view over a replayed source through filters and projections runs as a source fragment of min(N, cores - 1) threads, or on the main thread below 2 (executor/stream/PARALLEL.md); 1: every dataflow on the main thread',
  },
  {
    flag: '--cores',
    env: 'OXBOW_CORES',
    value: 'N',
    defaultText: 'the cores of the machine',
    meaning: "the cores oxbow may use (a container's CPU quota below the machine's cores): the default of --parallelism, and a view that stores its rows runs as a source fragment only when cores - 1 >= 2 (it leaves one core to the main thread and the storage)",
  },
  { flag: '--password', env: 'OXBOW_PASSWORD', value: 'PASSWORD', defaultText: 'none', meaning: 'SCRAM-SHA-256 password of user oxbow while it has none of its own; roles without a password can no longer log in' },
  {
    flag: '--tls-cert',
    env: 'OXBOW_TLS_CERT',
    value: 'FILE',
    defaultText: 'none',
    meaning: 'PEM certificate (its chain may follow it): with --tls-key, clients may connect with TLS (sslmode=require); SHOW ssl is on',
  },
  { flag: '--tls-key', env: 'OXBOW_TLS_KEY', value: 'FILE', defaultText: 'none', meaning: "PEM private key (unencrypted) of --tls-cert's certificate" },
  {
    flag: '--tls-required',
    env: 'OXBOW_TLS_REQUIRED',
    value: '',
    defaultText: 'off',
    meaning: 'refuse connections that did not negotiate TLS (FATAL 28000); needs --tls-cert and --tls-key',
    switch: true,
  },
  { flag: '--metrics-port', env: 'OXBOW_METRICS_PORT', value: 'PORT', defaultText: 'off', meaning: 'serve Prometheus text format at http://HOST:PORT/metrics' },
  {
    flag: '--cluster',
    env: 'OXBOW_CLUSTER',
    value: 'etcd://HOST:PORT[,HOST:PORT...][/PREFIX]',
    defaultText: 'none',
    meaning: "join a cluster coordinated by etcd, its keys under PREFIX (default /oxbow): one leader takes writes, the others are warm standbys that serve reads from its last checkpoint and take over when it dies; needs --checkpoint-url shared by every node",
  },
  {
    flag: '--standby-writes',
    env: 'OXBOW_STANDBY_WRITES',
    value: 'forward|refuse',
    defaultText: 'forward',
    meaning: "in a cluster, what a standby does with a session's writes and DDL: forward runs the session on the leader from its first write on; refuse answers 25006 (read-only transaction) naming the leader",
  },
  {
    flag: '--remote-shares',
    env: 'OXBOW_REMOTE_SHARES',
    value: 'on|off',
    defaultText: 'off',
    meaning: "in a cluster, the node runs shares of the leader's source fragments over TCP (its address in its etcd record), and as the leader gives a share of each to every other node that does; set it on every node",
  },
  {
    flag: '--keyed-source-workers',
    env: 'OXBOW_KEYED_SOURCE_WORKERS',
    value: 'on|off',
    defaultText: 'off',
    meaning:
      "at --parallelism N > 1, the workers of a keyed fragment (a join, an aggregate) generate the rows of a replayed generator source they read and exchange them worker to worker, instead of the main thread generating and exchanging them; EXPLAIN shows it; off by default, not faster so far on 2 cores (docs/operations.md, \"Parallelism\")",
  },
];

export function helpText(): string {
  const lines = [
    'oxbow: a streaming SQL database with versioned state, speaking the PostgreSQL wire protocol',
    '',
    'Usage: oxbow [options]',
    '',
    'Options (each has an environment variable twin; a flag wins over its variable):',
  ];
  for (const spec of FLAGS) {
    lines.push(spec.switch === true ? `  ${spec.flag}` : `  ${spec.flag} ${spec.value}`);
    lines.push(`      ${spec.meaning}`);
    lines.push(`      default: ${spec.defaultText}; environment: ${spec.env}`);
  }
  lines.push('  --help, -h');
  lines.push('      print this help and exit');
  lines.push('  --version');
  lines.push('      print the version and exit');
  lines.push('');
  lines.push('Restore a checkpoint by hand (see README, "Recovery"):');
  lines.push('  oxbow restore --checkpoint-url URL --data-dir PATH [--epoch N] [--list] [--force]');
  lines.push('');
  lines.push('Once it accepts connections oxbow prints one line:');
  lines.push('  oxbow ready: postgres://oxbow@HOST:PORT/oxbow');
  lines.push('Connect with: psql -h 127.0.0.1 -p 6543 -U oxbow oxbow');
  return lines.join('\n') + '\n';
}

export type ParsedCommand =
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'restore'; readonly argv: readonly string[] }
  | { readonly kind: 'run'; readonly config: CliConfig };

/** Parses argv (without node and the script) and the environment. Throws UsageError. */
export function parseCommandLine(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): ParsedCommand {
  if (argv[0] === 'restore') return { kind: 'restore', argv: argv.slice(1) };
  const given = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i]!;
    if (argument === '--help' || argument === '-h') return { kind: 'help' };
    if (argument === '--version') return { kind: 'version' };
    const equals = argument.indexOf('=');
    const flag = equals >= 0 ? argument.slice(0, equals) : argument;
    const spec = FLAGS.find((candidate) => candidate.flag === flag);
    if (spec === undefined) throw new UsageError(`unknown option "${flag}"`);
    let value: string | undefined;
    if (equals >= 0) value = argument.slice(equals + 1);
    else if (spec.switch === true) value = 'on';
    else {
      value = argv[i + 1];
      i++;
    }
    if (value === undefined) throw new UsageError(`${flag} needs a value (${spec.value})`);
    given.set(flag, value);
  }
  const raw = (flag: string): { text: string; source: string } | undefined => {
    const spec = FLAGS.find((candidate) => candidate.flag === flag)!;
    const fromFlag = given.get(flag);
    if (fromFlag !== undefined) return { text: fromFlag, source: flag };
    const fromEnv = env[spec.env];
    if (fromEnv !== undefined && fromEnv !== '') return { text: fromEnv, source: spec.env };
    return undefined;
  };

  const host = raw('--host')?.text ?? '127.0.0.1';
  const port = parsePort(raw('--port'), 6543);
  const dataDir = resolve(raw('--data-dir')?.text ?? './oxbow-data');
  const checkpointUrl = parseCheckpointUrl(raw('--checkpoint-url'), dataDir);
  const barrierIntervalMs = parsePositiveInteger(raw('--barrier-interval-ms'), 1000);
  const checkpointIntervalMs = parsePositiveInteger(raw('--checkpoint-interval-ms'), 10_000);
  const timeTravelRetentionMs = parseDuration(raw('--time-travel-retention'), 10 * 60_000);
  const memoryLimitBytes = parseSize(raw('--memory-limit'), Math.floor(totalmem() / 4));
  const password = raw('--password')?.text;
  const durabilityInput = raw('--durability');
  const durability = durabilityInput === undefined ? 'local' : durabilityInput.text.trim().toLowerCase();
  if (durability !== 'local' && durability !== 'remote') throw new UsageError(`${durabilityInput!.source}: "${durabilityInput!.text}" is not a durability; write local or remote`);
  const objectStoreTimeoutMs = parsePositiveInteger(raw('--object-store-timeout-ms'), 60_000);
  const shutdownTimeoutMs = parsePositiveInteger(raw('--shutdown-timeout-ms'), 10_000);
  // --parallelism defaults to --cores, which defaults to the cores Node sees (a container's CPU
  // quota may be below them: say --cores).
  const cores = parsePositiveInteger(raw('--cores'), availableParallelism(), 'cores');
  const parallelism = parsePositiveInteger(raw('--parallelism'), cores, 'worker threads');
  const keepInput = raw('--keep-checkpoints');
  const keepCheckpoints = keepInput === undefined ? 3 : /^\s*\d+\s*$/.test(keepInput.text) ? Number(keepInput.text.trim()) : NaN;
  if (!Number.isSafeInteger(keepCheckpoints) || keepCheckpoints < 1) throw new UsageError(`${keepInput!.source}: "${keepInput!.text}" is not a positive whole number of checkpoints`);
  const metricsInput = raw('--metrics-port');
  const metricsPort = metricsInput === undefined || metricsInput.text === 'off' ? undefined : parsePort(metricsInput, 0);
  const tls = parseTls(raw('--tls-cert'), raw('--tls-key'), raw('--tls-required'));
  const clusterInput = raw('--cluster');
  let cluster: ClusterUrl | undefined;
  if (clusterInput !== undefined) {
    try {
      cluster = parseClusterUrl(clusterInput.text);
    } catch (error) {
      throw new UsageError(`${clusterInput.source}: ${(error as Error).message}`);
    }
    if (raw('--checkpoint-url') === undefined) {
      throw new UsageError(`${clusterInput.source} needs --checkpoint-url (or OXBOW_CHECKPOINT_URL): every node of a cluster restores from the same object store`);
    }
  }
  const standbyWritesInput = raw('--standby-writes');
  const standbyWrites = standbyWritesInput === undefined ? 'forward' : standbyWritesInput.text.trim().toLowerCase();
  if (standbyWrites !== 'forward' && standbyWrites !== 'refuse') throw new UsageError(`${standbyWritesInput!.source}: "${standbyWritesInput!.text}" is not a choice; write forward or refuse`);
  const remoteSharesInput = raw('--remote-shares');
  const remoteShares = parseSwitch(remoteSharesInput);
  if (remoteShares && cluster === undefined) throw new UsageError(`${remoteSharesInput!.source} needs --cluster: shares run on the other nodes of a cluster`);
  const keyedSourceWorkers = parseSwitch(raw('--keyed-source-workers'));
  // The parallel runtime's tuning for tests and benchmarks: variables only, no flags.
  const variable = (name: string): RawValue => (env[name] === undefined || env[name] === '' ? undefined : { text: env[name]!, source: name });
  const fragmentDecodeInput = variable('OXBOW_KAFKA_FRAGMENT_DECODE');
  const kafkaFragmentDecode = fragmentDecodeInput === undefined ? true : parseSwitch(fragmentDecodeInput);
  const keyedSourceCredit = parseCount(variable('OXBOW_KEYED_SOURCE_CREDIT'), 'units');
  const peerTimeoutMs = parseCount(variable('OXBOW_PEER_TIMEOUT_MS'), 'milliseconds');
  const keyedSeedSliceEntries = parseCount(variable('OXBOW_KEYED_SEED_SLICE_ENTRIES'), 'entries');
  const keyedSeedCutHoldMs = parseCount(variable('OXBOW_KEYED_SEED_CUT_HOLD_MS'), 'milliseconds', 0);
  const parallelScanMinBytes = parseCount(variable('OXBOW_PARALLEL_SCAN_MIN_BYTES'), 'bytes', 0);
  // The streaming operators' and the cluster's tuning for tests and benchmarks: variables only.
  const sourceChunkRows = parseCount(variable('OXBOW_SOURCE_CHUNK_ROWS'), 'rows', 0);
  const aggregateCombineGroups = parseCount(variable('OXBOW_AGG_COMBINE_GROUPS'), 'groups', 0);
  const leaseTtlSeconds = parseCount(variable('OXBOW_CLUSTER_LEASE_TTL_S'), 'seconds');
  const stallSeconds = parseCount(variable('OXBOW_CLUSTER_STALL_S'), 'seconds');
  const forwardTimeoutMs = parseCount(variable('OXBOW_CLUSTER_FORWARD_TIMEOUT_MS'), 'milliseconds');
  const remoteShareTimeoutMs = parseCount(variable('OXBOW_REMOTE_SHARE_TIMEOUT_MS'), 'milliseconds');
  const seedFromInput = variable('OXBOW_KEYED_SEED_FROM');
  const keyedSeedFrom = seedFromInput === undefined ? undefined : seedFromInput.text.trim().toLowerCase();
  if (keyedSeedFrom !== undefined && keyedSeedFrom !== 'checkpoint' && keyedSeedFrom !== 'files' && keyedSeedFrom !== 'read') {
    throw new UsageError(`${seedFromInput!.source}: "${seedFromInput!.text}" is not checkpoint, files or read`);
  }
  const nodeCheckpointsInput = variable('OXBOW_KEYED_NODE_CHECKPOINTS');
  const nodeCheckpoints = nodeCheckpointsInput === undefined ? undefined : nodeCheckpointsInput.text.trim().toLowerCase();
  if (nodeCheckpoints !== undefined && nodeCheckpoints !== 'on' && nodeCheckpoints !== 'off') {
    throw new UsageError(`${nodeCheckpointsInput!.source}: "${nodeCheckpointsInput!.text}" is not on or off`);
  }
  const nodeStateInput = variable('OXBOW_KEYED_NODE_STATE');
  const nodeState = nodeStateInput === undefined ? undefined : nodeStateInput.text.trim().toLowerCase();
  if (nodeState !== undefined && nodeState !== 'on' && nodeState !== 'off') {
    throw new UsageError(`${nodeStateInput!.source}: "${nodeStateInput!.text}" is not on or off`);
  }
  // Read by the leader's keyed share relays from the environment (executor/cluster/keyed-share-worker.ts): refused here, at start.
  parseCount(variable('OXBOW_KEYED_NODE_STATE_KEPT_MIB'), 'MiB');
  if (nodeState === 'on' && nodeCheckpoints === 'off') {
    throw new UsageError(`${nodeStateInput!.source}: on needs the nodes' checkpoints, but ${nodeCheckpointsInput!.source} is off`);
  }
  // Read by the leader's remote shares from the environment (executor/cluster/remote-shares.ts): refused here, at start.
  const nodeFetchInput = variable('OXBOW_KAFKA_NODE_FETCH');
  if (nodeFetchInput !== undefined && !['nodes', 'all', 'off'].includes(nodeFetchInput.text.trim().toLowerCase())) {
    throw new UsageError(`${nodeFetchInput.source}: "${nodeFetchInput.text}" is not nodes, all or off`);
  }
  // Read by the leader's relay threads from the environment (remote-share-link.ts): refused here, at start.
  const seedChunkInput = variable('OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES');
  const seedChunkBytes = parseCount(seedChunkInput, 'bytes');
  if (seedChunkBytes !== undefined && seedChunkBytes > MAX_SEED_CHUNK_BYTES) {
    throw new UsageError(`${seedChunkInput!.source}: "${seedChunkInput!.text}" is over ${MAX_SEED_CHUNK_BYTES} bytes, the largest piece of a seed a frame holds`);
  }
  // Read by a node's remote share server from the environment (remote-share-server.ts; tests): refused here, at start.
  const seedWriteDelayInput = variable('OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS');
  const seedWriteDelay = parseCount(seedWriteDelayInput, 'milliseconds', 0);
  if (seedWriteDelay !== undefined && seedWriteDelay > MAX_SEED_WRITE_DELAY_MS) {
    throw new UsageError(`${seedWriteDelayInput!.source}: "${seedWriteDelayInput!.text}" is over ${MAX_SEED_WRITE_DELAY_MS} milliseconds`);
  }
  // Read by the share server and the relay threads from the environment (remote-share-link.ts; tests: a node of another version): refused here, at start.
  const protocolVersionInput = variable('OXBOW_REMOTE_SHARE_PROTOCOL_VERSION');
  if (protocolVersionInput !== undefined) {
    const version = /^\d+$/.test(protocolVersionInput.text.trim()) ? Number(protocolVersionInput.text.trim()) : NaN;
    if (!Number.isSafeInteger(version) || version < 1 || version > MAX_SHARE_PROTOCOL_VERSION) {
      throw new UsageError(`${protocolVersionInput.source}: "${protocolVersionInput.text}" is not a share protocol version (a whole number from 1 to ${MAX_SHARE_PROTOCOL_VERSION})`);
    }
  }
  // Read when the executor loads (create-materialized-view.ts; tests: a view laid out as an older build did): refused here, at start.
  const planVersionInput = variable('OXBOW_STREAM_PLAN_VERSION');
  if (planVersionInput !== undefined && streamPlanVersionOf(planVersionInput.text) === undefined) {
    throw new UsageError(`${planVersionInput.source}: "${planVersionInput.text}" is not a streaming plan version (a whole number from 1 to ${STREAM_PLAN_VERSION})`);
  }
  if (host === '') throw new UsageError('--host must not be empty');
  if (!isLoopback(host) && password === undefined) {
    throw new UsageError(
      `refusing to listen on non-loopback address "${host}" without a password: anyone who can reach it could connect. ` +
        'Set --password (or OXBOW_PASSWORD) to enable SCRAM-SHA-256 authentication, or listen on 127.0.0.1.',
    );
  }
  return {
    kind: 'run',
    config: {
      host,
      port,
      dataDir,
      checkpointUrl,
      barrierIntervalMs,
      checkpointIntervalMs,
      timeTravelRetentionMs,
      memoryLimitBytes,
      password,
      metricsPort,
      durability,
      keepCheckpoints,
      objectStoreTimeoutMs,
      shutdownTimeoutMs,
      tls,
      parallelism,
      cores,
      cluster,
      standbyWrites,
      remoteShares,
      keyedSourceWorkers,
      kafkaFragmentDecode,
      keyedSourceCredit,
      peerTimeoutMs,
      keyedSeedSliceEntries,
      keyedSeedCutHoldMs,
      parallelScanMinBytes,
      sourceChunkRows,
      aggregateCombineGroups,
      leaseTtlSeconds,
      stallSeconds,
      forwardTimeoutMs,
      remoteShareTimeoutMs,
      keyedSeedFrom: keyedSeedFrom as 'checkpoint' | 'files' | 'read' | undefined,
      keyedNodeCheckpoints: nodeState === 'on' ? true : nodeCheckpoints === undefined ? undefined : nodeCheckpoints === 'on',
      keyedNodeState: nodeState === undefined ? undefined : nodeState === 'on',
    },
  };
}

type RawValue = { text: string; source: string } | undefined;

/** The TLS files: both or neither; --tls-required only with them. */
function parseTls(cert: RawValue, key: RawValue, requiredInput: RawValue): TlsFiles | undefined {
  const required = parseSwitch(requiredInput);
  if (cert === undefined && key === undefined) {
    if (required) throw new UsageError(`${requiredInput!.source} needs a certificate: set --tls-cert and --tls-key`);
    return undefined;
  }
  if (cert === undefined) throw new UsageError(`${key!.source} needs --tls-cert (or OXBOW_TLS_CERT), the certificate of the key`);
  if (key === undefined) throw new UsageError(`${cert.source} needs --tls-key (or OXBOW_TLS_KEY), the private key of the certificate`);
  return { certFile: resolve(cert.text), keyFile: resolve(key.text), required };
}

function parseSwitch(input: RawValue): boolean {
  if (input === undefined) return false;
  const lower = input.text.trim().toLowerCase();
  if (['on', 'true', 'yes', '1'].includes(lower)) return true;
  if (['off', 'false', 'no', '0'].includes(lower)) return false;
  throw new UsageError(`${input.source}: "${input.text}" is not on or off`);
}

export function isLoopback(host: string): boolean {
  const lower = host.toLowerCase();
  if (lower === 'localhost' || lower === '::1' || lower === '[::1]') return true;
  const v4 = lower.startsWith('::ffff:') ? lower.slice(7) : lower;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function parsePort(input: { text: string; source: string } | undefined, fallback: number): number {
  if (input === undefined) return fallback;
  const port = /^\d+$/.test(input.text.trim()) ? Number(input.text.trim()) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`${input.source}: "${input.text}" is not a port number (0 to 65535)`);
  return port;
}

/** A positive whole number of `unit` from `input`, undefined when not given. */
function parseCount(input: RawValue, unit: string, minimum = 1): number | undefined {
  if (input === undefined) return undefined;
  const value = /^\d+$/.test(input.text.trim()) ? Number(input.text.trim()) : NaN;
  const kind = minimum === 0 ? 'whole number' : 'positive whole number';
  if (!Number.isSafeInteger(value) || value < minimum) throw new UsageError(`${input.source}: "${input.text}" is not a ${kind} of ${unit}`);
  return value;
}

function parsePositiveInteger(input: { text: string; source: string } | undefined, fallback: number, unit = 'milliseconds'): number {
  if (input === undefined) return fallback;
  const value = /^\d+$/.test(input.text.trim()) ? Number(input.text.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < 1) throw new UsageError(`${input.source}: "${input.text}" is not a positive whole number of ${unit}`);
  return value;
}

const DURATION_UNITS_MS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

/** "10 minutes", "90s", "2h", "1 day", "500ms". A unit is required: a bare number is ambiguous. */
export function parseDuration(input: { text: string; source: string } | undefined, fallback: number): number {
  if (input === undefined) return fallback;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$/.exec(input.text);
  const unit = match?.[2]?.toLowerCase();
  const factor = unit === undefined ? undefined : DURATION_UNITS_MS[unit];
  if (match === null || factor === undefined) {
    throw new UsageError(`${input.source}: "${input.text}" is not a duration; write a number and a unit, e.g. "10 minutes", "90s", "2h", "1 day"`);
  }
  const milliseconds = Math.round(Number(match[1]) * factor);
  if (!Number.isSafeInteger(milliseconds) || milliseconds < 0) throw new UsageError(`${input.source}: "${input.text}" is out of range`);
  return milliseconds;
}

const SIZE_UNITS_BYTES: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/** "512MB", "4GB", "1GiB" (units of 1024, as PostgreSQL's memory settings), "30%" of RAM, or bytes. */
export function parseSize(input: { text: string; source: string } | undefined, fallback: number): number {
  if (input === undefined) return fallback;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z%]*)\s*$/.exec(input.text);
  if (match !== null) {
    const amount = Number(match[1]);
    const unit = match[2]!.toLowerCase();
    if (unit === '%') {
      if (amount > 0 && amount <= 100) return Math.floor((totalmem() * amount) / 100);
    } else {
      const factor = unit === '' ? 1 : SIZE_UNITS_BYTES[unit];
      if (factor !== undefined && amount > 0) {
        const bytes = Math.floor(amount * factor);
        if (Number.isSafeInteger(bytes)) return bytes;
      }
    }
  }
  throw new UsageError(`${input.source}: "${input.text}" is not a memory size; write e.g. "512MB", "4GB" or "30%" (of RAM)`);
}

function parseCheckpointUrl(input: { text: string; source: string } | undefined, dataDir: string): string {
  if (input === undefined) return pathToFileURL(resolve(dataDir, 'checkpoints')).href;
  const text = input.text.trim();
  if (text.startsWith('file://')) return text;
  if (text.startsWith('s3://')) {
    if (!/^s3:\/\/[^/]+/.test(text)) throw new UsageError(`${input.source}: "${text}" names no bucket; write s3://bucket/prefix`);
    return text;
  }
  throw new UsageError(`${input.source}: "${text}" is not a checkpoint location; write file:///absolute/path or s3://bucket/prefix`);
}

export function readyLine(host: string, port: number): string {
  const urlHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `oxbow ready: postgres://oxbow@${urlHost}:${port}/oxbow`;
}

/** Runs the CLI; returns the process exit code for help/usage, or keeps running the server. */
export async function main(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<void> {
  let command: ParsedCommand;
  try {
    command = parseCommandLine(argv, env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`oxbow: ${error.message}\nTry "oxbow --help" for the list of options.\n`);
    process.exitCode = 2;
    return;
  }
  if (command.kind === 'help') {
    process.stdout.write(helpText());
    return;
  }
  if (command.kind === 'version') {
    process.stdout.write('oxbow 0.1.0\n');
    return;
  }
  if (command.kind === 'restore') {
    process.exitCode = await runRestore(command.argv, env);
    exitSoonIfStillAlive();
    return;
  }
  await serve(command.config);
}

async function serve(config: CliConfig): Promise<void> {
  // Checked before the engine starts (which may take a while): a certificate that cannot be used stops the start at once.
  let tls: TlsSettings | undefined;
  try {
    tls = config.tls === undefined ? undefined : loadTlsSettings(config.tls);
  } catch (error) {
    if (!(error instanceof TlsConfigurationError)) throw error;
    process.stderr.write(`oxbow: could not start: ${error.message}\n`);
    process.exitCode = 1;
    return;
  }
  const checkpointMetrics = new CheckpointMetrics();
  const sourceStatus = new SourceStatus();
  const engineMetrics = new EngineMetrics();
  const engineOptions: EngineOptions = {
    sourceStatus,
    metrics: engineMetrics,
    dataDir: config.dataDir,
    checkpointUrl: config.checkpointUrl,
    barrierIntervalMs: config.barrierIntervalMs,
    checkpointIntervalMs: config.checkpointIntervalMs,
    timeTravelRetentionMs: config.timeTravelRetentionMs,
    memoryLimitBytes: config.memoryLimitBytes,
    durability: config.durability,
    keepCheckpoints: config.keepCheckpoints,
    objectStoreTimeoutMs: config.objectStoreTimeoutMs,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    ssl: tls !== undefined,
    checkpointMetrics,
    onCheckpointError: (error) => process.stderr.write(`oxbow: checkpoint failed: ${error instanceof Error ? error.message : String(error)}\n`),
    ...withParallelism(diagnostics(process.env, config), config),
  };
  if (config.cluster !== undefined) {
    await serveClusterNode(config, engineOptions, tls, engineMetrics, process.env);
    return;
  }
  let engine: Engine;
  try {
    engine = await createEngine(engineOptions);
  } catch (error) {
    const hint = error instanceof SqlError && error.hint !== undefined ? `\nhint: ${error.hint}` : '';
    process.stderr.write(`oxbow: could not start the engine: ${error instanceof Error ? error.message : String(error)}${hint}\n`);
    process.exitCode = 1;
    exitSoonIfStillAlive();
    return;
  }
  const server = new PgServer({ engine, host: config.host, port: config.port, password: config.password, tls });
  let address: { host: string; port: number };
  try {
    address = await server.listen();
  } catch (error) {
    process.stderr.write(`oxbow: could not listen on ${config.host}:${config.port}: ${error instanceof Error ? error.message : String(error)}\n`);
    await engine.close().catch(() => undefined);
    process.exitCode = 1;
    return;
  }
  let metrics: HttpServer | undefined;
  if (config.metricsPort !== undefined) {
    engineMetrics.startEventLoopMonitor();
    metrics = await startMetrics(config.host, config.metricsPort, server, engineMetrics);
  }
  let step = 'closing client connections';
  onShutdownSignals(
    config.shutdownTimeoutMs,
    () =>
      `${abandonedWork(engine.closingStep ?? step, checkpointMetrics)}. ` +
      'Every committed change is on the local disk: the next start recovers it and completes the checkpoint.',
    async () => {
      metrics?.close();
      await server.close();
      step = 'closing the engine';
      await engine.close();
    },
  );
  process.stdout.write(readyLine(address.host, address.port) + '\n');
}

/**
 * SIGINT and SIGTERM run `stop` once, then exit 0 (1 if it throws); a second signal exits at once.
 * The bound: whatever still hangs at `boundMs` is abandoned and named (`abandoned()`); every
 * committed epoch is on the local disk. A programming error that escapes a request (a stray
 * rejected promise, a throw in a callback) is logged, not fatal: ending the process would drop
 * every client, and the state is durable per committed epoch anyway. The failing request itself
 * already got its XX000.
 */
export function onShutdownSignals(boundMs: number, abandoned: () => string, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) {
      process.stderr.write(`oxbow: ${signal} again, exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    process.stderr.write(`oxbow: ${signal} received, shutting down\n`);
    setTimeout(() => {
      process.stderr.write(`oxbow: shutdown did not finish within ${boundMs} ms (--shutdown-timeout-ms); abandoned: ${abandoned()}\n`);
      process.exit(1);
    }, boundMs);
    void (async () => {
      try {
        await stop();
        process.exit(0);
      } catch (error) {
        process.stderr.write(`oxbow: error during shutdown: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      }
    })();
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('unhandledRejection', (reason) => {
    process.stderr.write(`oxbow: unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}\n`);
  });
  process.on('uncaughtException', (error) => {
    process.stderr.write(`oxbow: uncaught exception: ${error.stack ?? error.message}\n`);
  });
}

/**
 * A file operation abandoned at its deadline (a folder that never answers) keeps the event loop
 * alive forever: exit a second after the work is done if nothing else has ended the process (an
 * unref'd timer lets a process with nothing pending exit at once, its output flushed).
 */
function exitSoonIfStillAlive(): void {
  setTimeout(() => process.exit(), 1000).unref();
}

/** What a shutdown that passed its bound leaves behind, in words. */
function abandonedWork(step: string, checkpoints: CheckpointMetrics): string {
  const running = checkpoints.running;
  if (running === undefined) return step;
  const seconds = ((Date.now() - running.startedAtMs) / 1000).toFixed(1);
  const epoch = running.epoch === 0n ? '' : ` of epoch ${running.epoch}`;
  return `${step}; the checkpoint${epoch} in phase ${running.phase} (running for ${seconds} s, to ${checkpoints.location})`;
}

/**
 * The metrics port: Prometheus text at /metrics and the same figures as JSON at /api/status, both
 * from the engine's status API (executor/metrics/), /metrics followed by `more` (a cluster node's figures); the dashboard page at / with its data at
 * /api/dashboard (and the sample history alone at /api/series).
 */
export async function startMetrics(host: string, port: number, server: PgServer, engineMetrics: EngineMetrics, more?: () => string): Promise<HttpServer> {
  // The dashboard's one-second samples, kept server-side so a fresh page shows the last minutes,
  // from the moment the engine opens (a cluster's standby opens its engine when it leads).
  let series: DashboardSeries | undefined;
  let following: NodeJS.Timeout | undefined;
  const follow = (): void => {
    if (series !== undefined || engineMetrics.status === undefined) return;
    series = new DashboardSeries(engineMetrics.status);
    series.start();
    if (following !== undefined) clearInterval(following);
  };
  follow();
  if (series === undefined) following = setInterval(follow, 1000).unref();
  const http = createHttpServer((request, response) => {
    const [path, query] = (request.url ?? '/').split('?');
    follow();
    const status = engineMetrics.status;
    if (!['/', '/metrics', '/api/status', '/api/dashboard', '/api/series'].includes(path ?? '')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try / (dashboard), /metrics or /api/status\n');
      return;
    }
    if (status === undefined || series === undefined) {
      // A cluster's standby before it leads: its cluster figures only.
      const text = path === '/metrics' ? (more?.() ?? '') : '';
      if (text !== '') response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text);
      else response.writeHead(503, { 'content-type': 'text/plain' }).end("oxbow: the engine's figures come once it is open (a cluster's standby opens it when it leads)\n");
      return;
    }
    try {
      if (path === '/') {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(DASHBOARD_HTML);
      } else if (path === '/api/dashboard') {
        const since = new URLSearchParams(query ?? '').get('since');
        if (since !== null && !/^[0-9]{1,15}$/.test(since)) {
          response.writeHead(400, { 'content-type': 'text/plain' }).end('oxbow: since must be a time in milliseconds since 1970 (the newest sample the page has)\n');
          return;
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end(dashboardJson(dashboardData(status, series, since === null ? undefined : Number(since))));
      } else if (path === '/api/series') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(dashboardJson({ intervalMs: series.intervalMs, samples: series.samples() }));
      } else if (path === '/metrics') {
        response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(prometheusText(status, { connections: server.connectionCount }) + (more?.() ?? ''));
      } else {
        response.writeHead(200, { 'content-type': 'application/json' }).end(statusJson(status.snapshot()));
      }
    } catch (error) {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(`oxbow: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  });
  await new Promise<void>((resolveListen, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => resolveListen());
  });
  http.on('close', () => {
    if (following !== undefined) clearInterval(following);
    series?.stop();
  });
  const address = http.address();
  if (address !== null && typeof address !== 'string') process.stderr.write(`oxbow: metrics at http://${host}:${address.port}/metrics, dashboard at http://${host}:${address.port}/\n`);
  return http;
}

/**
 * The engine's tuning with `--parallelism` (1: every dataflow on the main thread), `--cores` and the parallel
 * runtime's settings (--keyed-source-workers, OXBOW_KAFKA_FRAGMENT_DECODE, OXBOW_KEYED_SOURCE_CREDIT,
 * OXBOW_PEER_TIMEOUT_MS, OXBOW_KEYED_SEED_SLICE_ENTRIES, OXBOW_KEYED_SEED_CUT_HOLD_MS, OXBOW_PARALLEL_SCAN_MIN_BYTES), each only when it differs from the engine's default.
 */
export function withParallelism(
  options: Pick<EngineOptions, 'tuning' | 'faults' | 'onCheckpointPhase'>,
  config: Pick<CliConfig, 'parallelism' | 'cores' | 'keyedSourceWorkers' | 'kafkaFragmentDecode' | 'keyedSourceCredit' | 'peerTimeoutMs' | 'keyedSeedSliceEntries' | 'keyedSeedCutHoldMs' | 'parallelScanMinBytes'>,
): Pick<EngineOptions, 'tuning' | 'faults' | 'onCheckpointPhase'> {
  const tuning = {
    ...options.tuning,
    ...(config.parallelism === 1 ? {} : { parallelism: config.parallelism }),
    ...(config.cores === availableParallelism() ? {} : { cores: config.cores }),
    ...(config.keyedSourceWorkers ? { keyedSourceWorkers: true } : {}),
    ...(config.kafkaFragmentDecode ? {} : { kafkaFragmentDecode: false }),
    ...(config.keyedSourceCredit === undefined ? {} : { keyedSourceCredit: config.keyedSourceCredit }),
    ...(config.peerTimeoutMs === undefined ? {} : { peerTimeoutMs: config.peerTimeoutMs }),
    ...(config.keyedSeedSliceEntries === undefined ? {} : { keyedSeedSliceEntries: config.keyedSeedSliceEntries }),
    ...(config.keyedSeedCutHoldMs === undefined ? {} : { keyedSeedCutHoldMs: config.keyedSeedCutHoldMs }),
    ...(config.parallelScanMinBytes === undefined ? {} : { parallelScanMinBytes: config.parallelScanMinBytes }),
  };
  return { ...options, tuning };
}

/**
 * Tuning, tracing and fault injection for tests and benchmarks (not flags: an operator never needs
 * them). From the command line's parse: OXBOW_SOURCE_CHUNK_ROWS and OXBOW_AGG_COMBINE_GROUPS
 * (CliConfig). From the environment: OXBOW_SOURCE_TRACE=1: a stderr line per source barrier;
 * OXBOW_KAFKA_FAST_JSON=0: JSON messages through the general decoder; OXBOW_CHECKPOINT_TRACE=1: a
 * stderr line per checkpoint phase; OXBOW_FAULT_KILL_AFTER_SINK_COMMIT=1: SIGKILL right after a
 * sink's Kafka transaction commits, before the epoch holding its offsets does.
 */
export function diagnostics(
  env: Readonly<Record<string, string | undefined>>,
  { sourceChunkRows, aggregateCombineGroups }: Pick<CliConfig, 'sourceChunkRows' | 'aggregateCombineGroups'>,
): Pick<EngineOptions, 'tuning' | 'faults' | 'onCheckpointPhase'> {
  const tuning = {
    ...(sourceChunkRows === undefined ? {} : { sourceChunkRows }),
    ...(aggregateCombineGroups === undefined ? {} : { aggregateCombineGroups }),
    ...(env['OXBOW_SOURCE_TRACE'] === '1' ? { sourceTrace: true } : {}),
    ...(env['OXBOW_KAFKA_FAST_JSON'] === '0' ? { kafkaFastJson: false } : {}),
  };
  return {
    tuning,
    ...(env['OXBOW_FAULT_KILL_AFTER_SINK_COMMIT'] === '1' ? { faults: { afterSinkCommit: () => void process.kill(process.pid, 'SIGKILL') } } : {}),
    ...(env['OXBOW_CHECKPOINT_TRACE'] === '1' ? { onCheckpointPhase: (phase: string, epoch: bigint) => void process.stderr.write(`oxbow: checkpoint ${phase} ${epoch}\n`) } : {}),
  };
}
