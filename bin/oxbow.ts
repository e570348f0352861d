#!/usr/bin/env node
// The `oxbow` executable (package.json "bin": dist/bin/oxbow.js). Thin on purpose: everything is in
// cli.ts, which tests can import.

import { main } from './cli.js';

main(process.argv.slice(2), process.env).catch((error: unknown) => {
  process.stderr.write(`oxbow: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
