// RisingWave's batch e2e files (../shared/conformance/risingwave/e2e_test/batch, a peer's suite) run
// over the wire against oxbow, and against a real PostgreSQL 15 as a yardstick. The pass rate per
// folder is printed and written to test/slt/conformance-results.md with every failure and its
// reason. This test asserts only that the runner ran every file completely; the peer suite's
// failures are reported, not hidden, and do not fail the build.
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { runSltFile, type SltResult } from './runner.js';

const batchRoot = resolve(import.meta.dirname, '../../../shared/conformance/risingwave/e2e_test/batch');
const resultsFile = join(import.meta.dirname, 'conformance-results.md');

function sltFiles(dir: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...sltFiles(path));
    else if (/\.slt(\.part)?$/.test(name)) files.push(path); // no batch file includes another: run parts too
  }
  return files;
}

let oxbow: OxbowServer | undefined;
let postgres: PostgresServer;
let oxbowStartError = '';

beforeAll(async () => {
  postgres = await startPostgres();
  try {
    oxbow = await startOxbow();
  } catch (error) {
    oxbowStartError = (error as Error).message;
  }
});

afterAll(async () => {
  await oxbow?.stop();
  await postgres?.stop();
});

interface FolderTally {
  records: number;
  passed: number;
}

function tally(results: readonly SltResult[]): Map<string, FolderTally> {
  const folders = new Map<string, FolderTally>();
  for (const result of results) {
    const folder = dirname(relative(batchRoot, result.file));
    const entry = folders.get(folder) ?? { records: 0, passed: 0 };
    entry.records += result.records;
    entry.passed += result.passed;
    folders.set(folder, entry);
  }
  return folders;
}

function percent(passed: number, records: number): string {
  return records === 0 ? '-' : `${((passed / records) * 100).toFixed(1)}%`;
}

it('runs every RisingWave batch file against oxbow and PostgreSQL and records the pass rates', async () => {
  const files = sltFiles(batchRoot);
  expect(files.length).toBeGreaterThanOrEqual(13);
  const options = { engines: ['oxbow'], queryTimeoutMs: 20_000, maxSleepMs: 2_000 };
  const oxbowResults: SltResult[] = [];
  const postgresResults: SltResult[] = [];
  for (const file of files) {
    postgresResults.push(await runSltFile(file, { ...options, url: postgres.url }));
    if (oxbow !== undefined) oxbowResults.push(await runSltFile(file, { ...options, url: oxbow.url }));
  }
  // The runner read and ran every record of every file on both servers.
  for (const result of [...postgresResults, ...oxbowResults]) {
    expect(result.errors, result.file).toEqual([]);
    expect(result.records + result.skipped, result.file).toBeGreaterThan(0);
  }
  if (oxbow !== undefined) {
    expect(oxbowResults.map((result) => result.records)).toEqual(postgresResults.map((result) => result.records));
  }

  const oxbowFolders = tally(oxbowResults);
  const postgresFolders = tally(postgresResults);
  const lines: string[] = [
    '# RisingWave batch conformance (e2e_test/batch)',
    '',
    'Written by `test/slt/conformance.test.ts` (`npx vitest run test/slt/conformance.test.ts`); do not edit by hand.',
    'Records are statements and queries; PostgreSQL 15 runs the same files as a yardstick (RisingWave-only',
    'syntax and semantics fail there).',
    '',
    ...(oxbow === undefined ? [`oxbow did not start: ${oxbowStartError.split('\n')[0]}`, ''] : []),
    '| folder | records | oxbow passed | oxbow rate | PostgreSQL passed | PostgreSQL rate |',
    '|---|---|---|---|---|---|',
  ];
  let totalRecords = 0;
  let totalOxbow = 0;
  let totalPostgres = 0;
  for (const [folder, postgresTally] of postgresFolders) {
    const oxbowTally = oxbowFolders.get(folder) ?? { records: postgresTally.records, passed: 0 };
    totalRecords += postgresTally.records;
    totalOxbow += oxbowTally.passed;
    totalPostgres += postgresTally.passed;
    lines.push(`| ${folder} | ${postgresTally.records} | ${oxbowTally.passed} | ${percent(oxbowTally.passed, oxbowTally.records)} | ${postgresTally.passed} | ${percent(postgresTally.passed, postgresTally.records)} |`);
    console.log(`conformance batch/${folder}: oxbow ${oxbowTally.passed}/${oxbowTally.records} (${percent(oxbowTally.passed, oxbowTally.records)}), PostgreSQL ${postgresTally.passed}/${postgresTally.records}`);
  }
  lines.push(`| **total** | ${totalRecords} | ${totalOxbow} | ${percent(totalOxbow, totalRecords)} | ${totalPostgres} | ${percent(totalPostgres, totalRecords)} |`);
  console.log(`conformance batch total: oxbow ${totalOxbow}/${totalRecords} (${percent(totalOxbow, totalRecords)}), PostgreSQL ${totalPostgres}/${totalRecords} (${percent(totalPostgres, totalRecords)})`);
  lines.push('', '## oxbow failures', '');
  for (const result of oxbowResults) {
    for (const failure of result.failures) {
      const sql = failure.sql.replace(/\s+/g, ' ').slice(0, 160);
      const reason = failure.reason.replace(/\s+/g, ' ').slice(0, 240);
      lines.push(`- \`${relative(batchRoot, failure.file)}:${failure.line}\` \`${sql.replace(/`/g, "'")}\`: ${reason.replace(/`/g, "'")}`);
    }
  }
  writeFileSync(resultsFile, `${lines.join('\n')}\n`);
  // Not running on oxbow at all is a failure (a missing service is never a silent skip).
  expect(oxbow, `oxbow did not start: ${oxbowStartError}`).toBeDefined();
});
