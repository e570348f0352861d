// Where the source fragments' worker script (source-fragment-worker.ts) is, for the engine to hand to the
// parallel runtime (executor/stream/parallel/source-fragment.ts): the worker generates a source's
// rows, which only this layer knows how to do.

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The compiled source-fragment-worker.js (under vitest this module runs from TypeScript: the build's copy in dist/). */
export function sourceFragmentWorkerScript(): URL {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new URL('./source-fragment-worker.js', import.meta.url);
  const marker = '/executor/connectors/';
  const root = here.slice(0, here.lastIndexOf(marker));
  const built = `${root}/dist${marker}source-fragment-worker.js`;
  if (!existsSync(built)) throw new Error(`${built} is missing: run npm run build first`);
  return new URL(`file://${built}`);
}
