/**
 * Acceptance of issue 15 with real processes: what users and machines do to a running loop.
 *
 * 1. SIGKILL of the Brain AND of the `polly run` that follows it, mid-run, then `polly resume`:
 *    every task reaches ready with exactly one PR on the local forge and one branch on the remote,
 *    and `polly status --json` shows nothing running with a dead pid, before or after.
 * 2. Background processes an agent starts (`nohup … &`, `setsid …`, a double-fork daemon), for
 *    claude and pi: each was seen in the process table during its turn and is gone after it.
 * 3. The registry deleted while a Brain runs, then corrupted while a Brain runs: the Brain stops
 *    (exit 1, `registry_corrupt`) naming the restore command and the backup; `polly run` at once is
 *    refused the same way (no second Brain starts); the printed restore command followed by
 *    `polly resume` finishes the work with one PR. That repository keeps its worktrees beside it
 *    (`worktrees.dir: ../stats.polly-worktrees`), so the sandboxed agent, acceptance, push and review
 *    run from a worktree outside the repository.
 *
 * Real everything: the `polly` CLI from dist/, git with a bare origin, the real claude and pi CLIs
 * driven by the scripted model server, the local forge. One server and one script for the file.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelScript, loadModelScript, type Step } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import type { Registry } from '../../brain/registry/registry-schema.js';
import type { StatusReport } from '../../brain/registry/status-report.js';
import { git, gitTestEnv } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const run = promisify(execFile);
const cli = join(process.cwd(), 'dist/brain/cli.js');
const demo = join(process.cwd(), 'scripts/demo');

/**
 * Unique `sleep` durations (seconds) that mark the background processes in argv: per harness, one
 * for `nohup`, one for `setsid`, one for a double fork. Random per test run, so a leftover of an
 * earlier run cannot be taken for one of this run's.
 */
const base = 40_000 + Math.floor(Math.random() * 9_000) * 3;
const markers = {
  'claude-code': { nohup: base + 1, setsid: base + 2, daemon: base + 3 },
  pi: { nohup: base + 30_001, setsid: base + 30_002, daemon: base + 30_003 },
} as const;
type Harness = keyof typeof markers;

/** The shell line an implementer runs first: three background processes that outlive the command. */
function spawnBackground(m: (typeof markers)[Harness]): string {
  return `nohup sleep ${m.nohup} >/dev/null 2>&1 & setsid sleep ${m.setsid} >/dev/null 2>&1 </dev/null & sh -c '(sleep ${m.daemon} >/dev/null 2>&1 </dev/null &)'; echo spawned`;
}

/** Pids of live processes whose argv is exactly `sleep <seconds>` (read from /proc/<pid>/cmdline). */
function sleepers(seconds: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    if (argv.length === 2 && argv[0]!.endsWith('sleep') && argv[1] === String(seconds)) out.push(Number(name));
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const readRegistry = (repo: string): Registry | null => {
  try {
    return JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as Registry;
  } catch {
    return null;
  }
};

let server: ScriptedModelServer;
const started: ChildProcess[] = [];

beforeAll(async () => {
  // The demo's worker sessions (matched by role and task title, whichever CLI asks). Each
  // implementer's first turn starts its background processes, then sleeps 4 s so that a kill
  // finds the worker busy; Fix sum() is right at the first attempt here.
  const script = loadModelScript(join(demo, 'workers-script.yaml'));
  for (const s of script.sessions) {
    if (s.name === 'implement-fix-sum') {
      // Right at the first attempt: the demo's second turn, editing the original reducer.
      s.turns = [s.turns[1]!];
      for (const step of s.turns[0]!.steps) if ('edit' in step) step.edit.old = 'a - b';
    }
    if (s.match.role !== 'implement') continue;
    const harness: Harness = s.name === 'implement-fix-sum' ? 'claude-code' : 'pi';
    s.turns[0]!.steps.unshift({ run: spawnBackground(markers[harness]) } as Step, { run: 'sleep 4' } as Step);
  }
  server = await startScriptedModelServer({ script: parseModelScript(JSON.stringify(script)) });
});

afterAll(async () => {
  for (const c of started) if (c.exitCode === null && c.pid) c.kill('SIGKILL');
  await stopTrackedBrains();
  await server?.close();
});

/** A copy of the demo's sample project with a bare origin, `polly init`ed and pointed at the scripted server. */
async function sampleRepo(prefix: string, extra: Array<[string[], unknown]> = []): Promise<{ repo: string; origin: string; env: NodeJS.ProcessEnv; mainBefore: string }> {
  const { repo, origin } = sampleProjectWithOrigin(prefix);
  const env = gitTestEnv();
  await run(process.execPath, [cli, 'init'], { cwd: repo, env });
  return { repo, origin, env: { ...env, ...useScriptedModels(repo, server.url, { extra }) }, mainBefore: git(repo, ['rev-parse', 'main']) };
}

/** Write a plan file of the demo's tasks with the given workers; returns its path. */
function planFile(dir: string, tasks: Array<{ key: 't1' | 't2'; worker: Harness; reviewer: Harness }>): string {
  const demoPlan = readFileSync(join(demo, 'plan.yaml'), 'utf8');
  // The demo plan's tasks, with workers and reviewers swapped in (claude and pi implement here).
  let text = demoPlan;
  const keep = new Set(tasks.map((t) => t.key));
  if (!keep.has('t2')) text = text.slice(0, text.indexOf('  - key: t2'));
  for (const t of tasks) {
    const at = text.indexOf(`  - key: ${t.key}`);
    const end = text.indexOf('  - key:', at + 5);
    const block = text
      .slice(at, end === -1 ? undefined : end)
      .replace(/worker: \S+/, `worker: ${t.worker}`)
      .replace(/reviewer: \S+/, `reviewer: ${t.reviewer}`);
    text = text.slice(0, at) + block + (end === -1 ? '' : text.slice(end));
  }
  const path = join(dir, 'plan.yaml');
  writeFileSync(path, text);
  return path;
}

/** Start a `polly` command as a child process, collecting its output. */
function startPolly(args: string[], repo: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [cli, ...args], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number>((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 128 : 1))));
  return { child, out, exited };
}

/** Run a polly command to its end; never throws on a non-zero exit. */
async function polly(args: string[], repo: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = startPolly(args, repo, env);
  const code = await p.exited;
  return { code, ...p.out };
}

/** Poll every 200 ms until `probe` returns a value, or fail after `ms`. */
async function waitFor<T>(what: string, ms: number, probe: () => T | null | undefined | false): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `polly status --json`, with the assertion that nothing in it is shown running with a dead pid. */
async function statusShowsNoDeadPid(repo: string, env: NodeJS.ProcessEnv): Promise<StatusReport> {
  const r = await polly(['status', '--json'], repo, env);
  expect(r.code, r.stderr).toBe(0);
  const report = JSON.parse(r.stdout) as StatusReport;
  if (report.brain) expect(alive(report.brain.pid), `status shows the Brain pid ${report.brain.pid} running, but it is dead`).toBe(true);
  for (const w of report.workers) expect(alive(w.pid), `status shows worker ${w.id} (pid ${w.pid}) running, but it is dead`).toBe(true);
  return report;
}

/** PRs per task on the local forge, and `polly/*` branches on the remote. */
async function prsAndBranches(repo: string, origin: string, env: NodeJS.ProcessEnv) {
  const r = await polly(['pr', 'list', '--all', '--json'], repo, env);
  const prs = JSON.parse(r.stdout) as Array<{ number: number; taskId: string | null; head: string }>;
  const perTask: Record<string, number> = {};
  for (const pr of prs) perTask[String(pr.taskId)] = (perTask[String(pr.taskId)] ?? 0) + 1;
  const branches = git(origin, ['for-each-ref', '--format=%(refname:short)', 'refs/heads/polly/']).split('\n').filter(Boolean).sort();
  return { perTask, branches, prs };
}

describe.skipIf(!SANDBOXED)('resume and registry loss, with real processes (issue 15)', () => {
  it('SIGKILL of the Brain and its follower mid-run, then polly resume: one PR and one remote branch per task, no dead pid shown, no background process left', async () => {
    const t0 = Date.now();
    const { repo, origin, env, mainBefore } = await sampleRepo('polly-resume-');
    const plan = planFile(dirname(repo), [
      { key: 't1', worker: 'claude-code', reviewer: 'pi' },
      { key: 't2', worker: 'pi', reviewer: 'claude-code' },
    ]);
    const follower = startPolly(['run', plan, '--yes', '--json'], repo, env);

    // Every marker must be seen alive at least once while the turns run (else the test proves nothing).
    const seen = new Set<number>();
    const allMarkers = Object.values(markers).flatMap((m) => [m.nohup, m.setsid, m.daemon]);
    const scan = setInterval(() => {
      for (const m of allMarkers) if (sleepers(m).length > 0) seen.add(m);
    }, 150);

    // Mid-run: once every background process has been seen (the last agent to start is then in its
    // `sleep 4`, and the other task is somewhere between its turn and its PR), SIGKILL the Brain and
    // the `polly run` that follows it. Under load claude may start its turn long after pi's ended.
    await waitFor(`the claude and pi background processes; polly run said:\n${follower.out.stderr}`, 180_000, () => seen.size === allMarkers.length);
    const brainPid = readRegistry(repo)?.brain?.pid;
    expect(brainPid, 'no Brain row while the workers ran').toBeTypeOf('number');
    const busy = Object.values(readRegistry(repo)!.workers).filter((w) => (w as { state?: string }).state === 'running');
    expect(busy.length, 'no worker was running at the kill').toBeGreaterThan(0);
    process.kill(brainPid!, 'SIGKILL');
    follower.child.kill('SIGKILL');
    await follower.exited;
    await waitFor('the Brain to die', 10_000, () => !alive(brainPid!));

    // Before resuming: the dead Brain is reported gone, never running.
    const before = await statusShowsNoDeadPid(repo, env);
    expect(before.brain).toBeNull();
    expect(before.brainGone?.pid).toBe(brainPid);

    const resumed = await polly(['resume', '--json'], repo, env);
    clearInterval(scan);
    expect(resumed.code, `polly resume failed:\n${resumed.stderr}\n${resumed.stdout}`).toBe(0);
    expect(resumed.stderr).toMatch(new RegExp(`the Brain \\(pid ${brainPid}\\) is gone`));

    const after = await statusShowsNoDeadPid(repo, env);
    expect(after.tasks.map((t) => [t.id, t.status])).toEqual([
      ['p1-t1', 'ready'],
      ['p1-t2', 'ready'],
    ]);
    expect(after.brainGone).toBeNull();
    const { perTask, branches } = await prsAndBranches(repo, origin, env);
    expect(perTask).toEqual({ 'p1-t1': 1, 'p1-t2': 1 });
    expect(branches).toEqual(['polly/p1-t1', 'polly/p1-t2']);

    // Every background process was seen during its turn, and none outlived it.
    expect([...seen].sort()).toEqual([...allMarkers].sort());
    for (const m of allMarkers) expect(sleepers(m), `sleep ${m} outlived its agent's turn`).toEqual([]);

    // Nothing merged.
    expect(git(origin, ['rev-parse', 'main'])).toBe(mainBefore);
    console.log(`[e2e-resume] kill + resume: ${Date.now() - t0} ms`);
  }, 300_000);

  it('registry deleted, then corrupted, while a Brain runs: the Brain stops naming the restore command and its backup, no second Brain starts, and the restore resumes the work', async () => {
    const t0 = Date.now();
    // This repository keeps its worktrees beside it (worktrees.dir): the whole loop runs there too.
    const { repo, origin, env } = await sampleRepo('polly-reglost-', [[['worktrees', 'dir'], '../stats.polly-worktrees']]);
    const worktreesDir = join(dirname(repo), 'stats.polly-worktrees');
    const plan = planFile(dirname(repo), [{ key: 't1', worker: 'pi', reviewer: 'claude-code' }]);
    const registry = join(repo, '.polly/registry.json');
    const backup = join(repo, '.polly/registry.json.bak');
    const follower = startPolly(['run', plan, '--yes'], repo, env);

    const brainPid = await waitFor(`the implementer running; polly run said:\n${follower.out.stderr}`, 120_000, () => {
      const reg = readRegistry(repo);
      return reg?.brain && Object.values(reg.workers).some((w) => (w as { state?: string }).state === 'running') ? reg.brain.pid : null;
    });
    expect(existsSync(backup)).toBe(true);
    const deletedAt = Date.now();
    rmSync(registry);

    // At once, before the Brain noticed: a second `polly run` is refused, naming the restore command.
    const again = await polly(['run', plan, '--yes'], repo, env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`cp '${backup}' '${registry}'`);

    // The Brain stops by itself (exit 1) with the same restore command; the follower says it too.
    await waitFor('the Brain to stop', 30_000, () => !alive(brainPid));
    const followerCode = await follower.exited;
    expect(followerCode).toBe(1);
    expect(follower.out.stderr).toContain(`cp '${backup}' '${registry}'`);
    const brainLog = readFileSync(join(repo, '.polly/brain.log'), 'utf8');
    const stopLine = /^(\S+) \[polly\] the Brain stops: .*registry\.json was deleted while this process used it/m.exec(brainLog);
    expect(stopLine, brainLog).not.toBeNull();
    // How long the Brain ran on after the delete (from its own log: the refused `polly run` above took its share of the wall time).
    const stoppedAfterMs = Date.parse(stopLine![1]!) - deletedAt;
    expect(brainLog).toContain(`cp '${backup}' '${registry}'`);
    // No second Brain: the lock names no live process and the registry was not recreated empty.
    expect(existsSync(registry)).toBe(false);
    const lock = join(repo, '.polly/brain.lock');
    if (existsSync(lock)) expect(alive((JSON.parse(readFileSync(lock, 'utf8')) as { pid: number }).pid)).toBe(false);

    // The printed command restores; polly resume finishes the task with one PR.
    cpSync(backup, registry);
    const resumed = await polly(['resume'], repo, env);
    expect(resumed.code, `polly resume failed:\n${resumed.stderr}\n${resumed.stdout}`).toBe(0);
    const after = await statusShowsNoDeadPid(repo, env);
    expect(after.tasks.map((t) => [t.id, t.status])).toEqual([['p1-t1', 'ready']]);
    expect(after.tasks[0]!.worktree).toBe(join(worktreesDir, 'p1-t1'));
    expect(existsSync(join(repo, '.worktrees'))).toBe(false);
    const { perTask, branches } = await prsAndBranches(repo, origin, env);
    expect(perTask).toEqual({ 'p1-t1': 1 });
    expect(branches).toEqual(['polly/p1-t1']);

    // Corrupted while a Brain runs (an idle one here: the loop reads the registry at least every 5 s).
    const brain = startPolly(['brain', '--no-llm'], repo, env);
    await waitFor('the second Brain to take the row', 30_000, () => readRegistry(repo)?.brain?.pid === brain.child.pid);
    const text = readFileSync(registry, 'utf8');
    const corruptedAt = Date.now();
    writeFileSync(registry, text.slice(0, Math.floor(text.length / 2)));
    const brainCode = await brain.exited;
    const corruptStopMs = Date.now() - corruptedAt;
    expect(brainCode).toBe(1);
    expect(brain.out.stderr).toMatch(/registry\.json is corrupt: /);
    expect(brain.out.stderr).toContain(`cp '${backup}' '${registry}'`);
    const third = await polly(['run', plan, '--yes'], repo, env);
    expect(third.code).toBe(1);
    expect(third.stderr).toMatch(/registry\.json is corrupt: /);
    expect(readFileSync(registry, 'utf8')).toBe(text.slice(0, Math.floor(text.length / 2)));
    console.log(`[e2e-resume] registry loss: ${Date.now() - t0} ms; Brain stopped ${stoppedAfterMs} ms after the delete, ${corruptStopMs} ms after the corruption`);
  }, 300_000);
});
