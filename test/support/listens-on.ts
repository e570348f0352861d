// Which process holds the socket listening on a loopback port: a test that starts a server on a
// port it probed free (support/free-port.ts) counts it ready only when the answer comes from that
// server, not from another test file's process that bound the same port in between (files run at
// once). Linux /proc: the listening socket's inode in /proc/net/tcp or tcp6, among the process's
// file descriptors.

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Whether process `pid` holds the socket listening on 127.0.0.1:`port` (an IPv4 socket, or an IPv6
 * one at ::ffff:127.0.0.1 as the JVM opens). True when /proc cannot tell (not Linux, or another
 * user's process): then readiness is what it was before, an answer on the port.
 */
export function listensOn(pid: number, port: number): boolean {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const locals = [`0100007F:${hexPort}`, `0000000000000000FFFF00000100007F:${hexPort}`];
  let inode: string | undefined;
  try {
    inode = ['/proc/net/tcp', '/proc/net/tcp6']
      .flatMap((table) => readFileSync(table, 'utf8').split('\n').slice(1))
      .map((line) => line.trim().split(/\s+/))
      .find((fields) => locals.includes(fields[1]!) && fields[3] === '0A')?.[9];
  } catch {
    return true;
  }
  if (inode === undefined) return false;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EACCES';
  }
  return fds.some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`;
    } catch {
      return false;
    }
  });
}
