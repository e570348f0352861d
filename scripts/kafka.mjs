#!/usr/bin/env node
// Starts or stops a real Apache Kafka broker (KRaft mode, one combined broker+controller) on a
// loopback port, for tests, benchmarks and users:
//
//   npm run kafka -- [--port 9092]           start in the background; returns once it answers
//   npm run kafka -- --stop [--port 9092]    stop it
//   npm run kafka -- --keep-data [--port N]  start on the port's existing data folder (a restart:
//                                            topics and messages kept) instead of a fresh one
//   npm run kafka -- --advertised-port M     tell clients to reconnect to 127.0.0.1:M instead of the
//                                            broker's port (a proxy in front of it, for fault tests)
//
// The broker comes from Maven Central: `mvn dependency:copy-dependencies` resolves
// org.apache.kafka:kafka_2.13 and its runtime dependencies into .cache/kafka/<version>/lib
// (outside git). Each port gets its own data folder under .cache/kafka/run-<port>, formatted
// fresh at every start. Prerequisites: Java 17+ and Maven.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, openSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const KAFKA_VERSION = '4.1.1';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cacheDir = process.env.OXBOW_KAFKA_CACHE ?? join(root, '.cache', 'kafka');
const libDir = join(cacheDir, KAFKA_VERSION, 'lib');

function fail(message) {
  console.error(`kafka: ${message}`);
  process.exit(1);
}

function parseArgs(argv) {
  const options = { port: 9092, stop: false, keepData: false, timeoutMs: 60_000, advertisedPort: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--stop') options.stop = true;
    else if (arg === '--keep-data') options.keepData = true;
    else if (arg === '--port') options.port = Number(argv[++i]);
    else if (arg.startsWith('--port=')) options.port = Number(arg.slice(7));
    else if (arg === '--timeout-ms') options.timeoutMs = Number(argv[++i]);
    else if (arg === '--advertised-port') options.advertisedPort = Number(argv[++i]);
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: npm run kafka -- [--port N] [--stop] [--keep-data] [--timeout-ms N] [--advertised-port M]');
      process.exit(0);
    } else fail(`unknown argument ${arg} (try --help)`);
  }
  if (!Number.isInteger(options.port) || options.port <= 0 || options.port > 65534) fail('--port must be an integer in 1..65534');
  if (options.advertisedPort !== undefined && (!Number.isInteger(options.advertisedPort) || options.advertisedPort <= 0 || options.advertisedPort > 65535)) fail('--advertised-port must be an integer in 1..65535');
  return options;
}

function resolveJars() {
  if (existsSync(libDir) && readdirSync(libDir).some((f) => f.startsWith(`kafka_2.13-${KAFKA_VERSION}`))) return;
  for (const tool of ['java', 'mvn']) {
    if (spawnSync(tool, ['-version'], { stdio: 'ignore' }).error) fail(`${tool} not found: Java 17+ and Maven are required (Debian: apt-get install -y openjdk-17-jre-headless maven)`);
  }
  // Test files that run at once can each start a broker on a fresh checkout: each resolves into a
  // folder of its own and renames it into place, so no broker ever starts on a half-copied lib.
  const projectDir = join(cacheDir, KAFKA_VERSION, `resolve-${process.pid}`);
  const staged = join(projectDir, 'lib');
  rmSync(projectDir, { recursive: true, force: true });
  mkdirSync(projectDir, { recursive: true });
  writeFileSync(
    join(projectDir, 'pom.xml'),
    `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>oxbow</groupId><artifactId>kafka-broker</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version></dependency>
  </dependencies>
</project>
`,
  );
  console.error(`kafka: resolving org.apache.kafka:kafka_2.13:${KAFKA_VERSION} from Maven Central`);
  const result = spawnSync('mvn', ['-q', '-B', '-Dstyle.color=never', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${staged}`], {
    cwd: projectDir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) {
    rmSync(projectDir, { recursive: true, force: true });
    fail('mvn dependency:copy-dependencies failed');
  }
  try {
    renameSync(staged, libDir);
  } catch (error) {
    // Another start renamed its copy first: use that one.
    if (!existsSync(libDir)) throw error;
  }
  rmSync(projectDir, { recursive: true, force: true });
}

function runDir(port) {
  return join(cacheDir, `run-${port}`);
}

function readPid(port) {
  const pidFile = join(runDir(port), 'kafka.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Sends an ApiVersions v0 request and waits for a well-formed response. */
function answers(port) {
  return new Promise((resolvePromise) => {
    const socket = connect({ host: '127.0.0.1', port });
    const clientId = Buffer.from('oxbow');
    const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length);
    body.writeInt16BE(18, 0); // ApiVersions
    body.writeInt16BE(0, 2);
    body.writeInt32BE(1, 4); // correlation id
    body.writeInt16BE(clientId.length, 8);
    clientId.copy(body, 10);
    const frame = Buffer.alloc(4 + body.length);
    frame.writeInt32BE(body.length, 0);
    body.copy(frame, 4);
    let received = Buffer.alloc(0);
    const done = (ok) => {
      socket.destroy();
      resolvePromise(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write(frame));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 10) {
        const size = received.readInt32BE(0);
        const correlation = received.readInt32BE(4);
        const errorCode = received.readInt16BE(8);
        done(size > 0 && correlation === 1 && errorCode === 0);
      }
    });
  });
}

/** A fresh data folder for the port: its configuration and formatted storage. */
function formatStorage(dir, port, controllerPort, config, classpath, advertisedPort) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    config,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${advertisedPort ?? port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name=PLAINTEXT',
      `log.dirs=${join(dir, 'logs')}`,
      'num.partitions=1',
      'offsets.topic.replication.factor=1',
      // One partition for the group and transaction logs (defaults 50): a fresh broker creates and
      // loads them at the first consumer join / transactional producer, and 50 partitions made that
      // first join answer "not the correct coordinator" for seconds on a loaded machine.
      'offsets.topic.num.partitions=1',
      'transaction.state.log.num.partitions=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=true',
      'log.flush.interval.messages=9223372036854775807',
      '',
    ].join('\n'),
  );
  // Kafka's own Uuid.randomUuid() redraws an id that starts with '-': the storage tool's argument
  // parser reads `-t -xyz` as a missing value (1 start in 64 failed to format).
  let clusterId;
  do clusterId = randomBytes(16).toString('base64url').slice(0, 22);
  while (clusterId.startsWith('-'));
  const format = spawnSync('java', ['-cp', classpath, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', config], { encoding: 'utf8' });
  if (format.status !== 0) fail(`formatting storage failed:\n${format.stdout}${format.stderr}`);
}

async function start({ port, timeoutMs, keepData, advertisedPort }) {
  if (readPid(port) !== undefined && (await answers(port))) {
    console.log(`kafka ready: 127.0.0.1:${port}`);
    return;
  }
  resolveJars();
  const dir = runDir(port);
  const controllerPort = port + 1;
  const config = join(dir, 'server.properties');
  const classpath = join(libDir, '*');
  // --keep-data: the storage formatted by an earlier start of this port is used as it is.
  if (!keepData || !existsSync(join(dir, 'logs', 'meta.properties'))) formatStorage(dir, port, controllerPort, config, classpath, advertisedPort);
  const log = openSync(join(dir, 'kafka.log'), 'a');
  const child = spawn('java', ['-Xmx512m', '-XX:+UseG1GC', '-cp', classpath, 'kafka.Kafka', config], {
    detached: true,
    stdio: ['ignore', log, log],
  });
  writeFileSync(join(dir, 'kafka.pid'), String(child.pid));
  child.unref();
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (readPid(port) === undefined) fail(`broker exited during start; see ${join(dir, 'kafka.log')}`);
    if (await answers(port)) {
      console.log(`kafka ready: 127.0.0.1:${port}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  process.kill(child.pid, 'SIGKILL');
  fail(`broker did not answer within ${timeoutMs} ms; see ${join(dir, 'kafka.log')}`);
}

async function stop({ port }) {
  const pid = readPid(port);
  if (pid === undefined) {
    console.log(`kafka: no broker running on port ${port}`);
    return;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      console.log(`kafka stopped: 127.0.0.1:${port}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  process.kill(pid, 'SIGKILL');
  console.log(`kafka killed: 127.0.0.1:${port}`);
}

const options = parseArgs(process.argv.slice(2));
await (options.stop ? stop(options) : start(options));
