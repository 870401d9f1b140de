/**
 * The first process inside a sandbox with bridged endpoints (never imported; run by bwrap):
 *
 * `node sandbox-init.js '<json: InsideListener[]>' <command> [args…]`
 *
 * It listens on each `host:port` of the sandbox's own loopback and pipes every connection to the
 * listener's unix socket (opened outside by net-bridge.ts), then runs the command with the same
 * stdio, forwards SIGTERM/SIGINT/SIGHUP to it, and exits with its exit code (128 + signal number
 * when it was killed). A `::1` listener that cannot bind (IPv6 off) is skipped; any other failed
 * listener ends the init with exit 125 before the command starts.
 */
import { spawn } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { constants } from 'node:os';
import type { InsideListener } from './net-bridge.js';

async function listen(l: InsideListener): Promise<Server | null> {
  const server = createServer((client) => {
    const upstream = connect(l.socket);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => (l.host === '::1' ? resolve(null) : reject(error)));
    server.listen(l.port, l.host, () => resolve(server));
  });
}

const [spec, command, ...args] = process.argv.slice(2);
if (!spec || !command) {
  process.stderr.write('usage: sandbox-init.js <listeners json> <command> [args…]\n');
  process.exit(125);
}
let servers: (Server | null)[];
try {
  servers = await Promise.all((JSON.parse(spec) as InsideListener[]).map(listen));
} catch (error) {
  process.stderr.write(`polly sandbox: cannot open the model endpoint bridge inside the sandbox: ${(error as Error).message}\n`);
  process.exit(125);
}
const child = spawn(command, args, { stdio: 'inherit' });
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => child.kill(sig));
child.on('error', (error: NodeJS.ErrnoException) => {
  process.stderr.write(`polly sandbox: cannot start ${command}: ${error.message}\n`);
  process.exit(error.code === 'ENOENT' ? 127 : 126);
});
child.on('exit', (code, signal) => {
  for (const s of servers) s?.close();
  process.exit(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
});
