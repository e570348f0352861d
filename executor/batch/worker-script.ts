// Where a worker thread's compiled script is, for every module that starts one (the worker pool,
// the batch workers, the fragments' workers, the Kafka reader, the cluster's lease keeper and
// remote shares): a module names its script relative to itself, as `.js`. Run from the build, the
// script is beside the module. Under vitest the module runs from its TypeScript source while a
// worker thread needs JavaScript: the script is then the build's copy in dist/ (npm test builds
// first), at the same path under dist/ as the source's.

import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve, isAbsolute } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The repository's root, when this module runs from its TypeScript source (two folders up). */
const sourceRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The compiled worker script `script` (a path relative to the module, as `./batch-worker.js`) of the
 * module whose `import.meta.url` is `from`: beside it in the build, the build's copy in dist/ when
 * the module runs from TypeScript. A missing copy is an error that says to build.
 */
export function compiledWorkerScript(from: string, script: string): URL {
  const beside = new URL(script, from);
  if (!fileURLToPath(from).endsWith('.ts')) return beside;
  const inRoot = relative(sourceRoot, fileURLToPath(beside));
  if (inRoot.startsWith('..') || isAbsolute(inRoot)) throw new Error(`${fileURLToPath(beside)} is outside ${sourceRoot}: no build holds it`);
  const built = join(sourceRoot, 'dist', inRoot);
  if (!existsSync(built)) throw new Error(`${built} is missing: run npm run build first`);
  return pathToFileURL(built);
}
