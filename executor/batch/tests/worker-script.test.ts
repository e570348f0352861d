// The one resolver of compiled worker scripts (worker-script.ts): from a module of the build, the
// script beside it; from a module run as TypeScript (vitest), the build's copy at the same path
// under dist/; a copy that is not built is an error that says to build. The build's own copy of the
// resolver is loaded to check the first case as the running engine sees it (npm run build first).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compiledWorkerScript } from '../worker-script.js';

const root = resolve(import.meta.dirname, '..', '..', '..');
const url = (path: string): string => pathToFileURL(join(root, path)).href;

describe('compiledWorkerScript', () => {
  it('gives a module run from the build the script beside it', async () => {
    const built = (await import(url('dist/executor/batch/worker-script.js'))) as { compiledWorkerScript: typeof compiledWorkerScript };
    const script = built.compiledWorkerScript(url('dist/executor/batch/worker-pool.js'), './pool-worker.js');
    expect(script.href).toBe(url('dist/executor/batch/pool-worker.js'));
    expect(existsSync(script)).toBe(true);
    expect(built.compiledWorkerScript(url('dist/executor/connectors/kafka/kafka-worker-reader.js'), './kafka-worker.js').href).toBe(url('dist/executor/connectors/kafka/kafka-worker.js'));
  });

  it("gives a module run from its TypeScript source the build's copy under dist/", () => {
    const cases: [string, string, string][] = [
      ['executor/batch/batch-workers.ts', './batch-worker.js', 'dist/executor/batch/batch-worker.js'],
      ['executor/cluster/lease-keeper.ts', './lease-keeper-worker.js', 'dist/executor/cluster/lease-keeper-worker.js'],
      ['executor/connectors/kafka/kafka-worker-reader.ts', './kafka-worker.js', 'dist/executor/connectors/kafka/kafka-worker.js'],
      ['executor/stream/parallel/parallel-runtime.ts', '../../connectors/source-fragment-worker.js', 'dist/executor/connectors/source-fragment-worker.js'],
    ];
    for (const [from, script, expected] of cases) {
      const resolved = compiledWorkerScript(url(from), script);
      expect(resolved.href, from).toBe(url(expected));
      expect(existsSync(resolved), expected).toBe(true);
    }
  });

  it('says to build when the copy under dist/ is missing', () => {
    expect(() => compiledWorkerScript(url('executor/batch/batch-workers.ts'), './no-such-worker.js')).toThrow(
      `${join(root, 'dist/executor/batch/no-such-worker.js')} is missing: run npm run build first`,
    );
  });

  it('refuses a script outside the source tree', () => {
    expect(() => compiledWorkerScript(url('executor/batch/batch-workers.ts'), '../../../../elsewhere.js')).toThrow(/no build holds it/);
  });
});
