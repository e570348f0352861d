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
//   --owner PID                              the process the broker belongs to (a test file's): the
//                                            port stays claimed while it lives, and only it stops the
//                                            broker; without it the broker itself is the owner
//   --stop --keep-claim                      stop, but keep the ports claimed for a --keep-data start
//
// A start claims the broker's port and its controller's (port + 1) before it touches anything:
// `.cache/kafka/port-<n>.claim`, created exclusively, holds the owner's and the broker's pids. A
// claim whose owner is alive is never taken over: a second start on a claimed port fails ("port N
// is claimed by process P") instead of reusing or reformatting another process's broker, and a
// --stop kills only the broker pid the claim recorded (and only when that process's command line
// names this port's configuration). A claim whose owner died is stale and taken over. A start is
// ready only once its own JVM holds the listening socket (/proc, where there is one), so an answer
// from another process on that port never counts.
//
// The broker comes from Maven Central: `mvn dependency:copy-dependencies` resolves
// org.apache.kafka:kafka_2.13 and its runtime dependencies into .cache/kafka/<version>/lib
// (outside git). Each port gets its own data folder under .cache/kafka/run-<port>, formatted
// fresh at every start: from a template the storage tool formats once per version
// (.cache/kafka/<version>/formatted), so a start runs one JVM, the broker's. A --stop by the owner
// that started the broker with --owner (without --keep-claim) removes the port's folder too.
// Prerequisites: Java 17+ and Maven.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, openSync, readdirSync, readlinkSync, closeSync, copyFileSync, writeSync, unlinkSync, linkSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const KAFKA_VERSION = '4.1.1';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cacheDir = process.env.OXBOW_KAFKA_CACHE ?? join(root, '.cache', 'kafka');
const libDir = join(cacheDir, KAFKA_VERSION, 'lib');

/** What a failing start undoes first (its claims, its JVM). */
let undo = () => {};

function fail(message) {
  undo();
  console.error(`kafka: ${message}`);
  process.exit(1);
}

function parseArgs(argv) {
  const options = { port: 9092, stop: false, keepData: false, keepClaim: false, timeoutMs: 60_000, advertisedPort: undefined, owner: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--stop') options.stop = true;
    else if (arg === '--keep-data') options.keepData = true;
    else if (arg === '--keep-claim') options.keepClaim = true;
    else if (arg === '--owner') options.owner = Number(argv[++i]);
    else if (arg === '--port') options.port = Number(argv[++i]);
    else if (arg.startsWith('--port=')) options.port = Number(arg.slice(7));
    else if (arg === '--timeout-ms') options.timeoutMs = Number(argv[++i]);
    else if (arg === '--advertised-port') options.advertisedPort = Number(argv[++i]);
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: npm run kafka -- [--port N] [--stop [--keep-claim]] [--keep-data] [--timeout-ms N] [--advertised-port M] [--owner PID]');
      process.exit(0);
    } else fail(`unknown argument ${arg} (try --help)`);
  }
  if (!Number.isInteger(options.port) || options.port <= 0 || options.port > 65534) fail('--port must be an integer in 1..65534');
  if (options.advertisedPort !== undefined && (!Number.isInteger(options.advertisedPort) || options.advertisedPort <= 0 || options.advertisedPort > 65535)) fail('--advertised-port must be an integer in 1..65535');
  if (options.owner !== undefined && (!Number.isInteger(options.owner) || options.owner <= 0)) fail('--owner must be a process id');
  return options;
}

/**
 * The broker logs through SLF4J 1.7 (kafka_2.13's dependency); without a binding on the classpath
 * it logs nothing, so a broker that dies at start leaves no reason. Log4j 2's binding for SLF4J 1.7
 * (the version of log4j-api and log4j-core Kafka brings) writes to kafka.log (brokerLogConfig).
 */
const LOG4J_SLF4J = { groupId: 'org.apache.logging.log4j', artifactId: 'log4j-slf4j-impl', version: '2.24.3' };

function resolveJars() {
  const has = (prefix) => readdirSync(libDir).some((f) => f.startsWith(prefix));
  if (existsSync(libDir) && has(`kafka_2.13-${KAFKA_VERSION}`) && has(`${LOG4J_SLF4J.artifactId}-${LOG4J_SLF4J.version}`)) return;
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
    <dependency><groupId>${LOG4J_SLF4J.groupId}</groupId><artifactId>${LOG4J_SLF4J.artifactId}</artifactId><version>${LOG4J_SLF4J.version}</version></dependency>
  </dependencies>
</project>
`,
  );
  console.error(`kafka: resolving org.apache.kafka:kafka_2.13:${KAFKA_VERSION} from Maven Central`);
  const result = spawnSync('mvn', ['-q', '-B', '-Dstyle.color=never', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${staged}`], {
    cwd: projectDir,
    // Maven's output (escape codes even under -q) goes to stderr: stdout carries only the ready line.
    stdio: ['ignore', 2, 'inherit'],
  });
  if (result.status !== 0) {
    rmSync(projectDir, { recursive: true, force: true });
    fail('mvn dependency:copy-dependencies failed');
  }
  // A lib of an earlier resolve without the binding is replaced (a broker running on it keeps its open jars).
  if (existsSync(libDir) && !has(`${LOG4J_SLF4J.artifactId}-${LOG4J_SLF4J.version}`)) rmSync(libDir, { recursive: true, force: true });
  try {
    renameSync(staged, libDir);
  } catch (error) {
    // Another start renamed its copy first: use that one.
    if (!existsSync(libDir)) throw error;
  }
  rmSync(projectDir, { recursive: true, force: true });
}

/**
 * The broker's log4j2 configuration: warnings and errors of every logger to standard output, which
 * is kafka.log, plus the broker's start and stop lines (kafka.server at INFO would log each request
 * batch's topics; KafkaRaftServer and BrokerServer say when the broker is up and why it stopped).
 */
function brokerLogConfig() {
  return [
    'appender.out.type = Console',
    'appender.out.name = out',
    'appender.out.layout.type = PatternLayout',
    'appender.out.layout.pattern = [%d] %p %m (%c)%n',
    'rootLogger.level = WARN',
    'rootLogger.appenderRef.out.ref = out',
    'logger.raft.name = kafka.server.KafkaRaftServer',
    'logger.raft.level = INFO',
    'logger.broker.name = kafka.server.BrokerServer',
    'logger.broker.level = INFO',
    '',
  ].join('\n');
}

function runDir(port) {
  return join(cacheDir, `run-${port}`);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

function claimPath(port) {
  return join(cacheDir, `port-${port}.claim`);
}

/** The claim of `port`: { owner, broker } pids, or undefined when there is none. */
function readClaim(port) {
  // A claim is created empty and written at once: read again while a start is writing it.
  for (let attempt = 0; ; attempt++) {
    let text;
    try {
      text = readFileSync(claimPath(port), 'utf8');
    } catch (error) {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const claim = JSON.parse(text);
      if (Number.isInteger(claim.owner)) return claim;
    } catch {
      // being written
    }
    if (attempt >= 40) return { owner: undefined, broker: undefined, unreadable: text };
    spawnSync('sleep', ['0.05']);
  }
}

function writeClaim(port, claim) {
  const temporary = `${claimPath(port)}.${process.pid}`;
  writeFileSync(temporary, JSON.stringify(claim));
  renameSync(temporary, claimPath(port));
}

/**
 * Claims `port` for `owner` (this script's pid while it starts the broker, when no --owner): an
 * exclusive create; a claim of the same owner is kept (a --keep-data start after --keep-claim); a
 * claim whose owner is dead is stale and taken over; any other claim makes the start fail.
 */
function claimPort(port, owner) {
  mkdirSync(cacheDir, { recursive: true });
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      const fd = openSync(claimPath(port), 'wx');
      try {
        writeSync(fd, JSON.stringify({ owner, broker: null }));
      } finally {
        closeSync(fd);
      }
      return;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const claim = readClaim(port);
    if (claim === undefined) continue;
    if (claim.owner === owner) return;
    if (claim.owner !== undefined && alive(claim.owner)) {
      fail(`port ${port} is claimed by process ${claim.owner} (broker ${claim.broker ?? 'starting'}; ${claimPath(port)}): not starting a second broker there`);
    }
    if (claim.owner === undefined) fail(`port ${port} has an unreadable claim ${claimPath(port)}: ${JSON.stringify(claim.unreadable)}`);
    // Stale: move it aside, and take it over only if what was moved is still that dead claim (a
    // start racing here may have replaced it with its own live one: put that back).
    const aside = `${claimPath(port)}.stale-${process.pid}`;
    try {
      renameSync(claimPath(port), aside);
    } catch (error) {
      if (error.code === 'ENOENT') continue;
      throw error;
    }
    let moved;
    try {
      moved = JSON.parse(readFileSync(aside, 'utf8'));
    } catch {
      moved = { owner: undefined };
    }
    if (moved.owner !== claim.owner) {
      try {
        linkSync(aside, claimPath(port));
      } catch {
        // a third start claimed it meanwhile: it stays theirs
      }
      unlinkSync(aside);
      fail(`port ${port} is claimed by process ${moved.owner}: not starting a second broker there`);
    }
    unlinkSync(aside);
  }
  fail(`could not claim port ${port}`);
}

function releasePort(port, owner) {
  const claim = readClaim(port);
  if (claim !== undefined && claim.owner === owner) rmSync(claimPath(port), { force: true });
}

/**
 * The inode of the socket listening on 127.0.0.1:port, from /proc/net/tcp or tcp6 (the JVM listens
 * on an IPv6 socket, at ::ffff:127.0.0.1); undefined when none listens or there is no /proc.
 */
function listeningInode(port) {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const locals = [`0100007F:${hexPort}`, `0000000000000000FFFF00000100007F:${hexPort}`];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (locals.includes(fields[1]) && fields[3] === '0A') return fields[9];
    }
  }
  return undefined;
}

/** Whether process `pid` holds the socket listening on 127.0.0.1:port (true where there is no /proc to tell). */
function listensOn(pid, port) {
  if (!existsSync('/proc/net/tcp')) return true;
  const inode = listeningInode(port);
  if (inode === undefined) return false;
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/** Whether `pid` is a broker this script started for `port` (its command line names the port's configuration). */
function isBrokerOf(pid, port) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(join(runDir(port), 'server.properties'));
  } catch {
    return !existsSync('/proc/self/cmdline') && alive(pid);
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
  // The storage tool's output is the same for every broker but for two ids: a JVM formats once per
  // Kafka version (a template), and each start copies its bootstrap.checkpoint (the feature levels)
  // and writes meta.properties with fresh ids, as the tool would (a JVM start saved per broker).
  const logs = join(dir, 'logs');
  mkdirSync(logs, { recursive: true });
  copyFileSync(join(formattedTemplate(classpath), 'bootstrap.checkpoint'), join(logs, 'bootstrap.checkpoint'));
  writeFileSync(join(logs, 'meta.properties'), `node.id=1\ndirectory.id=${randomUuid()}\nversion=1\ncluster.id=${randomUuid()}\n`);
}

/** A random Kafka Uuid as the tools print it: 16 bytes in URL-safe base64, 22 characters. */
function randomUuid() {
  // Kafka's own Uuid.randomUuid() redraws an id that starts with '-' (a command line reads it as a flag).
  let id;
  do id = randomBytes(16).toString('base64url');
  while (id.startsWith('-'));
  return id;
}

/**
 * A folder the storage tool formatted once for this Kafka version (`<version>/formatted`): formatted
 * into a folder of this process's own and renamed into place, as the jars are.
 */
function formattedTemplate(classpath) {
  const template = join(cacheDir, KAFKA_VERSION, 'formatted');
  if (existsSync(join(template, 'bootstrap.checkpoint'))) return template;
  const staging = join(cacheDir, KAFKA_VERSION, `format-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const config = join(staging, 'format.properties');
  // Only what the storage tool reads: nothing binds these ports.
  writeFileSync(
    config,
    [
      'process.roles=broker,controller',
      'node.id=1',
      'controller.quorum.voters=1@127.0.0.1:9093',
      'listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093',
      'controller.listener.names=CONTROLLER',
      `log.dirs=${join(staging, 'logs')}`,
      '',
    ].join('\n'),
  );
  const format = spawnSync('java', ['-cp', classpath, 'kafka.tools.StorageTool', 'format', '-t', randomUuid(), '-c', config], { encoding: 'utf8' });
  if (format.status !== 0 || !existsSync(join(staging, 'logs', 'bootstrap.checkpoint'))) {
    rmSync(staging, { recursive: true, force: true });
    fail(`formatting storage failed:\n${format.stdout}${format.stderr}`);
  }
  try {
    renameSync(join(staging, 'logs'), template);
  } catch (error) {
    // Another start renamed its copy first: use that one.
    if (!existsSync(join(template, 'bootstrap.checkpoint'))) throw error;
  }
  rmSync(staging, { recursive: true, force: true });
  return template;
}

async function start({ port, timeoutMs, keepData, advertisedPort, owner }) {
  const controllerPort = port + 1;
  // A start without --owner (`npm run kafka`, a benchmark) on a port whose broker owns its claim and
  // listens there finds the broker it or an earlier such start made: ready, as before. A test's
  // start (--owner) never takes another process's broker.
  const running = owner === undefined ? readClaim(port) : undefined;
  if (running?.broker && running.owner === running.broker && alive(running.broker) && listensOn(running.broker, port)) {
    console.log(`kafka ready: 127.0.0.1:${port} (already running: process ${running.broker})`);
    return;
  }
  let claimant = owner ?? process.pid;
  const release = () => {
    releasePort(port, claimant);
    releasePort(controllerPort, claimant);
  };
  claimPort(port, claimant);
  undo = () => releasePort(port, claimant);
  claimPort(controllerPort, claimant);
  undo = release;
  const previous = readClaim(port)?.broker;
  if (previous && alive(previous) && isBrokerOf(previous, port)) fail(`the broker ${previous} of port ${port} is still running (--stop it first)`);
  {
    resolveJars();
    const dir = runDir(port);
    const config = join(dir, 'server.properties');
    const classpath = join(libDir, '*');
    // --keep-data: the storage formatted by an earlier start of this port is used as it is.
    if (!keepData || !existsSync(join(dir, 'logs', 'meta.properties'))) formatStorage(dir, port, controllerPort, config, classpath, advertisedPort);
    const log = openSync(join(dir, 'kafka.log'), 'a');
    const logConfig = join(dir, 'log4j2.properties');
    writeFileSync(logConfig, brokerLogConfig());
    const child = spawn('java', ['-Xmx512m', '-XX:+UseG1GC', `-Dlog4j2.configurationFile=${logConfig}`, '-cp', classpath, 'kafka.Kafka', config], {
      detached: true,
      stdio: ['ignore', log, log],
    });
    let exited = false;
    child.once('exit', () => (exited = true));
    undo = () => {
      if (!exited) child.kill('SIGKILL');
      release();
    };
    // Without --owner the broker owns its ports: the claim lives as long as it does.
    const claim = { owner: owner ?? child.pid, broker: child.pid };
    writeClaim(port, claim);
    writeClaim(controllerPort, claim);
    claimant = claim.owner;
    writeFileSync(join(dir, 'kafka.pid'), String(child.pid));
    child.unref();
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (exited) fail(`broker exited during start; see ${join(dir, 'kafka.log')}`);
      // Ready when it answers and the listening socket is this JVM's, not another process's.
      if ((await answers(port)) && listensOn(child.pid, port)) {
        console.log(`kafka ready: 127.0.0.1:${port} pid ${child.pid}`);
        return;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    fail(`broker did not answer within ${timeoutMs} ms; see ${join(dir, 'kafka.log')}`);
  }
}

async function stop({ port, owner, keepClaim }) {
  const claim = readClaim(port);
  if (claim === undefined || !claim.broker) {
    // A claim kept by an earlier --stop --keep-claim is given up by a plain --stop of its owner.
    if (claim !== undefined && !keepClaim && (owner === undefined || claim.owner === owner)) {
      releasePort(port, claim.owner);
      releasePort(port + 1, claim.owner);
    }
    console.log(`kafka: no broker running on port ${port}`);
    return;
  }
  if (owner !== undefined && claim.owner !== owner) fail(`port ${port} is claimed by process ${claim.owner}, not ${owner}: not stopping its broker`);
  const pid = claim.broker;
  const ours = alive(pid) && isBrokerOf(pid, port);
  const finish = (message) => {
    // A broker that owned its own claim leaves nothing to keep.
    if (keepClaim && claim.owner !== pid) {
      const kept = { owner: claim.owner, broker: null };
      writeClaim(port, kept);
      writeClaim(port + 1, kept);
    } else {
      releasePort(port, claim.owner);
      releasePort(port + 1, claim.owner);
      // A broker started for an owner (a test file's) leaves no data behind when stopped for good:
      // its next start on that port formats a fresh folder anyway. A broker that owns itself keeps
      // its folder for a later --keep-data start.
      if (owner !== undefined && claim.owner !== pid) rmSync(runDir(port), { recursive: true, force: true });
    }
    console.log(message);
  };
  if (!ours) {
    finish(`kafka: the broker ${pid} of port ${port} is not running`);
    return;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (!alive(pid) || !isBrokerOf(pid, port)) {
      finish(`kafka stopped: 127.0.0.1:${port}`);
      return;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  process.kill(pid, 'SIGKILL');
  finish(`kafka killed: 127.0.0.1:${port}`);
}

const options = parseArgs(process.argv.slice(2));
await (options.stop ? stop(options) : start(options));
