/**
 * A probe run inside a real Polly sandbox (test/confinement/host-sockets.test.ts,
 * agent-state.test.ts): it tries to connect to unix socket addresses and to read files, and prints
 * what it got; and canary listeners on the host that count every connection (the ground truth).
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import type { AgentSandbox } from '../../workers/agents/agent-adapter.js';
import { confineCommand } from '../../workers/sandbox/sandbox.js';

/** A listening unix socket on the host and how many connections it accepted. */
export interface Canary {
  path: string;
  server: Server;
  connections: number;
}

/** Listen on `path` (a file path, or `\0name` for an abstract socket), counting connections. */
export async function listenCanary(path: string): Promise<Canary> {
  const c: Canary = { path, server: createServer(), connections: 0 };
  c.server.on('connection', (s) => {
    c.connections += 1;
    s.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    c.server.once('error', reject);
    c.server.listen(path, resolve);
  });
  return c;
}

/** Close every canary. */
export async function closeCanaries(canaries: readonly (Canary | undefined)[]): Promise<void> {
  for (const c of canaries) if (c) await new Promise<void>((r) => c.server.close(() => r()));
}

const PROBE = `
const net = require('node:net'); const fs = require('node:fs');
const [addresses, files] = JSON.parse(process.argv[1]);
const sockets = {}; const reads = {};
for (const f of files) { try { reads[f] = fs.readFileSync(f, 'utf8'); } catch (e) { reads[f] = 'error: ' + e.code; } }
Promise.all(addresses.map((a) => new Promise((done) => {
  const s = net.connect(a);
  const t = setTimeout(() => { sockets[a] = 'timeout'; s.destroy(); done(); }, 3000);
  s.on('connect', () => { clearTimeout(t); sockets[a] = 'connected'; s.destroy(); done(); });
  s.on('error', (e) => { clearTimeout(t); sockets[a] = e.code || e.message; done(); });
}))).then(() => process.stdout.write(JSON.stringify({ sockets, reads })));`;

/** What the probe saw: per address `connected` or the error code; per file its text or `error: <code>`. */
export interface ProbeResult {
  sockets: Record<string, string>;
  reads: Record<string, string>;
}

/** Run the probe (node, Polly's own) inside `sandbox` with `env`. Rejects when it prints no result. */
export function probeInSandbox(sandbox: AgentSandbox, env: Record<string, string>, addresses: readonly string[], files: readonly string[] = []): Promise<ProbeResult> {
  const c = confineCommand(sandbox.bwrap, sandbox.spec, process.execPath, ['-e', PROBE, JSON.stringify([addresses, files])], env);
  return new Promise((resolve, reject) => {
    const child = spawn(c.command, c.args, { env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => {
      c.dispose();
      try {
        resolve(JSON.parse(stdout) as ProbeResult);
      } catch {
        reject(new Error(`the sandboxed probe exited ${code} without a result: ${stderr || stdout}`));
      }
    });
  });
}
