/**
 * The gate's enforcement artifacts, run as the harnesses run them: the Claude Code and Codex hooks
 * spawned with documented PreToolUse payloads on stdin, the pi extension file loaded and called
 * with tool_call events, the git/gh shims run against a real repo with a bare remote, and the
 * `polly gate decide|log` CLI. Needs `npm run build` (dist/) first, as `npm test` does.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { decide, resolveAsk } from '../../../gate/decide.js';
import { decisionEntry } from '../../../gate/decision-log.js';
import { prepareGate, type PreparedGate } from '../../../gate/hooks/harness-gate.js';
import { SHIM_CWD, SHIM_FAST_PATH_ARGV } from '../../../gate/hooks/shim-fast-path.js';
import { DEFAULT_GATE_POLICY } from '../../../gate/policy-types.js';
import type { GateContext } from '../../../gate/types.js';
import { createTestRepo, git, gitTestEnv, type TestRepo } from '../../helpers/git-repo.js';

const dist = fileURLToPath(new URL('../../../dist/', import.meta.url));
const hookPath = (name: string): string => join(dist, 'gate', 'hooks', `${name}.js`);

let repo: TestRepo;
let wt: string;
let context: GateContext;
let claude: PreparedGate;
let codex: PreparedGate;
let pi: PreparedGate;
let stateRoot: string;
const journal = (): string => join(repo.dir, '.polly', 'gate-decisions.jsonl');

beforeAll(async () => {
  if (!existsSync(hookPath('claude-code-hook'))) throw new Error('dist/gate is not built: run "npm run build" before these tests');
  repo = createTestRepo({ 'README.md': '# t\n', 'src/a.ts': 'export const a = 1;\n' });
  mkdirSync(join(repo.dir, '.polly'), { recursive: true });
  repo.git(['worktree', 'add', '-q', '-b', 'polly/t1', '.worktrees/t1']);
  wt = join(repo.dir, '.worktrees', 't1');
  context = { repoRoot: repo.dir, worktree: wt, branch: 'polly/t1', defaultBranch: 'main', home: homedir() };
  stateRoot = mkdtempSync(join(tmpdir(), 'polly-gate-state-'));
  claude = await prepareGate('claude-code', { role: 'implement', context, stateDir: join(stateRoot, 'claude') });
  codex = await prepareGate('codex', { role: 'implement', context, stateDir: join(stateRoot, 'codex') });
  pi = await prepareGate('pi', { role: 'implement', context, stateDir: join(stateRoot, 'pi') });
});

/** Run a hook command exactly as written in the harness config, with `payload` on stdin. */
function runHook(command: string, payload: string, env: NodeJS.ProcessEnv = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync('/bin/sh', ['-c', command], { input: payload, encoding: 'utf8', env: { ...process.env, ...env }, cwd: wt });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function claudeHookCommand(): string {
  const settings = JSON.parse(readFileSync(claude.args[1] as string, 'utf8')) as {
    hooks: { PreToolUse: Array<{ matcher: string; hooks: Array<{ type: string; command: string }> }> };
  };
  expect(settings.hooks.PreToolUse[0]?.matcher).toBe('*');
  return settings.hooks.PreToolUse[0]?.hooks[0]?.command as string;
}

function codexHookCommand(): string {
  const inline = codex.args[codex.args.indexOf('-c') + 1] as string;
  const m = /command=("(?:[^"\\]|\\.)*")/.exec(inline);
  return JSON.parse(m?.[1] as string) as string;
}

const claudePayload = (tool_name: string, tool_input: Record<string, unknown>): string =>
  JSON.stringify({
    session_id: 's1',
    transcript_path: '/tmp/t.jsonl',
    cwd: wt,
    permission_mode: 'bypassPermissions',
    hook_event_name: 'PreToolUse',
    tool_name,
    tool_input,
    tool_use_id: 'toolu_1',
  });

describe('prepareGate', () => {
  it('writes every file into the state dir, none into the worktree, and returns args and env per harness', () => {
    for (const g of [claude, codex, pi]) {
      for (const f of g.files) expect(f.startsWith(stateRoot)).toBe(true);
      expect(g.env.PATH?.split(':')[0]).toMatch(/\/bin$/);
      expect(existsSync(join(g.env.PATH?.split(':')[0] as string, 'git'))).toBe(true);
      expect(existsSync(join(g.env.PATH?.split(':')[0] as string, 'gh'))).toBe(true);
    }
    expect(claude.args[0]).toBe('--settings');
    expect(pi.args.slice(0, 2)).toEqual(['--no-extensions', '-e']);
    expect(codex.args).toContain('--dangerously-bypass-hook-trust');
    expect(codex.args).toContain('sandbox_mode="workspace-write"');
    for (const d of ['.claude', '.codex', '.pi']) expect(existsSync(join(wt, d))).toBe(false);
    const cfg = JSON.parse(readFileSync(claude.env.POLLY_GATE_CONFIG as string, 'utf8')) as { context: GateContext };
    expect(cfg.context.protectedDirs).toContain(join(stateRoot, 'claude'));
  });

  it('protects its own state dir from the agent', () => {
    const cfg = JSON.parse(readFileSync(claude.env.POLLY_GATE_CONFIG as string, 'utf8')) as { context: GateContext };
    const d = decide({ type: 'tool', tool: 'bash', input: `echo '{}' > ${claude.env.POLLY_GATE_CONFIG}`, cwd: wt, role: 'implement' }, DEFAULT_CONFIG.policies, cfg.context);
    expect(d).toMatchObject({ decision: 'deny', rule: 'blast_radius.protected_path' });
  });
});

describe('Claude Code PreToolUse hook', () => {
  it('denies a force-push with the documented hookSpecificOutput and exit 0, and journals it', () => {
    const before = existsSync(journal()) ? readFileSync(journal(), 'utf8').split('\n').length : 0;
    const r = runHook(claudeHookCommand(), claudePayload('Bash', { command: 'git push --force origin polly/t1', description: 'push' }));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { hookSpecificOutput: Record<string, string> };
    expect(Object.keys(out)).toEqual(['hookSpecificOutput']);
    expect(out.hookSpecificOutput.hookEventName).toBe('PreToolUse');
    expect(out.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(out.hookSpecificOutput.permissionDecisionReason).toMatch(/blast_radius\.force_push/);
    const lines = readFileSync(journal(), 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThan(before - 1);
    const last = JSON.parse(lines[lines.length - 1] as string) as { kind: string; data: Record<string, unknown> };
    expect(last).toMatchObject({ kind: 'gate.decision', data: { harness: 'claude-code', decision: 'deny', rule: 'blast_radius.force_push' } });
  });

  it('allows a plain command with exit 0 and no output', () => {
    const r = runHook(claudeHookCommand(), claudePayload('Bash', { command: 'git status && git push origin polly/t1' }));
    expect(r).toMatchObject({ code: 0, stdout: '' });
  });

  it('maps Write/Edit/MultiEdit/NotebookEdit to writes: .git/hooks and .claude are denied, src is allowed', () => {
    const cmd = claudeHookCommand();
    for (const [tool, input] of [
      ['Write', { file_path: join(wt, '.git', 'hooks', 'pre-commit'), content: 'x' }],
      ['Edit', { file_path: join(wt, '.claude', 'settings.json'), old_string: 'a', new_string: 'b' }],
      ['MultiEdit', { file_path: join(repo.dir, '.git', 'hooks', 'pre-push'), edits: [] }],
      ['NotebookEdit', { notebook_path: join(repo.dir, 'src', 'n.ipynb'), new_source: '' }],
    ] as const) {
      const r = runHook(cmd, claudePayload(tool, input));
      expect(r.stdout, `${tool} ${JSON.stringify(input)} ${r.stderr}`).toMatch(/"permissionDecision":"deny"/);
    }
    expect(runHook(cmd, claudePayload('Write', { file_path: join(wt, 'src', 'b.ts'), content: 'x' })).stdout).toBe('');
    expect(runHook(cmd, claudePayload('Read', { file_path: join(repo.dir, '.git', 'config') })).stdout).toBe('');
  });

  it('denies unknown tools (MCP) and has no escape hatch in the environment', () => {
    const cmd = claudeHookCommand();
    expect(JSON.parse(runHook(cmd, claudePayload('mcp__x__merge', {})).stdout).hookSpecificOutput.permissionDecision).toBe('deny');
    const r = runHook(cmd, claudePayload('Bash', { command: 'POLLY_GATE=off git push -f origin polly/t1' }), { POLLY_GATE: 'off', POLLY_GATE_CONFIG: '/nonexistent' });
    expect(JSON.parse(r.stdout).hookSpecificOutput.permissionDecision).toBe('deny');
  });

  it('fails closed with exit 2 and a reason on stderr: malformed input, a missing config', () => {
    const bad = runHook(claudeHookCommand(), '{"tool_name": "Bash", ');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not JSON/);
    expect(bad.stdout).toBe('');
    const missing = runHook(`node ${hookPath('claude-code-hook')} /nonexistent/gate-config.json`, claudePayload('Bash', { command: 'ls' }));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read the gate config/);
  });
});

describe('Codex PreToolUse hook', () => {
  it('denies with exactly {hookSpecificOutput:{hookEventName, permissionDecision, permissionDecisionReason}}', () => {
    const payload = JSON.stringify({
      session_id: 's',
      turn_id: 't',
      cwd: wt,
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_use_id: 'c1',
      tool_input: { command: 'gh pr merge 12 --squash' },
    });
    const r = runHook(codexHookCommand(), payload);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { hookSpecificOutput: { hookEventName: string; permissionDecision: string; permissionDecisionReason: string } };
    expect(Object.keys(out)).toEqual(['hookSpecificOutput']);
    expect(Object.keys(out.hookSpecificOutput).sort()).toEqual(['hookEventName', 'permissionDecision', 'permissionDecisionReason']);
    expect(out.hookSpecificOutput.permissionDecision).toBe('deny');
    expect(out.hookSpecificOutput.permissionDecisionReason.length).toBeGreaterThan(0);
  });

  it('checks every file of an apply_patch and shell argv arrays', () => {
    const cmd = codexHookCommand();
    const patch = (path: string): string =>
      JSON.stringify({
        cwd: wt,
        hook_event_name: 'PreToolUse',
        tool_name: 'apply_patch',
        tool_input: { command: `*** Begin Patch\n*** Update File: src/a.ts\n@@\n-1\n+2\n*** Add File: ${path}\n+x\n*** End Patch\n` },
      });
    expect(JSON.parse(runHook(cmd, patch('.git/hooks/pre-commit')).stdout).hookSpecificOutput.permissionDecision).toBe('deny');
    expect(runHook(cmd, patch('src/new.ts'))).toMatchObject({ code: 0, stdout: '' });
    const argv = JSON.stringify({ cwd: wt, hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: ['bash', '-lc', 'git push -f'] } });
    expect(JSON.parse(runHook(cmd, argv).stdout).hookSpecificOutput.permissionDecisionReason).toMatch(/force_push/);
  });

  it('fails closed with exit 2 and a reason on stderr', () => {
    const r = runHook(codexHookCommand(), 'not json');
    expect(r.code).toBe(2);
    expect(r.stderr.length).toBeGreaterThan(0);
  });
});

describe('pi extension', () => {
  it('the generated extension file blocks denied tool calls with {block: true, reason} and allows others', async () => {
    const file = pi.args[2] as string;
    const mod = (await import(pathToFileURL(file).href)) as { default: (api: { on: (e: string, h: (ev: unknown, ctx: unknown) => unknown) => void }) => void };
    const handlers: Array<(ev: unknown, ctx: unknown) => unknown> = [];
    mod.default({ on: (e, h) => (e === 'tool_call' ? handlers.push(h) : undefined) });
    expect(handlers).toHaveLength(1);
    const h = handlers[0] as (ev: unknown, ctx: unknown) => unknown;
    expect(await h({ toolName: 'bash', toolCallId: '1', input: { command: 'git push -f origin polly/t1' } }, { cwd: wt })).toMatchObject({
      block: true,
      reason: expect.stringMatching(/force_push/),
    });
    expect(await h({ toolName: 'write', toolCallId: '2', input: { path: '.git/hooks/pre-commit', content: 'x' } }, { cwd: wt })).toMatchObject({ block: true });
    expect(await h({ toolName: 'bash', toolCallId: '3', input: { command: 'ls -la' } }, { cwd: wt })).toBeUndefined();
    expect(await h({ toolName: 'mystery', toolCallId: '4', input: {} }, { cwd: wt })).toMatchObject({ block: true });
  });
});

describe('git and gh shims', () => {
  const shim = (g: PreparedGate, args: string[], cwd = wt): { code: number | null; stderr: string; stdout: string } => {
    const r = spawnSync(join(g.env.PATH?.split(':')[0] as string, args[0] as string), args.slice(1), { cwd, encoding: 'utf8', env: { ...gitTestEnv(), PATH: g.env.PATH } });
    return { code: r.status, stderr: r.stderr, stdout: r.stdout };
  };

  it('deny a force-push and a merge before anything runs; a plain push of the task branch goes through to the real git', () => {
    writeFileSync(join(wt, 'x.txt'), 'x\n');
    git(wt, ['add', 'x.txt']);
    git(wt, ['commit', '-q', '-m', 'x']);
    const forced = shim(claude, ['git', 'push', '-f', 'origin', 'polly/t1']);
    expect(forced.code).toBe(1);
    expect(forced.stderr).toMatch(/polly gate: denied \(blast_radius\.force_push\)/);
    expect(() => git(repo.remote, ['rev-parse', '--verify', 'refs/heads/polly/t1'])).toThrow();
    const merge = shim(claude, ['gh', 'pr', 'merge', '1', '--squash']);
    expect(merge.code).toBe(1);
    expect(merge.stderr).toMatch(/blast_radius\.merge/);
    const main = shim(claude, ['git', 'push', 'origin', 'HEAD:main']);
    expect(main.code).toBe(1);
    const plain = shim(claude, ['git', 'push', '-q', 'origin', 'polly/t1']);
    expect(plain).toMatchObject({ code: 0 });
    expect(git(repo.remote, ['rev-parse', 'refs/heads/polly/t1'])).toBe(git(wt, ['rev-parse', 'HEAD']));
    expect(shim(claude, ['git', 'rev-parse', '--abbrev-ref', 'HEAD']).stdout.trim()).toBe('polly/t1');
  });
  it("the agents' read-only start-up calls the gate allowed when it was prepared run without Node and are journaled as the Node shim journals them; any other spelling, cwd or context goes to the Node shim", () => {
    const configFile = join(stateRoot, 'claude', 'gate-config.json');
    const startup = ['git', '--no-optional-locks', 'status', '--short'];
    // Without its config the Node shim fails closed: a call that still runs took the fast path.
    renameSync(configFile, `${configFile}.away`);
    try {
      const before = readFileSync(journal(), 'utf8').trim().split('\n').length;
      const fast = shim(claude, startup);
      expect(fast, fast.stderr).toMatchObject({ code: 0, stderr: '' });
      expect(fast.stdout.trim()).toBe(git(wt, startup.slice(1)));
      const lines = readFileSync(journal(), 'utf8').trim().split('\n');
      expect(lines.length).toBe(before + 1);
      const entry = JSON.parse(lines.at(-1)!) as { at: string; kind: string; data: Record<string, unknown> };
      const request = { type: 'tool', role: 'implement', tool: 'bash', input: 'git --no-optional-locks status --short', cwd: realpathSync(wt), harness: 'shim' } as const;
      expect(entry).toEqual({
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/),
        kind: 'gate.decision',
        data: decisionEntry(request, decide(request, DEFAULT_GATE_POLICY, context)),
      });
      expect(Math.abs(Date.parse(entry.at) - Date.now())).toBeLessThan(60_000);
      // The worker's PATH cannot write into the journal line: `date` is Polly's, by absolute path.
      const fakeBin = mkdtempSync(join(tmpdir(), 'polly-fake-date-'));
      writeFileSync(join(fakeBin, 'date'), '#!/bin/sh\necho \'2026-01-01T00:00:00.000Z","forged":"yes\'\n', { mode: 0o755 });
      const withFakeDate = spawnSync(join(claude.env.PATH!.split(':')[0]!, 'git'), startup.slice(1), {
        cwd: wt,
        encoding: 'utf8',
        env: { ...gitTestEnv(), PATH: `${fakeBin}:${claude.env.PATH}` },
      });
      expect(withFakeDate.status).toBe(0);
      expect(readFileSync(journal(), 'utf8')).not.toContain('forged');
      // A listed Codex start-up call too (a quoted regexp word).
      const codexStartup = SHIM_FAST_PATH_ARGV.find((a) => a.includes('--get-regexp'))!;
      const codexCall = shim(claude, ['git', ...codexStartup]); // 10 words
      expect(codexCall).toMatchObject({ code: 0, stderr: '' });
      expect(codexCall.stdout).toContain(`remote.origin.url\n${repo.remote}`);
      expect(JSON.parse(readFileSync(journal(), 'utf8').trim().split('\n').at(-1)!).data.input).toBe(`git ${codexStartup.slice(0, -1).join(' ')} '^(remote\\.|url\\.)'`);
      // Claude Code's ls-files call names the cwd with -C: the fast path for this worktree only.
      const lsFiles = SHIM_FAST_PATH_ARGV.find((a) => a.includes('ls-files'))!.map((w) => (w === SHIM_CWD ? realpathSync(wt) : w));
      expect(shim(claude, ['git', ...lsFiles])).toMatchObject({ code: 1, stderr: expect.stringMatching(/did not match any file/) });
      expect(JSON.parse(readFileSync(journal(), 'utf8').trim().split('\n').at(-1)!).data.input).toContain(`-C ${realpathSync(wt)} ls-files`);
      // Spellings that could run a program or act elsewhere, one more word, another cwd: the Node shim (failing closed here).
      for (const [args, cwd] of [
        [['git', '-c', 'core.fsmonitor=touch /tmp/polly-fsmonitor-ran', '--no-optional-locks', 'status', '--short'], wt],
        [['git', '--exec-path=/tmp', '--no-optional-locks', 'status', '--short'], wt],
        [['git', '-C', repo.dir, '--no-optional-locks', 'status', '--short'], wt],
        [[...startup, '--ignored'], wt],
        [['git', 'status', '--short'], wt],
        [['git', ...lsFiles.map((w) => (w === realpathSync(wt) ? repo.dir : w))], wt],
        [startup, join(wt, 'src')],
        [startup, repo.dir],
      ] as Array<[string[], string]>) {
        const slow = shim(claude, args, cwd);
        expect(slow.code, args.join(' ')).toBe(1);
        expect(slow.stderr, args.join(' ')).toMatch(/polly gate shim failed and blocks this call \(fail closed\): cannot read the gate config/);
      }
      expect(existsSync('/tmp/polly-fsmonitor-ran')).toBe(false);
      expect(shim(claude, ['gh', '--version']).stderr).toMatch(/cannot read the gate config/);
    } finally {
      renameSync(`${configFile}.away`, configFile);
    }
  });

  it('the fast path holds only calls decide allows for this context: a context the gate cannot judge has none, and its shim denies', async () => {
    const broken = await prepareGate('claude-code', { role: 'implement', context: { ...context, branch: '' }, stateDir: join(stateRoot, 'broken') });
    expect(readFileSync(join(stateRoot, 'broken', 'bin', 'git'), 'utf8')).not.toMatch(/Fast path/);
    const denied = shim(broken, ['git', '--no-optional-locks', 'status', '--short']);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/polly gate: denied \(internal_error\)/);
  });
});

describe('polly gate decide | log', () => {
  it('answers one JSON line per request in order, with context from the repo, and journals them', () => {
    const input = [
      { role: 'implement', tool: 'bash', input: 'git push --force origin polly/t1' },
      'not json',
      { role: 'implement', tool: 'bash', input: 'git push origin polly/t1' },
      { role: 'review', tool: 'write', input: 'src/a.ts' },
      { type: 'dispatch', purpose: 'deploy', model: 'm', dispatchesThisTurn: 0 },
      { type: 'dispatch', purpose: 'review', model: 'm', dispatchesThisTurn: 5 },
      { type: 'forge', operation: 'merge_pr' },
    ]
      .map((x) => (typeof x === 'string' ? x : JSON.stringify(x)))
      .join('\n');
    const out = execFileSync(process.execPath, [join(dist, 'brain', 'cli.js'), 'gate', 'decide'], { cwd: wt, input, encoding: 'utf8', env: gitTestEnv() });
    const answers = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { decision: string; rule: string });
    expect(answers.map((a) => `${a.decision} ${a.rule}`)).toEqual([
      'deny blast_radius.force_push',
      'deny internal_error',
      'allow allow',
      'deny purpose_guard.read_only',
      'deny purpose_guard.unknown_purpose',
      'deny spawn_bounds.max_dispatches_per_turn',
      'deny blast_radius.merge',
    ]);
    const log = JSON.parse(
      execFileSync(process.execPath, [join(dist, 'brain', 'cli.js'), 'gate', 'log', '--json'], { cwd: repo.dir, encoding: 'utf8', env: gitTestEnv() }),
    ) as Array<{ kind: string; data: { harness: string; rule: string } }>;
    expect(log.filter((e) => e.data.harness === 'cli').map((e) => e.data.rule)).toContain('spawn_bounds.max_dispatches_per_turn');
    const text = execFileSync(process.execPath, [join(dist, 'brain', 'cli.js'), 'gate', 'log', '--limit', '2'], { cwd: repo.dir, encoding: 'utf8', env: gitTestEnv() });
    expect(text.trim().split('\n')).toHaveLength(2);
  });
});

describe('decide: dispatch, forge, totality, ask_timeout', () => {
  const p = DEFAULT_CONFIG.policies;
  const ctx: GateContext = { repoRoot: '/repo', worktree: '/repo/.worktrees/t1', branch: 'polly/t1', defaultBranch: 'main', home: '/home/dev' };
  it('bounds dispatches per turn and closes the purpose set', () => {
    expect(decide({ type: 'dispatch', purpose: 'implement', model: 'x', dispatchesThisTurn: 4, source: 'plan' }, p, ctx).decision).toBe('allow');
    expect(decide({ type: 'dispatch', purpose: 'implement', model: 'x', dispatchesThisTurn: 5, source: 'plan' }, p, ctx).rule).toBe('spawn_bounds.max_dispatches_per_turn');
    // Implement work comes only from an approved plan: the LLM brain may start read-only work.
    expect(decide({ type: 'dispatch', purpose: 'implement', model: 'x', dispatchesThisTurn: 0, source: 'brain' }, p, ctx).rule).toBe('purpose_guard.plan_gate');
    expect(decide({ type: 'dispatch', purpose: 'implement', model: 'x', dispatchesThisTurn: 0 } as never, p, ctx).rule).toBe('purpose_guard.plan_gate');
    expect(decide({ type: 'dispatch', purpose: 'explore', model: 'x', dispatchesThisTurn: 0, source: 'brain' }, p, ctx).decision).toBe('allow');
    expect(decide({ type: 'dispatch', purpose: 'merge', model: 'x', dispatchesThisTurn: 0, source: 'plan' }, p, ctx).rule).toBe('purpose_guard.unknown_purpose');
  });
  it('denies every forge merge operation and unknown operations', () => {
    for (const op of ['merge', 'merge_pr', 'enableAutoMerge', 'auto_merge']) expect(decide({ type: 'forge', operation: op }, p, ctx).rule).toBe('blast_radius.merge');
    expect(decide({ type: 'forge', operation: 'open_draft_pr' }, p, ctx).decision).toBe('allow');
    expect(decide({ type: 'forge', operation: 'delete_repo' }, p, ctx).decision).toBe('deny');
  });
  it('is total: broken input and broken policy become internal_error denies', () => {
    expect(decide(null as never, p, ctx)).toMatchObject({ decision: 'deny', rule: 'internal_error' });
    expect(decide({ type: 'tool', tool: 'bash', input: 'ls', cwd: '/repo', role: 'implement' }, undefined as never, ctx).decision).toBe('deny');
    expect(decide({ type: 'tool', tool: 'bash', input: 42 as never, cwd: '/repo', role: 'implement' }, p, ctx)).toMatchObject({ decision: 'deny', rule: 'internal_error' });
  });
  it('gate_pushes: true makes a plain push an ask, and an ask expires after ask_timeout', () => {
    const gated = { ...p, blast_radius: { gate_pushes: true } };
    const d = decide({ type: 'tool', tool: 'bash', input: 'git push origin polly/t1', cwd: ctx.worktree, role: 'implement' }, gated, ctx);
    expect(d).toMatchObject({ decision: 'ask', rule: 'blast_radius.gate_pushes' });
    expect(resolveAsk(d, '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z', p).decision).toBe('ask');
    expect(resolveAsk(d, '2026-01-01T00:00:00Z', '2026-01-02T00:00:01Z', p)).toMatchObject({ decision: 'deny', rule: 'ask_timeout.expired' });
  });
});
