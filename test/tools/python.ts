// Runs the Python client-tool scripts of test/tools/ (SQLAlchemy 2 with psycopg 3 and psycopg2,
// asyncpg) in the venv scripts/python-tools.sh makes (.ci/run calls it). A missing venv fails the
// test with a message naming that script: nothing here skips.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The venv's python: $OXBOW_PYTHON_VENV/bin/python, else .cache/python-tools/bin/python. */
export function venvPython(): string {
  const venv = process.env.OXBOW_PYTHON_VENV ?? join(ROOT, '.cache', 'python-tools');
  const python = join(venv, 'bin', 'python');
  if (!existsSync(python)) {
    throw new Error(`no Python venv for the client-tool tests at ${venv}: run \`bash scripts/python-tools.sh\` (it installs SQLAlchemy, psycopg, psycopg2 and asyncpg from PyPI)`);
  }
  return python;
}

/** Runs test/tools/<script> with the arguments; resolves to the JSON object its last stdout line prints. */
export function runPython(script: string, args: readonly string[], timeoutMs = 120_000): Promise<Record<string, unknown>> {
  const python = venvPython();
  return new Promise((resolve, reject) => {
    execFile(python, [join(ROOT, 'test', 'tools', script), ...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null) {
        reject(new Error(`${script} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
        return;
      }
      const lines = stdout.trim().split('\n');
      try {
        resolve(JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>);
      } catch {
        reject(new Error(`${script} printed no JSON result:\n${stdout}\n${stderr}`));
      }
    });
  });
}
