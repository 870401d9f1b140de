/**
 * prepareGate in the real CLIs (devDependencies claude, codex, pi) against the scripted model
 * server: a scripted model tries a force-push, a `gh pr merge`, a write into `.git/hooks/`, then a
 * plain `git push origin polly/t1`. The first three come back to the model as denials and leave no
 * trace; the plain push is decided `allow` by the gate (and, outside Codex's sandbox, runs).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { repoStateDir } from '../../../workers/sandbox/agent-state-dir.js';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../../scripts/scripted-model/server.js';
import { prepareGate } from '../../../gate/hooks/harness-gate.js';
import type { AgentEvent, AgentRunOptions } from '../../../workers/agents/agent-adapter.js';
import { createClaudeCodeAdapter } from '../../../workers/agents/claude-code-adapter.js';
import { createCodexAdapter } from '../../../workers/agents/codex-adapter.js';
import { createPiAdapter } from '../../../workers/agents/pi-adapter.js';
import { createTestRepo, git, type TestRepo } from '../../helpers/git-repo.js';

const HOOK = '#!/bin/sh\\nexit 0\\n';
const steps = (repoDir: string): string => `
          - run: "git push --force origin polly/t1"
          - run: "gh pr merge 1 --squash"
          - write: {path: "${repoDir}/.git/hooks/pre-commit", content: "${HOOK}"}
          - run: "git push origin polly/t1"
          - finish: "tried all four"`;

let server: ScriptedModelServer;
const repos: Record<string, TestRepo> = {};
const KEY = 'scripted-dummy-key-gate';

beforeAll(async () => {
  for (const h of ['claude', 'codex', 'pi']) {
    const repo = createTestRepo({ 'README.md': '# t\n' });
    repo.git(['worktree', 'add', '-q', '-b', 'polly/t1', '.worktrees/t1']);
    repos[h] = repo;
  }
  const sessions = Object.entries(repos)
    .map(([h, r]) => `  - name: gate-${h}\n    match: {task: gate-${h}}\n    turns:\n      - steps:${steps(r.dir)}\n`)
    .join('');
  server = await startScriptedModelServer({ script: parseModelScript(`sessions:\n${sessions}`) });
});
afterAll(async () => server?.close());

async function options(h: string, harness: 'claude-code' | 'codex' | 'pi', env: Record<string, string>): Promise<AgentRunOptions> {
  const repo = repos[h] as TestRepo;
  const wt = join(repo.dir, '.worktrees', 't1');
  // Outside the OS temp dir, as Polly keeps agent state (workers/sandbox/agent-state-dir.ts): codex
  // refuses to start its own sandbox helper when CODEX_HOME is under it, and these runs use it.
  const state = join(repoStateDir(repo.root), `gate-real-cli-${h}`);
  mkdirSync(state, { recursive: true });
  const gate = await prepareGate(harness, {
    role: 'implement',
    context: { repoRoot: repo.dir, worktree: wt, branch: 'polly/t1', defaultBranch: 'main', home: homedir() },
    stateDir: join(state, 'gate'),
  });
  return {
    cwd: wt,
    prompt: `[polly task=gate-${h} role=implement] push your work`,
    resumeSessionId: null,
    model: null,
    readOnly: false,
    gate,
    env: { ...env },
    stateDir: state,
    timeoutMs: 45_000,
  };
}

function results(events: AgentEvent[]): Array<{ isError: boolean; output: string }> {
  return events.filter((e): e is Extract<AgentEvent, { type: 'tool_result' }> => e.type === 'tool_result').map((e) => ({ isError: e.isError, output: e.output }));
}

function journal(h: string): Array<{ data: { rule: string; decision: string; input: string } }> {
  const file = join((repos[h] as TestRepo).dir, '.polly', 'gate-decisions.jsonl');
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

function expectNoTrace(h: string): void {
  const repo = repos[h] as TestRepo;
  expect(existsSync(join(repo.dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
  const rules = journal(h).map((e) => e.data.rule);
  expect(rules).toEqual(expect.arrayContaining(['blast_radius.force_push', 'blast_radius.merge', 'blast_radius.protected_path']));
  const push = journal(h).filter((e) => e.data.input === 'git push origin polly/t1');
  expect(push.at(-1)?.data.decision).toBe('allow');
}

describe('the gate inside the real harnesses', () => {
  it('Claude Code: denials reach the model as tool errors; the plain push runs', async () => {
    const adapter = createClaudeCodeAdapter({ command: 'claude', model: null, allow_root_sandbox: true });
    const r = await adapter.start(await options('claude', 'claude-code', { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'sk-scripted-dummy-key' })).result;
    expect(r.status, r.message + r.stderr).toBe('ok');
    const res = results(r.events);
    expect(res.slice(0, 3).map((x) => x.isError)).toEqual([true, true, true]);
    expect(res.slice(0, 3).every((x) => /Polly gate/.test(x.output))).toBe(true);
    expect(res[3]?.isError).toBe(false);
    expectNoTrace('claude');
    const repo = repos.claude as TestRepo;
    expect(git(repo.remote, ['rev-parse', 'refs/heads/polly/t1'])).toBe(repo.git(['rev-parse', 'polly/t1']));
  }, 90_000);

  it('Codex: the PreToolUse hook blocks the first three; the plain push runs', async () => {
    const adapter = createCodexAdapter({ command: 'codex', model: 'gpt-5.5', provider: { id: 'scripted', base_url: `${server.url}/v1`, env_key: 'POLLY_SCRIPTED_KEY' } });
    const r = await adapter.start(await options('codex', 'codex', { POLLY_SCRIPTED_KEY: KEY })).result;
    expect(r.status, r.message + r.stderr).toBe('ok');
    // codex 0.171's --json stream has no items for calls a hook blocked; its log names each block
    expect(r.stderr.match(/blocked by PreToolUse hook: Polly gate: denied/g)?.length, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/blast_radius\.force_push[\s\S]*blast_radius\.merge[\s\S]*blast_radius\.protected_path/);
    const res = results(r.events);
    expect(res.map((x) => x.output).join('\n')).toMatch(/polly\/t1 -> polly\/t1/);
    expectNoTrace('codex');
    const repo = repos.codex as TestRepo;
    expect(git(repo.remote, ['rev-parse', 'refs/heads/polly/t1'])).toBe(repo.git(['rev-parse', 'polly/t1']));
    // codex's own read-only git probes (core.hooksPath=/dev/null … status) pass the git shim
    expect(
      journal('codex')
        .filter((e) => e.data.decision === 'deny')
        .map((e) => e.data.rule),
    ).toEqual(['blast_radius.force_push', 'blast_radius.merge', 'blast_radius.protected_path']);
  }, 90_000);

  it('pi: the extension blocks the first three; the plain push runs', async () => {
    const adapter = createPiAdapter({
      command: 'pi',
      model: null,
      provider: null,
      customProvider: { baseUrl: `${server.url}/v1`, apiKeyEnv: 'POLLY_PI_KEY', models: ['scripted'] },
    });
    const r = await adapter.start(await options('pi', 'pi', { POLLY_PI_KEY: KEY })).result;
    expect(r.status, r.message + r.stderr).toBe('ok');
    const res = results(r.events);
    expect(
      res.slice(0, 3).map((x) => x.isError),
      JSON.stringify(res),
    ).toEqual([true, true, true]);
    expect(res[3]?.isError, JSON.stringify(res[3])).toBe(false);
    expectNoTrace('pi');
    const repo = repos.pi as TestRepo;
    expect(git(repo.remote, ['rev-parse', 'refs/heads/polly/t1'])).toBe(repo.git(['rev-parse', 'polly/t1']));
  }, 90_000);
});
