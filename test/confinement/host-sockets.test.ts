/**
 * Issue 27 item 2: no unix socket outside a worker's own directories is reachable from a sandbox.
 * Canary listeners on the host — in /var/tmp, in the repository's git dir and main checkout, in a
 * sibling directory of the repository, in a toolchain dir bound from HOME, and an abstract one —
 * count every connection; a probe inside the real command sandbox (acceptance checks) and the real
 * agent-turn sandbox tries each. Ground truth: the listeners' counts. Positive controls: a socket in
 * the worker's own worktree and the gate's socket stay reachable, and the sibling directory stays
 * readable (the socket is covered, not the directory hidden).
 *
 * The setting lives under the clone's git-ignored test-artifacts/ rather than the OS temp dir: the
 * sandbox hides /tmp whole, which would make a sibling directory there vanish for another reason.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSandbox } from '../../workers/agents/agent-adapter.js';
import { agentTurnSandbox } from '../../workers/sandbox/agent-turn-sandbox.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { confineCommand, probeSandbox } from '../../workers/sandbox/sandbox.js';
import { git } from '../helpers/git-repo.js';
import { ROOT } from './attack-harness.js';

interface Canary {
  path: string;
  server: Server;
  connections: number;
}

async function listen(path: string): Promise<Canary> {
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

/** Inside the sandbox: try every address, print `{address: 'connected' | error code}`, and read `readable`. */
const PROBE = `
const net = require('node:net'); const fs = require('node:fs');
const [addresses, readable] = JSON.parse(process.argv[1]);
const out = {};
Promise.all(addresses.map((a) => new Promise((done) => {
  const s = net.connect(a);
  const t = setTimeout(() => { out[a] = 'timeout'; s.destroy(); done(); }, 3000);
  s.on('connect', () => { clearTimeout(t); out[a] = 'connected'; s.destroy(); done(); });
  s.on('error', (e) => { clearTimeout(t); out[a] = e.code || e.message; done(); });
}))).then(() => {
  let read = null; try { read = fs.readFileSync(readable, 'utf8'); } catch (e) { read = e.code; }
  process.stdout.write(JSON.stringify({ out, read }));
});`;

function runIn(sandbox: AgentSandbox, env: Record<string, string>, addresses: string[], readable: string): Promise<{ out: Record<string, string>; read: string }> {
  const c = confineCommand(sandbox.bwrap, sandbox.spec, process.execPath, ['-e', PROBE, JSON.stringify([addresses, readable])], env);
  return new Promise((resolve, reject) => {
    const child = spawn(c.command, c.args, { env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => {
      c.dispose();
      try {
        resolve(JSON.parse(stdout));
      } catch {
        reject(new Error(`the probe exited ${code}: ${stderr || stdout}`));
      }
    });
  });
}

describe.skipIf(!probeSandbox().ok)('host sockets from inside the sandbox (issue 27 item 2)', () => {
  let root: string;
  let repo: string;
  let worktree: string;
  let home: string;
  let sibling: string;
  const canaries: Canary[] = [];
  let own: Canary;
  let gateSock: Canary;
  const abstract = `\0polly-canary-${process.pid}`;

  beforeAll(async () => {
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    root = realpathSync(mkdtempSync(join(ROOT, 'test-artifacts', 'sockets-')));
    repo = join(root, 'repo');
    home = join(root, 'home');
    sibling = join(root, 'sibling');
    for (const d of [join(repo, 'sub'), join(home, '.local', 'bin'), sibling]) mkdirSync(d, { recursive: true });
    git(repo, ['init', '-q', '-b', 'main']);
    writeFileSync(join(repo, 'README.md'), '# target\n');
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-q', '-m', 'initial']);
    worktree = join(repo, '.worktrees', 't1');
    git(repo, ['worktree', 'add', '-q', '-b', 't1', worktree]);
    writeFileSync(join(sibling, 'visible.txt'), 'sibling dir is in view');
    const places = [
      join('/var/tmp', `polly-canary-${process.pid}.sock`),
      join(repo, '.git', 'canary.sock'),
      join(repo, 'sub', 'canary.sock'),
      join(sibling, 'canary.sock'),
      // ~/.local/bin is a toolchain dir the sandbox binds back from HOME (workers/sandbox/home-toolchains.ts).
      join(home, '.local', 'bin', 'canary.sock'),
      abstract,
    ];
    for (const p of places) canaries.push(await listen(p));
    own = await listen(join(worktree, 'own.sock'));
    mkdirSync(join(repo, '.polly', 'workers', 't1', 'gate'), { recursive: true });
    gateSock = await listen(join(repo, '.polly', 'workers', 't1', 'gate', 'gate.sock'));
  });

  afterAll(async () => {
    for (const c of [...canaries, own, gateSock]) if (c) await new Promise<void>((r) => c.server.close(() => r()));
    rmSync(root, { recursive: true, force: true });
  });

  it('a check and an agent turn reach none of the canaries; their own socket and the gate socket stay reachable', async () => {
    const addresses = [...canaries.map((c) => c.path), own.path, gateSock.path];
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const check = commandSandbox({
      repoRoot: repo,
      worktree,
      network: false,
      allowUnconfined: false,
      realHome: home,
      stateDir: join(root, 'state', 'commands', 't1'),
      baseEnv: env,
    });
    const turn = agentTurnSandbox({
      repoRoot: repo,
      cwd: worktree,
      role: 'implement',
      agentStateDir: join(root, 'state', 'agents', 't1', 'pi'),
      gateDir: join(repo, '.polly', 'workers', 't1', 'gate'),
      env: {},
      configuredUrls: [],
      allowUnconfined: false,
      realHome: home,
    });
    expect(check.sandbox).not.toBeNull();
    expect(turn.sandbox).not.toBeNull();
    const fromCheck = await runIn(check.sandbox!, check.env, addresses, join(sibling, 'visible.txt'));
    const fromTurn = await runIn(turn.sandbox!, env, addresses, join(sibling, 'visible.txt'));

    // Ground truth first: not one connection reached a canary.
    expect(Object.fromEntries(canaries.map((c) => [c.path, c.connections]))).toEqual(Object.fromEntries(canaries.map((c) => [c.path, 0])));
    for (const seen of [fromCheck, fromTurn]) {
      for (const c of canaries) expect(seen.out[c.path], `${c.path}: ${JSON.stringify(seen.out)}`).not.toBe('connected');
      expect(seen.out[own.path]).toBe('connected');
      // The sibling directory is in view: its socket was covered, not the directory hidden.
      expect(seen.read).toBe('sibling dir is in view');
    }
    expect(own.connections).toBe(2);
    // Only the agent turn has the gate's socket (a check runs no agent).
    expect(fromTurn.out[gateSock.path]).toBe('connected');
    expect(fromCheck.out[gateSock.path]).not.toBe('connected');
    expect(gateSock.connections).toBe(1);
  }, 60_000);
});
