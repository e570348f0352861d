// The metrics port of a running oxbow server, read over plain HTTP: where the port is (the line
// `bin/cli.ts` prints on stderr), and a GET of one path with its status, content type and body.
// The operator's view, system-table and dashboard suites share it.

import { request } from 'node:http';
import { expect } from 'vitest';
import type { OxbowServer } from './server.js';

export interface HttpAnswer {
  readonly status: number;
  readonly type: string;
  readonly body: string;
}

/** The port the server's metrics listener bound (`--metrics-port 0` picks a free one). */
export function metricsPortOf(server: OxbowServer): number {
  const match = /metrics at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(server.stderr());
  expect(match, `the server printed no metrics address; stderr:\n${server.stderr()}`).not.toBeNull();
  return Number(match![1]);
}

/** GET http://127.0.0.1:PORT/PATH, the whole body as UTF-8 text. */
export function httpGet(port: number, path: string): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']), body }));
    })
      .on('error', reject)
      .end();
  });
}
