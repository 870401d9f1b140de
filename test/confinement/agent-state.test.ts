/**
 * A task's agent state is the only one mounted for it, wherever the XDG
 * variables point. With `XDG_STATE_HOME` outside HOME, Polly's state root (every task's and every
 * repository's agent sessions) used to be in view under the read-only root. Planted: another
 * task's claude session and another repository's codex rollout under the real state root, files
 * under an `XDG_CONFIG_HOME` and `XDG_DATA_HOME` outside HOME, and a listening socket in an
 * `XDG_RUNTIME_DIR` outside /run. A probe in the real agent-turn sandbox and the real command
 * sandbox reads each; positive control: the task's own state dir stays readable and writable.
 *
 * The XDG dirs live under the clone's git-ignored test-artifacts/ (the sandbox hides /tmp whole).
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollyStateRoot, repoStateDir } from '../../workers/sandbox/agent-state-dir.js';
import { agentTurnSandbox } from '../../workers/sandbox/agent-turn-sandbox.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { probeSandbox } from '../../workers/sandbox/sandbox.js';
import { git } from '../helpers/git-repo.js';
import { ROOT } from './attack-harness.js';
import { type Canary, closeCanaries, listenCanary, probeInSandbox } from './sandbox-probe.js';

const XDG = ['XDG_STATE_HOME', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_RUNTIME_DIR'] as const;

describe.skipIf(!probeSandbox().ok)('agent state with the XDG dirs outside HOME (issue 27 item 3)', () => {
  let root: string;
  let repo: string;
  let worktree: string;
  let home: string;
  let xdg: Record<(typeof XDG)[number], string>;
  let planted: string[];
  let bus: Canary;
  const saved: Partial<Record<string, string | undefined>> = {};

  const plant = (path: string, text: string): string => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    return path;
  };

  beforeAll(async () => {
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    root = realpathSync(mkdtempSync(join(ROOT, 'test-artifacts', 'agent-state-')));
    repo = join(root, 'repo');
    home = join(root, 'home');
    mkdirSync(repo, { recursive: true });
    mkdirSync(home, { recursive: true });
    git(repo, ['init', '-q', '-b', 'main']);
    writeFileSync(join(repo, 'README.md'), '# target\n');
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-q', '-m', 'initial']);
    worktree = join(repo, '.worktrees', 't1');
    git(repo, ['worktree', 'add', '-q', '-b', 't1', worktree]);
    xdg = { XDG_STATE_HOME: join(root, 'xdg-state'), XDG_CONFIG_HOME: join(root, 'xdg-config'), XDG_DATA_HOME: join(root, 'xdg-data'), XDG_RUNTIME_DIR: join(root, 'xdg-runtime') };
    for (const k of XDG) {
      saved[k] = process.env[k];
      process.env[k] = xdg[k];
    }
    const state = repoStateDir(repo);
    planted = [
      // Another task of this repository: its claude session (CLAUDE_CONFIG_DIR/projects/…).
      plant(join(state, 'agents', 't2', 'claude-code', 'claude', 'projects', 'p', 'session.jsonl'), '{"canary":"other task session"}\n'),
      // Another repository's codex rollout.
      plant(join(pollyStateRoot(), 'other-0123456789abcdef', 'agents', 't9', 'codex', 'sessions', '2026', 'rollout-1.jsonl'), '{"canary":"other repo rollout"}\n'),
      plant(join(xdg.XDG_CONFIG_HOME, 'some-tool', 'token'), 'canary config token\n'),
      plant(join(xdg.XDG_DATA_HOME, 'some-tool', 'history'), 'canary data history\n'),
    ];
    mkdirSync(xdg.XDG_RUNTIME_DIR, { recursive: true });
    bus = await listenCanary(join(xdg.XDG_RUNTIME_DIR, 'bus'));
  });

  afterAll(async () => {
    for (const k of XDG) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await closeCanaries([bus]);
    rmSync(root, { recursive: true, force: true });
  });

  it('a turn and a check read none of the other state, reach no runtime socket, and keep their own state', async () => {
    const own = join(repoStateDir(repo), 'agents', 't1', 'pi');
    const ownFile = plant(join(own, 'pi', 'sessions', 'mine.jsonl'), '{"mine":true}\n');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    const turn = await agentTurnSandbox({
      repoRoot: repo,
      cwd: worktree,
      readOnly: false,
      agentStateDir: own,
      gateDir: join(repo, '.polly', 'workers', 't1', 'gate'),
      env: {},
      configuredUrls: [],
      allowUnconfined: false,
      realHome: home,
    });
    const check = await commandSandbox({ repoRoot: repo, worktree, network: false, allowUnconfined: false, realHome: home, baseEnv: { ...env, ...xdg } });
    expect(turn.sandbox).not.toBeNull();
    expect(check.sandbox).not.toBeNull();
    const fromTurn = await probeInSandbox(turn.sandbox!, env, [bus.path], [...planted, ownFile]);
    const checkFile = plant(join(check.env.HOME!, 'mine.txt'), 'mine too\n');
    const fromCheck = await probeInSandbox(check.sandbox!, check.env, [bus.path], [...planted, checkFile]);
    for (const seen of [fromTurn, fromCheck]) {
      for (const p of planted) expect(seen.reads[p], p).toMatch(/^error: /);
      expect(seen.sockets[bus.path]).not.toBe('connected');
    }
    expect(bus.connections).toBe(0);
    expect(fromTurn.reads[ownFile]).toBe('{"mine":true}\n');
    // The check's own private HOME (under the hidden state root too) is bound back.
    expect(fromCheck.reads[checkFile]).toBe('mine too\n');
  }, 60_000);
});
