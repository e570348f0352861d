// Test suites that live beside the repository rather than in it: RisingWave's e2e conformance
// files and its Nexmark SQL, in ../shared next to the checkout. A clone has no ../shared, so a
// test file that reads one asks here first. When the folder is missing, the file's tests are
// skipped with one line naming the suite and the path; with CI=true a missing suite fails the
// file instead (CI runs every suite, and a silent skip would hide that it did not).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** The repository's root (this file is test/support/external-suites.ts). */
const ROOT = resolve(import.meta.dirname, '..', '..');

/**
 * The absolute path of the suite at `path` (relative to the repository's root), or undefined when
 * the folder is missing and CI is not 'true'. Throws, naming the path, when it is missing under CI=true.
 */
export function externalSuite(name: string, path: string): string | undefined {
  const absolute = resolve(ROOT, path);
  if (existsSync(absolute)) return absolute;
  if (process.env['CI'] === 'true') throw new Error(`${name}: ${absolute} is missing; CI=true runs every suite, so it must be there`);
  console.warn(`skipped: ${name} (${absolute} is missing)`);
  return undefined;
}
