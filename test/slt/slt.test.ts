// oxbow's own sqllogictest files: every `test/slt/**/*.slt` runs against a fresh oxbow server over
// the wire, one test per file, and must pass completely. (`*.slt.part` files are reached through
// `include`; runner-fixtures/ holds files that fail on purpose and is not matched.)
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOxbow, type OxbowServer } from '../support/server.js';
import { describeFailures, runSltFile } from './runner.js';

const here = import.meta.dirname;

function sltFiles(dir: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...sltFiles(path));
    else if (name.endsWith('.slt')) files.push(path);
  }
  return files;
}

let oxbow: OxbowServer;

beforeAll(async () => {
  oxbow = await startOxbow();
});

afterAll(async () => {
  await oxbow?.stop();
});

describe('oxbow slt files', () => {
  const files = sltFiles(here);
  it('finds our slt files', () => {
    expect(files.length).toBeGreaterThan(0);
  });
  for (const file of files) {
    it(relative(here, file), async () => {
      const result = await runSltFile(file, { url: oxbow.url, engines: ['oxbow'] });
      expect(describeFailures(result)).toBe('');
      expect(result.unsupported).toEqual([]);
      expect(result.passed).toBe(result.records);
      expect(result.records).toBeGreaterThan(0);
    });
  }
});
