/**
 * A worker's gate over the runner's socket (gate/hooks/gate-server.ts, gate-client.ts): the built
 * Claude Code hook, the git shim and the pi extension file, prepared with `socket`, ask a real gate
 * server and enforce its answer; the server journals with its stamp (`task`, `worker`), never what
 * a request claims; the hooks write no decision themselves; no server → every call is denied
 * (fail closed). The path of a deep gate dir exceeds sun_path (108 bytes) on purpose.
 * Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileJournal } from '../../../gate/decision-log.js';
import { socketAddress } from '../../../gate/hooks/gate-client.js';
import { startGateServer, type GateServer } from '../../../gate/hooks/gate-server.js';
import { prepareGate, type PreparedGate } from '../../../gate/hooks/harness-gate.js';
import type { GateContext } from '../../../gate/types.js';
import { createTestRepo, type TestRepo } from '../../helpers/git-repo.js';

let repo: TestRepo;
let wt: string;
let journal: string;
let claude: PreparedGate;
let pi: PreparedGate;
let server: GateServer;
let piServer: GateServer;

const lines = (): Array<Record<string, unknown>> =>
  (existsSync(journal) ? readFileSync(journal, 'utf8') : '')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { data: Record<string, unknown> }).data);

function hookCommand(): string {
  const settings = JSON.parse(readFileSync(claude.args[1] as string, 'utf8')) as { hooks: { PreToolUse: Array<{ hooks: Array<{ command: string }> }> } };
  return settings.hooks.PreToolUse[0]?.hooks[0]?.command as string;
}

/** Run a process to its end without blocking this process (the gate server answers from here). */
function runAsync(cmd: string, args: string[], input: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: wt, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

const runHook = (command: string) =>
  runAsync('/bin/sh', ['-c', hookCommand()], JSON.stringify({ session_id: 's1', cwd: wt, hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command } }));

beforeAll(async () => {
  repo = createTestRepo({ 'README.md': '# t\n' });
  repo.git(['worktree', 'add', '-q', '-b', 'polly/t1', '.worktrees/t1']);
  wt = join(repo.dir, '.worktrees', 't1');
  const context: GateContext = { repoRoot: repo.dir, worktree: wt, branch: 'polly/t1', defaultBranch: 'main', home: homedir() };
  const deep = join(mkdtempSync(join(tmpdir(), 'polly-gate-server-')), 'a'.repeat(60), 'workers', 'w-t1-0123456789abcdef');
  mkdirSync(join(repo.dir, '.polly'), { recursive: true });
  journal = join(repo.dir, '.polly', 'gate-decisions.jsonl');
  const socket = join(deep, 'gate', 'gate.sock');
  expect(Buffer.byteLength(socket)).toBeGreaterThan(108);
  claude = await prepareGate('claude-code', { role: 'implement', context, stateDir: join(deep, 'gate'), socket });
  server = await startGateServer({ socketPath: socket, config: claude.config, journal: createFileJournal(journal), stamp: { task: 't1', worker: 'w-t1' } });
  const piSocket = join(deep, 'pi', 'gate.sock');
  pi = await prepareGate('pi', { role: 'implement', context, stateDir: join(deep, 'pi'), socket: piSocket });
  piServer = await startGateServer({ socketPath: piSocket, config: pi.config, journal: createFileJournal(journal), stamp: { task: 't1', worker: 'w-t1-pi' } });
});

afterAll(async () => {
  await server?.close();
  await piServer?.close();
});

describe("a worker's gate served by the runner over a unix socket", () => {
  it('writes no journal path into the config the sandbox sees, only the socket', () => {
    const cfg = JSON.parse(readFileSync(claude.env.POLLY_GATE_CONFIG as string, 'utf8')) as Record<string, unknown>;
    expect(cfg.journalPath).toBeNull();
    expect(cfg.socket).toBe(server.socketPath);
  });

  it("the Claude Code hook enforces the runner's denial and the runner journals it with its stamp", async () => {
    const denied = await runHook('git push --force origin polly/t1');
    expect(denied.code).toBe(0);
    expect(JSON.parse(denied.stdout).hookSpecificOutput.permissionDecisionReason).toMatch(/blast_radius\.force_push/);
    const allowed = await runHook('ls -la');
    expect(allowed).toMatchObject({ code: 0, stdout: '' });
    const mine = lines().filter((d) => d.harness === 'claude-code');
    expect(mine.map((d) => [d.input, d.decision, d.task, d.worker, d.session])).toEqual([
      ['git push --force origin polly/t1', 'deny', 't1', 'w-t1', 's1'],
      ['ls -la', 'allow', 't1', 'w-t1', 's1'],
    ]);
  });

  it("the git shim asks the runner: a force-push is denied before git runs, and a request's own claims (task, role, another harness) change nothing", async () => {
    const shim = join(claude.env.PATH!.split(':')[0]!, 'git');
    const r = await runAsync(shim, ['push', '--force', 'origin', 'polly/t1'], '', { ...process.env, PATH: claude.env.PATH });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^polly gate: denied \(blast_radius\.force_push\)/);
    const ask = (req: Record<string, unknown>) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        let out = '';
        const addr = socketAddress(server.socketPath);
        const c = connect(addr.address);
        addr.release();
        c.on('connect', () => c.write(`${JSON.stringify(req)}\n`));
        c.on('data', (d) => (out += d));
        c.on('end', () => resolve(JSON.parse(out) as Record<string, unknown>));
        c.on('error', reject);
      });
    const claimed = await ask({ v: 1, from: 'shim', cwd: '/elsewhere/other-task', prog: 'git', args: ['push', '--force'], task: 'other', role: 'brain', worker: 'w-other' });
    expect(claimed.decision).toBe('deny');
    const foreign = await ask({ v: 1, from: 'codex', cwd: wt, toolName: 'Bash', toolInput: { command: 'ls' } });
    expect(foreign).toMatchObject({ decision: 'deny', rule: 'gate.bad_request' });
    const last = lines().slice(-2);
    expect(last.map((d) => [d.task, d.worker, d.role])).toEqual([
      ['t1', 'w-t1', 'implement'],
      ['t1', 'w-t1', 'implement'],
    ]);
  });

  it("the pi extension file blocks on the runner's denial", async () => {
    const file = pi.files.find((f) => f.endsWith('.mjs')) as string;
    const mod = (await import(pathToFileURL(file).href)) as { default: (api: { on(e: string, h: (ev: unknown, ctx: unknown) => unknown): void }) => void };
    let handler: ((ev: unknown, ctx: unknown) => unknown) | null = null;
    mod.default({ on: (_e, h) => void (handler = h) });
    expect(await handler!({ toolName: 'bash', input: { command: 'git push -f origin polly/t1' } }, { cwd: wt })).toMatchObject({ block: true });
    expect(await handler!({ toolName: 'read', input: { path: 'README.md' } }, { cwd: wt })).toBeUndefined();
    expect(
      lines()
        .filter((d) => d.worker === 'w-t1-pi')
        .map((d) => d.decision),
    ).toEqual(['deny', 'allow']);
  });

  it('with the runner gone every call is denied (fail closed), and nothing is journaled by the hook', async () => {
    const before = readFileSync(journal, 'utf8');
    await server.close();
    const r = await runHook('ls');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).hookSpecificOutput.permissionDecisionReason).toMatch(/gate\.unreachable.*fail closed/);
    expect(readFileSync(journal, 'utf8')).toBe(before);
  });
});
