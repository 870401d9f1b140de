/**
 * No unix socket outside a worker's own directories is reachable from a sandbox.
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
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentTurnSandbox } from '../../workers/sandbox/agent-turn-sandbox.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { probeSandbox } from '../../workers/sandbox/sandbox.js';
import { git } from '../helpers/git-repo.js';
import { ROOT } from './attack-harness.js';
import { type Canary, closeCanaries, listenCanary as listen, probeInSandbox } from './sandbox-probe.js';

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
    await closeCanaries([...canaries, own, gateSock]);
    rmSync(root, { recursive: true, force: true });
  });

  it('a check and an agent turn reach none of the canaries; their own socket and the gate socket stay reachable', async () => {
    const addresses = [...canaries.map((c) => c.path), own.path, gateSock.path];
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const check = await commandSandbox({
      repoRoot: repo,
      worktree,
      network: false,
      allowUnconfined: false,
      realHome: home,
      stateDir: join(root, 'state', 'commands', 't1'),
      baseEnv: env,
    });
    const turn = await agentTurnSandbox({
      repoRoot: repo,
      cwd: worktree,
      readOnly: false,
      agentStateDir: join(root, 'state', 'agents', 't1', 'pi'),
      gateDir: join(repo, '.polly', 'workers', 't1', 'gate'),
      env: {},
      configuredUrls: [],
      allowUnconfined: false,
      realHome: home,
    });
    expect(check.sandbox).not.toBeNull();
    expect(turn.sandbox).not.toBeNull();
    const visible = join(sibling, 'visible.txt');
    const fromCheck = await probeInSandbox(check.sandbox!, check.env, addresses, [visible]);
    const fromTurn = await probeInSandbox(turn.sandbox!, env, addresses, [visible]);

    // Ground truth first: not one connection reached a canary.
    expect(Object.fromEntries(canaries.map((c) => [c.path, c.connections]))).toEqual(Object.fromEntries(canaries.map((c) => [c.path, 0])));
    for (const seen of [fromCheck, fromTurn]) {
      for (const c of canaries) expect(seen.sockets[c.path], `${c.path}: ${JSON.stringify(seen.sockets)}`).not.toBe('connected');
      expect(seen.sockets[own.path]).toBe('connected');
      // The sibling directory is in view: its socket was covered, not the directory hidden.
      expect(seen.reads[visible]).toBe('sibling dir is in view');
    }
    expect(own.connections).toBe(2);
    // Only the agent turn has the gate's socket (a check runs no agent).
    expect(fromTurn.sockets[gateSock.path]).toBe('connected');
    expect(fromCheck.sockets[gateSock.path]).not.toBe('connected');
    expect(gateSock.connections).toBe(1);
  }, 60_000);
});
