// The command line of DESIGN.md section 1: every flag, its OXBOW_* twin, defaults, value checks
// (exit code 2 with a clear message) and the loopback rule; the built executable's --help.
import { spawnSync } from 'node:child_process';
import { availableParallelism, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { diagnostics, parseCommandLine, readyLine, UsageError, withParallelism, type CliConfig } from '../../bin/cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = join(ROOT, 'dist', 'bin', 'oxbow.js');

function config(argv: string[], env: Record<string, string> = {}): CliConfig {
  const parsed = parseCommandLine(argv, env);
  if (parsed.kind !== 'run') throw new Error(`expected a run command, got ${parsed.kind}`);
  return parsed.config;
}

const FLAG_TABLE: [flag: string, env: string][] = [
  ['--host', 'OXBOW_HOST'],
  ['--port', 'OXBOW_PORT'],
  ['--data-dir', 'OXBOW_DATA_DIR'],
  ['--checkpoint-url', 'OXBOW_CHECKPOINT_URL'],
  ['--barrier-interval-ms', 'OXBOW_BARRIER_INTERVAL_MS'],
  ['--checkpoint-interval-ms', 'OXBOW_CHECKPOINT_INTERVAL_MS'],
  ['--time-travel-retention', 'OXBOW_TIME_TRAVEL_RETENTION'],
  ['--memory-limit', 'OXBOW_MEMORY_LIMIT'],
  ['--password', 'OXBOW_PASSWORD'],
  ['--metrics-port', 'OXBOW_METRICS_PORT'],
  ['--durability', 'OXBOW_DURABILITY'],
  ['--keep-checkpoints', 'OXBOW_KEEP_CHECKPOINTS'],
  ['--object-store-timeout-ms', 'OXBOW_OBJECT_STORE_TIMEOUT_MS'],
  ['--shutdown-timeout-ms', 'OXBOW_SHUTDOWN_TIMEOUT_MS'],
  ['--tls-cert', 'OXBOW_TLS_CERT'],
  ['--tls-key', 'OXBOW_TLS_KEY'],
  ['--tls-required', 'OXBOW_TLS_REQUIRED'],
  ['--cluster', 'OXBOW_CLUSTER'],
  ['--standby-writes', 'OXBOW_STANDBY_WRITES'],
  ['--remote-shares', 'OXBOW_REMOTE_SHARES'],
  ['--keyed-source-workers', 'OXBOW_KEYED_SOURCE_WORKERS'],
  ['--parallelism', 'OXBOW_PARALLELISM'],
  ['--cores', 'OXBOW_CORES'],
];

describe('command line', () => {
  it('has the defaults of the design', () => {
    const defaults = config([]);
    expect(defaults).toEqual({
      host: '127.0.0.1',
      port: 6543,
      dataDir: resolve('oxbow-data'),
      checkpointUrl: pathToFileURL(resolve('oxbow-data', 'checkpoints')).href,
      barrierIntervalMs: 1000,
      checkpointIntervalMs: 10_000,
      timeTravelRetentionMs: 10 * 60 * 1000,
      memoryLimitBytes: Math.floor(totalmem() / 4),
      password: undefined,
      metricsPort: undefined,
      durability: 'local',
      keepCheckpoints: 3,
      objectStoreTimeoutMs: 60_000,
      shutdownTimeoutMs: 10_000,
      // --parallelism defaults to --cores, which defaults to the cores Node sees.
      parallelism: availableParallelism(),
      cores: availableParallelism(),
      standbyWrites: 'forward',
      remoteShares: false,
      keyedSourceWorkers: false,
      kafkaFragmentDecode: true,
    });
  });

  it('reads every flag, in both --flag value and --flag=value forms', () => {
    const parsed = config([
      '--host=::1',
      '--port',
      '7000',
      '--data-dir',
      '/tmp/somewhere',
      '--checkpoint-url=s3://bucket/prefix',
      '--barrier-interval-ms',
      '250',
      '--checkpoint-interval-ms=5000',
      '--time-travel-retention',
      '2 hours',
      '--memory-limit',
      '512MB',
      '--password',
      'pw',
      '--metrics-port',
      '9187',
      '--durability=remote',
      '--keep-checkpoints',
      '5',
      '--object-store-timeout-ms',
      '2500',
      '--shutdown-timeout-ms=3000',
      '--tls-cert',
      'server.crt',
      '--tls-key=/etc/oxbow/server.key',
      '--tls-required',
      '--parallelism',
      '2',
      '--cores=6',
      '--cluster',
      'etcd://10.0.0.1:2379,etcd-2.internal:2379',
      '--standby-writes',
      'refuse',
      '--remote-shares',
      'on',
      '--keyed-source-workers=on',
    ]);
    expect(parsed).toEqual({
      host: '::1',
      port: 7000,
      dataDir: '/tmp/somewhere',
      checkpointUrl: 's3://bucket/prefix',
      barrierIntervalMs: 250,
      checkpointIntervalMs: 5000,
      timeTravelRetentionMs: 2 * 3600 * 1000,
      memoryLimitBytes: 512 * 1024 * 1024,
      password: 'pw',
      metricsPort: 9187,
      durability: 'remote',
      keepCheckpoints: 5,
      objectStoreTimeoutMs: 2500,
      shutdownTimeoutMs: 3000,
      tls: { certFile: resolve('server.crt'), keyFile: '/etc/oxbow/server.key', required: true },
      parallelism: 2,
      cores: 6,
      cluster: { endpoints: ['http://10.0.0.1:2379', 'http://etcd-2.internal:2379'], prefix: '/oxbow' },
      standbyWrites: 'refuse',
      remoteShares: true,
      keyedSourceWorkers: true,
      kafkaFragmentDecode: true,
    });
  });

  it('reads every OXBOW_* twin, and a flag wins over its variable', () => {
    const env = {
      OXBOW_HOST: 'localhost',
      OXBOW_PORT: '7001',
      OXBOW_DATA_DIR: '/tmp/env-data',
      OXBOW_CHECKPOINT_URL: 'file:///tmp/cp',
      OXBOW_BARRIER_INTERVAL_MS: '100',
      OXBOW_CHECKPOINT_INTERVAL_MS: '2000',
      OXBOW_TIME_TRAVEL_RETENTION: '90s',
      OXBOW_MEMORY_LIMIT: '1GB',
      OXBOW_PASSWORD: 'envpw',
      OXBOW_METRICS_PORT: '9100',
      OXBOW_DURABILITY: 'remote',
      OXBOW_KEEP_CHECKPOINTS: '7',
      OXBOW_OBJECT_STORE_TIMEOUT_MS: '30000',
      OXBOW_SHUTDOWN_TIMEOUT_MS: '20000',
      OXBOW_TLS_CERT: '/etc/oxbow/env.crt',
      OXBOW_TLS_KEY: '/etc/oxbow/env.key',
      OXBOW_TLS_REQUIRED: 'true',
      OXBOW_PARALLELISM: '4',
      OXBOW_CORES: '3',
      OXBOW_CLUSTER: 'etcd://127.0.0.1:2379',
      OXBOW_STANDBY_WRITES: 'Refuse',
      OXBOW_REMOTE_SHARES: 'on',
      OXBOW_KEYED_SOURCE_WORKERS: '1',
      OXBOW_KAFKA_FRAGMENT_DECODE: '0',
      OXBOW_KEYED_SOURCE_CREDIT: '1024',
      OXBOW_PEER_TIMEOUT_MS: '5000',
    };
    expect(config([], env)).toEqual({
      host: 'localhost',
      port: 7001,
      dataDir: '/tmp/env-data',
      checkpointUrl: 'file:///tmp/cp',
      barrierIntervalMs: 100,
      checkpointIntervalMs: 2000,
      timeTravelRetentionMs: 90_000,
      memoryLimitBytes: 1024 ** 3,
      password: 'envpw',
      metricsPort: 9100,
      durability: 'remote',
      keepCheckpoints: 7,
      objectStoreTimeoutMs: 30_000,
      shutdownTimeoutMs: 20_000,
      tls: { certFile: '/etc/oxbow/env.crt', keyFile: '/etc/oxbow/env.key', required: true },
      parallelism: 4,
      cores: 3,
      cluster: { endpoints: ['http://127.0.0.1:2379'], prefix: '/oxbow' },
      standbyWrites: 'refuse',
      remoteShares: true,
      keyedSourceWorkers: true,
      kafkaFragmentDecode: false,
      keyedSourceCredit: 1024,
      peerTimeoutMs: 5000,
    });
    expect(config(['--port', '7002'], env).port).toBe(7002);
    expect(config(['--keyed-source-workers', 'off'], env).keyedSourceWorkers).toBe(false);
    expect(() => config(['--standby-writes', 'maybe'])).toThrow(/--standby-writes: "maybe" is not a choice; write forward or refuse/);
    expect(() => config(['--remote-shares', 'on'])).toThrow(/--remote-shares needs --cluster/);
    expect(() => config(['--remote-shares', 'maybe', '--cluster', 'etcd://a:2379', '--checkpoint-url', 's3://b/p'])).toThrow(/--remote-shares: "maybe" is not on or off/);
    // The default checkpoint location follows the data directory.
    expect(config([], { OXBOW_DATA_DIR: '/tmp/d' }).checkpointUrl).toBe('file:///tmp/d/checkpoints');
  });

  it('takes --cluster as etcd://HOST:PORT[,...][/PREFIX] with a shared --checkpoint-url', () => {
    expect(config(['--cluster', 'etcd://[::1]:2379', '--checkpoint-url', 's3://b/p']).cluster).toEqual({ endpoints: ['http://[::1]:2379'], prefix: '/oxbow' });
    expect(config(['--cluster', 'etcd://a:2379,b:2380/prod/orders/', '--checkpoint-url', 's3://b/p']).cluster).toEqual({ endpoints: ['http://a:2379', 'http://b:2380'], prefix: '/prod/orders' });
    expect(config(['--cluster', 'etcd://a:2379/', '--checkpoint-url', 's3://b/p']).cluster?.prefix).toBe('/oxbow');
    expect(() => config(['--cluster', 'etcd://a:2379/x//y', '--checkpoint-url', 's3://b/p'])).toThrow(/"\/x\/\/y" in "etcd:\/\/a:2379\/x\/\/y" is not a key prefix/);
    expect(() => config(['--cluster', 'etcd://a:2379/a b', '--checkpoint-url', 's3://b/p'])).toThrow(/is not a key prefix/);
    expect(() => config(['--cluster', 'http://127.0.0.1:2379', '--checkpoint-url', 's3://b/p'])).toThrow(/--cluster: "http:\/\/127.0.0.1:2379" is not a cluster URL; write etcd:\/\/HOST:PORT/);
    expect(() => config(['--cluster', 'etcd://a:2379,b', '--checkpoint-url', 's3://b/p'])).toThrow(/"b" in "etcd:\/\/a:2379,b" is not HOST:PORT/);
    expect(() => config(['--cluster', 'etcd://a:70000', '--checkpoint-url', 's3://b/p'])).toThrow(UsageError);
    expect(() => config(['--cluster', 'etcd://a:2379'])).toThrow(/--cluster needs --checkpoint-url/);
    expect(() => config([], { OXBOW_CLUSTER: 'etcd:/x' })).toThrow(/^OXBOW_CLUSTER: /);
  });

  it('takes the TLS files together, and --tls-required only with them', () => {
    expect(config([]).tls).toBeUndefined();
    expect(config(['--tls-cert', '/c', '--tls-key', '/k']).tls).toEqual({ certFile: '/c', keyFile: '/k', required: false });
    expect(config(['--tls-cert', '/c', '--tls-key', '/k', '--tls-required=off']).tls?.required).toBe(false);
    expect(config(['--tls-cert', '/c', '--tls-key', '/k'], { OXBOW_TLS_REQUIRED: '1' }).tls?.required).toBe(true);
    expect(() => config(['--tls-cert', '/c'])).toThrow('--tls-cert needs --tls-key (or OXBOW_TLS_KEY), the private key of the certificate');
    expect(() => config(['--tls-key', '/k'])).toThrow('--tls-key needs --tls-cert (or OXBOW_TLS_CERT), the certificate of the key');
    expect(() => config(['--tls-required'])).toThrow('--tls-required needs a certificate: set --tls-cert and --tls-key');
    expect(() => config(['--tls-cert', '/c', '--tls-key', '/k', '--tls-required=maybe'])).toThrow('--tls-required: "maybe" is not on or off');
  });

  it('accepts durations and sizes in the documented forms', () => {
    expect(config(['--time-travel-retention', '10 minutes']).timeTravelRetentionMs).toBe(600_000);
    expect(config(['--time-travel-retention', '1 day']).timeTravelRetentionMs).toBe(86_400_000);
    expect(config(['--time-travel-retention', '500ms']).timeTravelRetentionMs).toBe(500);
    expect(config(['--memory-limit', '4GiB']).memoryLimitBytes).toBe(4 * 1024 ** 3);
    expect(config(['--memory-limit', '1048576']).memoryLimitBytes).toBe(1048576);
    expect(config(['--memory-limit', '50%']).memoryLimitBytes).toBe(Math.floor(totalmem() / 2));
    expect(config(['--port', '0']).port).toBe(0);
  });

  it.each([
    [['--port', 'abc'], '--port: "abc" is not a port number (0 to 65535)'],
    [['--port', '70000'], '--port: "70000" is not a port number (0 to 65535)'],
    [['--barrier-interval-ms', '0'], '--barrier-interval-ms: "0" is not a positive whole number of milliseconds'],
    [['--checkpoint-interval-ms', '1.5'], '--checkpoint-interval-ms: "1.5" is not a positive whole number of milliseconds'],
    [['--time-travel-retention', '600'], '--time-travel-retention: "600" is not a duration; write a number and a unit, e.g. "10 minutes", "90s", "2h", "1 day"'],
    [['--memory-limit', 'lots'], '--memory-limit: "lots" is not a memory size; write e.g. "512MB", "4GB" or "30%" (of RAM)'],
    [['--checkpoint-url', 'ftp://x'], '--checkpoint-url: "ftp://x" is not a checkpoint location; write file:///absolute/path or s3://bucket/prefix'],
    [['--durability', 'cloud'], '--durability: "cloud" is not a durability; write local or remote'],
    [['--keep-checkpoints', '0'], '--keep-checkpoints: "0" is not a positive whole number of checkpoints'],
    [['--cores', '0'], '--cores: "0" is not a positive whole number of cores'],
    [['--cores', 'all'], '--cores: "all" is not a positive whole number of cores'],
    [['--parallelism', '1.5'], '--parallelism: "1.5" is not a positive whole number of worker threads'],
    [['--frobnicate'], 'unknown option "--frobnicate"'],
    [['--port'], '--port needs a value (PORT)'],
  ])('refuses %j', (argv, text) => {
    expect(() => parseCommandLine(argv, {})).toThrow(new UsageError(text));
  });

  it('names the variable when a bad value comes from the environment', () => {
    expect(() => parseCommandLine([], { OXBOW_PORT: 'x' })).toThrow('OXBOW_PORT: "x" is not a port number');
    expect(() => parseCommandLine([], { OXBOW_KEYED_SOURCE_WORKERS: 'yes please' })).toThrow('OXBOW_KEYED_SOURCE_WORKERS: "yes please" is not on or off');
    expect(() => parseCommandLine([], { OXBOW_KAFKA_FRAGMENT_DECODE: '2' })).toThrow('OXBOW_KAFKA_FRAGMENT_DECODE: "2" is not on or off');
    expect(() => parseCommandLine([], { OXBOW_KEYED_SOURCE_CREDIT: '-5' })).toThrow('OXBOW_KEYED_SOURCE_CREDIT: "-5" is not a positive whole number of units');
    expect(() => parseCommandLine([], { OXBOW_PEER_TIMEOUT_MS: '1.5s' })).toThrow('OXBOW_PEER_TIMEOUT_MS: "1.5s" is not a positive whole number of milliseconds');
    expect(() => parseCommandLine([], { OXBOW_KEYED_SEED_SLICE_ENTRIES: 'tiny' })).toThrow('OXBOW_KEYED_SEED_SLICE_ENTRIES: "tiny" is not a positive whole number of entries');
    expect(() => parseCommandLine([], { OXBOW_KEYED_SEED_SLICE_ENTRIES: '0' })).toThrow('OXBOW_KEYED_SEED_SLICE_ENTRIES: "0" is not a positive whole number of entries');
    expect(() => parseCommandLine([], { OXBOW_PARALLEL_SCAN_MIN_BYTES: 'abc' })).toThrow('OXBOW_PARALLEL_SCAN_MIN_BYTES: "abc" is not a whole number of bytes');
    expect(() => parseCommandLine([], { OXBOW_SOURCE_CHUNK_ROWS: '64k' })).toThrow('OXBOW_SOURCE_CHUNK_ROWS: "64k" is not a whole number of rows');
    expect(() => parseCommandLine([], { OXBOW_SOURCE_CHUNK_ROWS: '-1' })).toThrow('OXBOW_SOURCE_CHUNK_ROWS: "-1" is not a whole number of rows');
    expect(() => parseCommandLine([], { OXBOW_AGG_COMBINE_GROUPS: '1e3' })).toThrow('OXBOW_AGG_COMBINE_GROUPS: "1e3" is not a whole number of groups');
    expect(() => parseCommandLine([], { OXBOW_CLUSTER_LEASE_TTL_S: '0' })).toThrow('OXBOW_CLUSTER_LEASE_TTL_S: "0" is not a positive whole number of seconds');
    expect(() => parseCommandLine([], { OXBOW_CLUSTER_STALL_S: 'soon' })).toThrow('OXBOW_CLUSTER_STALL_S: "soon" is not a positive whole number of seconds');
    expect(() => parseCommandLine([], { OXBOW_CLUSTER_FORWARD_TIMEOUT_MS: '10s' })).toThrow('OXBOW_CLUSTER_FORWARD_TIMEOUT_MS: "10s" is not a positive whole number of milliseconds');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_TIMEOUT_MS: ' ' })).toThrow('OXBOW_REMOTE_SHARE_TIMEOUT_MS: " " is not a positive whole number of milliseconds');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '64MiB' })).toThrow('OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: "64MiB" is not a positive whole number of bytes');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '0' })).toThrow('OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: "0" is not a positive whole number of bytes');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: String(512 * 1024 * 1024) })).toThrow(
      `OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: "${512 * 1024 * 1024}" is over ${512 * 1024 * 1024 - 1024} bytes, the largest piece of a seed a frame holds`,
    );
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_CHUNK_BYTES: '2048' })).not.toThrow();
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: '1s' })).toThrow('OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: "1s" is not a whole number of milliseconds');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: '60001' })).toThrow('OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: "60001" is over 60000 milliseconds');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: '0' })).not.toThrow();
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_SEED_WRITE_DELAY_MS: '250' })).not.toThrow();
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: 'v2' })).toThrow('OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: "v2" is not a share protocol version (a whole number from 1 to 2147483647)');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: '0' })).toThrow('OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: "0" is not a share protocol version (a whole number from 1 to 2147483647)');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: '2147483648' })).toThrow('OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: "2147483648" is not a share protocol version (a whole number from 1 to 2147483647)');
    expect(() => parseCommandLine([], { OXBOW_REMOTE_SHARE_PROTOCOL_VERSION: '1' })).not.toThrow();
    expect(() => parseCommandLine([], { OXBOW_STREAM_PLAN_VERSION: '0' })).toThrow('OXBOW_STREAM_PLAN_VERSION: "0" is not a streaming plan version (a whole number from 1 to 11)');
    expect(() => parseCommandLine([], { OXBOW_STREAM_PLAN_VERSION: '12' })).toThrow('OXBOW_STREAM_PLAN_VERSION: "12" is not a streaming plan version (a whole number from 1 to 11)');
    expect(() => parseCommandLine([], { OXBOW_STREAM_PLAN_VERSION: '10.5' })).toThrow('is not a streaming plan version');
    expect(() => parseCommandLine([], { OXBOW_STREAM_PLAN_VERSION: '10' })).not.toThrow();
    expect(() => parseCommandLine([], { OXBOW_KAFKA_NODE_FETCH: 'yes' })).toThrow('OXBOW_KAFKA_NODE_FETCH: "yes" is not nodes, all or off');
    for (const mode of ['nodes', 'all', 'off', 'OFF']) expect(() => parseCommandLine([], { OXBOW_KAFKA_NODE_FETCH: mode })).not.toThrow();
    expect(() => parseCommandLine([], { OXBOW_KEYED_NODE_CHECKPOINTS: 'yes' })).toThrow('OXBOW_KEYED_NODE_CHECKPOINTS: "yes" is not on or off');
    expect(parseCommandLine([], { OXBOW_KEYED_NODE_CHECKPOINTS: ' ON ' })).toMatchObject({ config: { keyedNodeCheckpoints: true } });
    expect(parseCommandLine([], { OXBOW_KEYED_NODE_CHECKPOINTS: 'off' })).toMatchObject({ config: { keyedNodeCheckpoints: false } });
    expect(() => parseCommandLine([], { OXBOW_KEYED_NODE_STATE: 'yes' })).toThrow('OXBOW_KEYED_NODE_STATE: "yes" is not on or off');
    expect(parseCommandLine([], { OXBOW_KEYED_NODE_STATE: 'on' })).toMatchObject({ config: { keyedNodeState: true, keyedNodeCheckpoints: true } });
    expect(parseCommandLine([], { OXBOW_KEYED_NODE_STATE: 'off' })).toMatchObject({ config: { keyedNodeState: false } });
    expect(() => parseCommandLine([], { OXBOW_KEYED_NODE_STATE: 'on', OXBOW_KEYED_NODE_CHECKPOINTS: 'off' })).toThrow("OXBOW_KEYED_NODE_STATE: on needs the nodes' checkpoints, but OXBOW_KEYED_NODE_CHECKPOINTS is off");
    expect(() => parseCommandLine([], { OXBOW_KEYED_NODE_STATE_KEPT_MIB: '0' })).toThrow('OXBOW_KEYED_NODE_STATE_KEPT_MIB: "0" is not a positive whole number of MiB');
    expect(() => parseCommandLine([], { OXBOW_KEYED_NODE_STATE_KEPT_MIB: 'lots' })).toThrow('is not a positive whole number of MiB');
    expect(parseCommandLine([], { OXBOW_KEYED_NODE_STATE_KEPT_MIB: '64' })).toMatchObject({ config: {} });
  });

  it('passes the streaming tuning variables to the engine as parsed, 0 included', () => {
    expect(diagnostics({}, config([])).tuning).toEqual({});
    const env = { OXBOW_SOURCE_CHUNK_ROWS: '0', OXBOW_AGG_COMBINE_GROUPS: ' 4096 ' };
    expect(diagnostics(env, config([], env)).tuning).toEqual({ sourceChunkRows: 0, aggregateCombineGroups: 4096 });
    const cluster = config([], { OXBOW_CLUSTER_LEASE_TTL_S: '3', OXBOW_CLUSTER_STALL_S: '20', OXBOW_CLUSTER_FORWARD_TIMEOUT_MS: '2500', OXBOW_REMOTE_SHARE_TIMEOUT_MS: '10000' });
    expect([cluster.leaseTtlSeconds, cluster.stallSeconds, cluster.forwardTimeoutMs, cluster.remoteShareTimeoutMs]).toEqual([3, 20, 2500, 10_000]);
  });

  it('defaults --parallelism to --cores, and --cores to the cores Node sees', () => {
    expect(config(['--cores', '3']).parallelism).toBe(3);
    expect(config([], { OXBOW_CORES: '5' }).parallelism).toBe(5);
    expect(config(['--cores', '3', '--parallelism', '1']).parallelism).toBe(1);
    expect(config([]).parallelism).toBe(availableParallelism());
  });

  it('passes the parallel runtime settings to the engine only when they differ from its defaults', () => {
    // The engine's own defaults: parallelism 1, the cores Node sees.
    expect(withParallelism({}, config(['--parallelism', '1'])).tuning).toEqual({});
    expect(withParallelism({}, config(['--cores', String(availableParallelism() + 2)])).tuning).toEqual({ parallelism: availableParallelism() + 2, cores: availableParallelism() + 2 });
    const env = { OXBOW_KAFKA_FRAGMENT_DECODE: 'off', OXBOW_KEYED_SOURCE_CREDIT: '64', OXBOW_PEER_TIMEOUT_MS: '250', OXBOW_KEYED_SEED_SLICE_ENTRIES: '3' };
    expect(withParallelism({ tuning: { sourceChunkRows: 10 } }, config(['--parallelism', '2', '--keyed-source-workers', 'on'], env)).tuning).toEqual({
      sourceChunkRows: 10,
      parallelism: 2,
      keyedSourceWorkers: true,
      kafkaFragmentDecode: false,
      keyedSourceCredit: 64,
      peerTimeoutMs: 250,
      keyedSeedSliceEntries: 3,
    });
  });

  it('refuses a non-loopback address without a password, accepts loopback ones', () => {
    for (const host of ['0.0.0.0', '192.168.1.5', '::', 'example.com']) {
      expect(() => parseCommandLine(['--host', host], {}), host).toThrow(/refusing to listen on non-loopback address/);
      expect(config(['--host', host, '--password', 'pw']).host).toBe(host);
    }
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1']) expect(config(['--host', host]).host).toBe(host);
  });

  it('prints the ready line of the design, brackets for IPv6', () => {
    expect(readyLine('127.0.0.1', 6543)).toBe('oxbow ready: postgres://oxbow@127.0.0.1:6543/oxbow');
    expect(readyLine('::1', 5000)).toBe('oxbow ready: postgres://oxbow@[::1]:5000/oxbow');
  });
});

describe('the oxbow executable', () => {
  it('--help lists every flag with its environment twin and exits 0', () => {
    const run = spawnSync(process.execPath, [ENTRY, '--help'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    for (const [flag, env] of FLAG_TABLE) {
      expect(run.stdout).toContain(flag);
      expect(run.stdout).toContain(env);
    }
    expect(run.stdout).toContain('oxbow ready: postgres://oxbow@HOST:PORT/oxbow');
  });

  it('a bad value exits with code 2 and a clear message', () => {
    const run = spawnSync(process.execPath, [ENTRY, '--port', 'eighty'], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('oxbow: --port: "eighty" is not a port number (0 to 65535)');
    expect(run.stderr).toContain('oxbow --help');
    const cores = spawnSync(process.execPath, [ENTRY, '--cores', '-2'], { encoding: 'utf8' });
    expect(cores.status).toBe(2);
    expect(cores.stderr).toContain('oxbow: --cores: "-2" is not a positive whole number of cores');
    const keyed = spawnSync(process.execPath, [ENTRY, '--keyed-source-workers', 'sometimes'], { encoding: 'utf8' });
    expect(keyed.status).toBe(2);
    expect(keyed.stderr).toContain('oxbow: --keyed-source-workers: "sometimes" is not on or off');
    // A tuning variable with garbage is refused at start, not taken as NaN.
    const chunk = spawnSync(process.execPath, [ENTRY], { encoding: 'utf8', env: { ...process.env, OXBOW_SOURCE_CHUNK_ROWS: 'lots' } });
    expect(chunk.status).toBe(2);
    expect(chunk.stderr).toContain('oxbow: OXBOW_SOURCE_CHUNK_ROWS: "lots" is not a whole number of rows');
  });

  it('a non-loopback host without a password exits with code 2', () => {
    const run = spawnSync(process.execPath, [ENTRY, '--host', '0.0.0.0'], { encoding: 'utf8', env: { ...process.env, OXBOW_PASSWORD: '' } });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('refusing to listen on non-loopback address "0.0.0.0" without a password');
  });

  it('npm start -- --help works from the repository root', () => {
    const run = spawnSync('npm', ['start', '--', '--help'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('--checkpoint-url');
  });
});
