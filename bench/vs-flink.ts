// Nexmark side by side with Apache Flink 2.0 on this machine: for each query, oxbow's nexmark
// suite (dist/bench/nexmark.js, the query as a materialized view over the built-in generator, or in
// the form --form names) and the same query on Flink (bench/flink/: a local MiniCluster on RocksDB reading a port of oxbow's
// generator, the same events), alternately A B A B (--rounds 2), the same event count on both.
//
// Prints JSON lines {"bench":"vs-flink-qN-oxbow" | "vs-flink-qN-flink","metric","value","unit",
// "round","parallelism","load_1m"} for each run: events_per_second, events_per_cpu_second (per core),
// cpu_seconds, peak_rss (MiB), seconds, and load_1m (the 1-minute load average as the run
// started). oxbow's figures run from its first CREATE SOURCE to the commit of the last event;
// Flink's from the job's submission to its end (the job's net runtime, and the JVM's CPU over it),
// with events_per_second_wall, cpu_seconds_wall and wall_seconds from the INSERT's submission
// (Flink's planning and its local cluster's start included), and *_running from its first source
// reader's open (the tasks deployed and their code generated) to the end. Then per query
// {"bench":"vs-flink-qN", "metric":"ratio_events_per_second" | "ratio_events_per_cpu_second" |
// "ratio_peak_rss", "value","unit":"oxbow/flink","events","rounds","parallelism"}: the ratio of the
// two systems' medians over the rounds. In the sink and windowed forms the benches are
// vs-flink-qN-sink-oxbow, vs-flink-qN-sink-flink, vs-flink-qN-sink (and -window).
//
// Run: npm run build && npm run bench -- vs-flink --queries q0,q4 --events 1000000
//   (defaults: every query both sides run, q0-q5 and q7-q22, and 1,000,000 events times
//   BENCH_SCALE; q12's windows are of processing time (proctime()) on both sides, so its rows depend
//   on the clock, not its throughput; q6 has no Flink job:
//   Flink's OVER window takes no retractions, as the Nexmark suite's q6 says; --rounds R (2);
//   --form view|sink|window: oxbow's form (bench/nexmark.ts: the view, CREATE SINK ... WITH
//   (connector = 'blackhole'), or q5, q7 and q8's event-time windows, the default set then); Flink's
//   job is the same in every form, its INSERT into blackhole;
//   --parallelism P (1): both systems', Flink's job's and oxbow's engine's (nexmark.ts --parallelism:
//   keyed fragments in P worker threads, executor/stream/PARALLEL.md); --java-opts "OPTS" for the
//   Flink JVM; --memory-limit-mib L passed to oxbow; --rebuild builds the Flink jar even when it is
//   there). Needs a JDK 17 and Maven: the Flink jar is built with `mvn -q -f bench/flink/pom.xml
//   package` when bench/flink/target holds none or bench/flink/src is newer. oxbow's side runs the
//   views of bench/nexmark/qN.sql, as nexmark.ts does.
//   Not run by `npm run bench` without a suite name: too slow for CI, which does not run it.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QUERY_DIR, WINDOW_QUERIES, type NexmarkForm } from './nexmark.js';

const HERE = dirname(fileURLToPath(import.meta.url));
/** The repository's root (this file runs from dist/bench/ built, from bench/ under a TS runner). */
const ROOT = HERE.endsWith(join('dist', 'bench')) ? join(HERE, '..', '..') : join(HERE, '..');
const FLINK_DIR = join(ROOT, 'bench', 'flink');
const FLINK_JAR = join(FLINK_DIR, 'target', 'oxbow-flink-nexmark.jar');
const FLINK_LIB = join(FLINK_DIR, 'target', 'lib');
const OXBOW_NEXMARK = join(ROOT, 'dist', 'bench', 'nexmark.js');
const DEFAULT_QUERIES = ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8', 'q9', 'q10', 'q11', 'q12', 'q13', 'q14', 'q15', 'q16', 'q17', 'q18', 'q19', 'q20', 'q21', 'q22'];
/** The windowed form's default: the queries oxbow runs as qN-window.sql. */
const DEFAULT_WINDOW_QUERIES = ['q5', 'q7', 'q8'];

/** One run's figures by metric name, as the system printed them. */
type Figures = Map<string, { value: number; unit: string }>;

function usage(message: string): never {
  console.error(`vs-flink: ${message}`);
  console.error('usage: node dist/bench/vs-flink.js [--queries q0,q4] [--events N] [--rounds R] [--form view|sink|window] [--parallelism P] [--java-opts "OPTS"] [--memory-limit-mib L] [--rebuild]');
  process.exit(2);
}

function parseFlags(args: readonly string[]): Map<string, string | true> {
  const flags = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) usage(`unexpected argument "${arg}"`);
    const equals = arg.indexOf('=');
    if (equals >= 0) flags.set(arg.slice(0, equals), arg.slice(equals + 1));
    else if (args[i + 1] !== undefined && !args[i + 1]!.startsWith('--')) flags.set(arg, args[++i]!);
    else flags.set(arg, true);
  }
  const known = new Set(['--queries', '--events', '--rounds', '--form', '--parallelism', '--java-opts', '--memory-limit-mib', '--rebuild']);
  for (const name of flags.keys()) if (!known.has(name)) usage(`unknown flag ${name}`);
  return flags;
}

function positiveInteger(flags: Map<string, string | true>, name: string, fallback: number): number {
  const raw = flags.get(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw === true || !Number.isSafeInteger(value) || value <= 0) usage(`${name} must be a positive integer, not ${String(raw)}`);
  return value;
}

/** The newest modification time (ms) of the files under `path` (the path's own when a file). */
function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

/** Builds the Flink jar and its dependencies (target/lib) unless they are there and newer than the sources. */
function ensureFlinkJar(rebuild: boolean): void {
  const built = existsSync(FLINK_JAR) && existsSync(FLINK_LIB) && readdirSync(FLINK_LIB).some((name) => name.startsWith('flink-table-runtime'));
  const stale = built && Math.max(newestMtime(join(FLINK_DIR, 'src')), newestMtime(join(FLINK_DIR, 'pom.xml'))) > statSync(FLINK_JAR).mtimeMs;
  if (!rebuild && built && !stale) return;
  for (const tool of ['java', 'mvn']) {
    if (spawnSync(tool, ['-version'], { stdio: 'ignore' }).error !== undefined) {
      throw new Error(`vs-flink needs ${tool} on the PATH (a JDK 17: apt-get install -y openjdk-17-jdk-headless, and Maven)`);
    }
  }
  console.error('vs-flink: building the Flink jar (mvn -q -f bench/flink/pom.xml package)');
  const maven = spawnSync('mvn', ['-q', '-f', join(FLINK_DIR, 'pom.xml'), 'package'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (maven.status !== 0 || !existsSync(FLINK_JAR)) throw new Error(`mvn package exited with ${String(maven.status)}`);
}

/** Runs a command and collects the JSON lines it prints whose bench is `bench`. */
function runChild(command: string, args: readonly string[], bench: string): Promise<Figures> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const figures: Figures = new Map();
    let partial = '';
    const take = (line: string): void => {
      if (!line.startsWith('{')) return;
      const parsed = JSON.parse(line) as { bench?: string; metric?: string; value?: number; unit?: string };
      if (parsed.bench === bench && parsed.metric !== undefined && typeof parsed.value === 'number') figures.set(parsed.metric, { value: parsed.value, unit: parsed.unit ?? '' });
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop()!;
      for (const line of lines) take(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      take(partial);
      if (code !== 0) reject(new Error(`${command} ${args.join(' ')} exited with ${String(code)}`));
      else if (!figures.has('events_per_second')) reject(new Error(`${command} printed no events_per_second for ${bench}`));
      else resolve(figures);
    });
  });
}

function runOxbow(query: string, form: NexmarkForm, events: number, parallelism: number, memoryLimitMiB: string | undefined): Promise<Figures> {
  const args = [OXBOW_NEXMARK, '--queries', query, '--events', String(events), '--form', form];
  if (parallelism !== 1) args.push('--parallelism', String(parallelism));
  if (memoryLimitMiB !== undefined) args.push('--memory-limit-mib', memoryLimitMiB);
  // nexmark.ts labels the sink and windowed forms nexmark-qN-sink and nexmark-qN-window, and a
  // parallelism P > 1 with -pP after them.
  return runChild(process.execPath, args, `nexmark-${query}${form === 'view' ? '' : `-${form}`}${parallelism === 1 ? '' : `-p${parallelism}`}`);
}

function runFlink(query: string, events: number, parallelism: number, javaOpts: readonly string[]): Promise<Figures> {
  const classpath = `${FLINK_JAR}:${join(FLINK_LIB, '*')}`;
  const args = [...javaOpts, '-cp', classpath, 'oxbow.nexmark.RunQuery', '--query', query, '--events', String(events), '--parallelism', String(parallelism), '--sql', join(FLINK_DIR, 'queries', `${query}.sql`)];
  return runChild('java', args, `flink-nexmark-${query}`);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function print(bench: string, metric: string, value: number, unit: string, extra: Record<string, number> = {}): void {
  const rounded = Math.abs(value) >= 10 ? Number(value.toFixed(1)) : Number(value.toPrecision(4));
  console.log(JSON.stringify({ bench, metric, value: rounded, unit, ...extra }));
}

/** A run's figures as JSON lines, with cpu_seconds (events over events per CPU second) added. */
function printRun(name: string, system: 'oxbow' | 'flink', round: number, load: number, events: number, parallelism: number, figures: Figures): void {
  const bench = `vs-flink-${name}-${system}`;
  const extra = { round, parallelism, load_1m: Number(load.toFixed(2)) };
  const perCpu = figures.get('events_per_cpu_second')?.value;
  if (perCpu !== undefined && !figures.has('cpu_seconds')) figures.set('cpu_seconds', { value: events / perCpu, unit: 's' });
  for (const metric of ['events_per_second', 'events_per_second_wall', 'events_per_second_running', 'events_per_cpu_second', 'cpu_seconds', 'cpu_seconds_wall', 'cpu_seconds_running', 'peak_rss', 'seconds', 'wall_seconds', 'running_seconds']) {
    const figure = figures.get(metric);
    if (figure !== undefined) print(bench, metric, figure.value, figure.unit, extra);
  }
  print(bench, 'load_1m', load, 'load', extra);
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const scale = Number(process.env['BENCH_SCALE'] ?? '1');
  const events = positiveInteger(flags, '--events', Math.max(1, Math.round(1_000_000 * scale)));
  const rounds = positiveInteger(flags, '--rounds', 2);
  const parallelism = positiveInteger(flags, '--parallelism', 1);
  const queriesFlag = flags.get('--queries');
  if (queriesFlag === true) usage('--queries needs a list (q0,q4)');
  const formFlag = flags.get('--form') ?? 'view';
  if (formFlag !== 'view' && formFlag !== 'sink' && formFlag !== 'window') usage(`--form must be view, sink or window, not ${String(formFlag)}`);
  const form: NexmarkForm = formFlag;
  const queries = (queriesFlag ?? (form === 'window' ? DEFAULT_WINDOW_QUERIES : DEFAULT_QUERIES).join(',')).split(',').map((query) => query.trim());
  for (const query of queries) {
    if (!existsSync(join(FLINK_DIR, 'queries', `${query}.sql`))) usage(`no Flink query ${query} (bench/flink/queries/${query}.sql)`);
    if (form === 'window' && !WINDOW_QUERIES.includes(query)) usage(`the windowed form is for ${WINDOW_QUERIES.join(', ')}, not ${query}`);
    const oxbowFile = form === 'window' ? `${query}-window.sql` : `${query}.sql`;
    if (!existsSync(join(QUERY_DIR, oxbowFile))) usage(`no oxbow query ${query} (bench/nexmark/${oxbowFile})`);
  }
  const javaOptsFlag = flags.get('--java-opts');
  const javaOpts = typeof javaOptsFlag === 'string' ? javaOptsFlag.split(/\s+/).filter((opt) => opt.length > 0) : [];
  const memoryLimit = flags.get('--memory-limit-mib');
  if (memoryLimit === true) usage('--memory-limit-mib needs a number of MiB');
  if (!existsSync(OXBOW_NEXMARK)) throw new Error(`${OXBOW_NEXMARK} is missing: npm run build first`);
  ensureFlinkJar(flags.get('--rebuild') === true);

  let failed = false;
  for (const query of queries) {
    const name = form === 'view' ? query : `${query}-${form}`;
    const results: Record<'oxbow' | 'flink', Figures[]> = { oxbow: [], flink: [] };
    for (let round = 1; round <= rounds; round++) {
      for (const system of ['oxbow', 'flink'] as const) {
        const load = loadavg()[0]!;
        try {
          const figures = system === 'oxbow' ? await runOxbow(query, form, events, parallelism, memoryLimit) : await runFlink(query, events, parallelism, javaOpts);
          results[system].push(figures);
          printRun(name, system, round, load, events, parallelism, figures);
        } catch (error) {
          failed = true;
          console.error(`vs-flink ${name} ${system} round ${round}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    }
    const ratio = (metric: string): number | undefined => {
      const of = (system: 'oxbow' | 'flink'): number[] => results[system].flatMap((figures) => (figures.has(metric) ? [figures.get(metric)!.value] : []));
      const oxbow = of('oxbow');
      const flink = of('flink');
      return oxbow.length === 0 || flink.length === 0 ? undefined : median(oxbow) / median(flink);
    };
    for (const metric of ['events_per_second', 'events_per_cpu_second', 'peak_rss']) {
      const value = ratio(metric);
      if (value !== undefined) print(`vs-flink-${name}`, `ratio_${metric}`, value, 'oxbow/flink', { events, rounds, parallelism });
    }
  }
  if (failed) process.exitCode = 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
