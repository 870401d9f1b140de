// A keyless trial that goes on after a failure (issue 35 item 5), with the real claude and pi CLIs,
// the real sandbox and the scripted model server, no API key in the environment:
// - a setup that failed (`npm ci` before a lockfile existed) → the lockfile committed → `polly retry
//   --script` runs the setup again (node_modules in the worktree); a task that fails by script →
//   the script fixed → `polly retry --script` → ready;
// - SIGINT during `polly try`'s running turn: the turn completes against the scripted server, which
//   outlives the command (no "Connection error"), and `polly resume --script` finishes the task.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseDocument } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { git } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { keylessEnv, polly } from '../helpers/keyless-cli.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const cli = join(process.cwd(), 'dist/brain/cli.js');
const run = promisify(execFile);

const PLAN = `goal: Add median()
tasks:
  - key: t1
    title: Add median()
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: Add median(xs) in src/median.js with a test in test/median.test.js.
    acceptance:
      commands: [node --test test/median.test.js]
      criteria: ["median() handles odd and even counts"]
`;

const MEDIAN = `export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
`;
const MEDIAN_TEST = `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { median } from '../src/median.js';
test('median', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
});
`;
const indent = (text: string, n: number) =>
  text
    .split('\n')
    .map((l) => (l ? ' '.repeat(n) + l : l))
    .join('\n');

/** The script: the implementer writes median() (or, `broken`, only finishes), pi reviews clean. */
function script(opts: { broken?: boolean; latencyMs?: number } = {}): string {
  const steps = opts.broken
    ? '          - finish: "Done."\n'
    : `          - write:
              path: src/median.js
              content: |
${indent(MEDIAN, 16)}
          - write:
              path: test/median.test.js
              content: |
${indent(MEDIAN_TEST, 16)}
          - run: node --test test/median.test.js
          - finish: "Added median() with a test."
`;
  return `sessions:
  - name: implement-median
    match: {role: implement, contains: ["Add median()"]}
${opts.latencyMs ? `    latency_ms: ${opts.latencyMs}\n` : ''}    repeat_last: true
    turns:
      - steps:
${steps}  - name: review-median
    match: {role: review, contains: ["Add median()"]}
    turns:
      - steps:
          - finish: '{"blocking": [], "non_blocking": []}'
`;
}

type Registry = {
  tasks: Record<string, { id: string; status: string; statusReason: string | null; worktree: string | null }>;
  workers: Record<string, { pid: number; taskId: string; purpose?: string; stateDir?: string }>;
};
const registry = (repo: string): Registry => JSON.parse(readFileSync(join(repo, '.polly/registry.json'), 'utf8')) as Registry;

async function waitFor<T>(what: string, probe: () => T | null | undefined | false | Promise<T | null | undefined | false>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.skipIf(!SANDBOXED)('a keyless trial goes on after a failure', () => {
  afterAll(() => stopTrackedBrains());

  it('a failed setup, fixed, runs again on polly retry --script; a task failed by script, fixed, ends ready', async () => {
    const { root, repo } = sampleProjectWithOrigin('polly-try-on-');
    const env = keylessEnv();
    // A dependency npm installs offline (a local package); no lockfile yet, so `npm ci` fails.
    mkdirSync(join(repo, 'vendor/left'), { recursive: true });
    writeFileSync(join(repo, 'vendor/left/package.json'), '{"name": "left", "version": "1.0.0", "main": "index.js"}\n');
    writeFileSync(join(repo, 'vendor/left/index.js'), 'module.exports = 1;\n');
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(repo, 'package.json'), `${JSON.stringify({ ...pkg, dependencies: { left: 'file:vendor/left' } }, null, 2)}\n`);
    writeFileSync(join(repo, '.gitignore'), 'node_modules/\n');
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-q', '-m', 'a local dependency']);
    git(repo, ['push', '-q', 'origin', 'main']);
    expect((await polly(['init'], repo, env)).code).toBe(0);
    const config = join(repo, '.polly/config.yaml');
    const doc = parseDocument(readFileSync(config, 'utf8'));
    doc.setIn(['worktrees', 'setup'], 'npm ci');
    writeFileSync(config, doc.toString());
    const configBefore = readFileSync(config, 'utf8');
    const plan = join(root, 'plan.yaml');
    writeFileSync(plan, PLAN);
    const scriptFile = join(root, 'script.yaml');
    writeFileSync(scriptFile, script({ broken: true }));

    const first = await polly(['try', plan, '--script', scriptFile, '--yes', '--json'], repo, env);
    expect(first.code, first.stderr).toBe(1);
    const task = Object.values(registry(repo).tasks)[0]!;
    expect(task.status).toBe('failed');
    expect(task.statusReason).toContain('worktrees.setup "npm ci" exited');
    expect(first.stderr).toContain(`polly retry TASK-ID --script ${scriptFile}`);
    expect(readFileSync(config, 'utf8')).toBe(configBefore);

    // The fix: a lockfile, committed and pushed (no node_modules in the main checkout to copy).
    await run('npm', ['install', '--package-lock-only', '--offline', '--no-audit', '--no-fund'], { cwd: repo, env });
    git(repo, ['add', 'package-lock.json']);
    git(repo, ['commit', '-q', '-m', 'lockfile']);
    git(repo, ['push', '-q', 'origin', 'main']);
    const second = await polly(['retry', task.id, '--script', scriptFile, '--yes'], repo, env);
    expect(second.stderr).toContain(`${task.id}: worktrees.setup "npm ci" runs again before the worker, in a new worktree`);
    expect(second.stderr).toContain('it failed there last time');
    expect(second.code, second.stderr).toBe(1);
    const after = registry(repo).tasks[task.id]!;
    expect(after.statusReason).toContain('the worker made no change');
    expect(existsSync(join(after.worktree!, 'node_modules/left/package.json')), second.stderr).toBe(true);

    writeFileSync(scriptFile, script());
    const third = await polly(['retry', task.id, '--script', scriptFile, '--yes', '--json'], repo, env);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).not.toContain('runs again before the worker');
    expect(registry(repo).tasks[task.id]!.status).toBe('ready');
    expect(existsSync(join(registry(repo).tasks[task.id]!.worktree!, 'node_modules/left/package.json'))).toBe(true);
    expect(readFileSync(config, 'utf8')).toBe(configBefore);
    // Nothing holds the scripted model server any more: it is gone with its record.
    expect(existsSync(join(repo, '.polly/scripted-model.json'))).toBe(false);
  }, 600_000);

  it('SIGINT during the running turn of polly try: the turn completes against the server, polly resume --script finishes', async () => {
    const { root, repo } = sampleProjectWithOrigin('polly-try-int-');
    const env = keylessEnv();
    expect((await polly(['init'], repo, env)).code).toBe(0);
    const plan = join(root, 'plan.yaml');
    writeFileSync(plan, PLAN);
    const scriptFile = join(root, 'script.yaml');
    writeFileSync(scriptFile, script({ latencyMs: 2500 }));

    const child = spawn(process.execPath, [cli, 'try', plan, '--script', scriptFile, '--yes'], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.resume();
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    // The implementer's first model call is in flight (its reply is paced by latency_ms).
    await waitFor(
      'the implementer turn',
      async () => {
        const url = /scripted model server on (http:\/\/[0-9.:]+)/.exec(stderr)?.[1];
        if (!url) return false;
        const reqs = (await (await fetch(`${url}/_polly/requests`)).json()) as Array<{ session: string | null }>;
        return reqs.some((q) => q.session === 'implement-median');
      },
      120_000,
    );
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain('stays up for the workers still finishing their turn');
    const worker = Object.values(registry(repo).workers).find((w) => w.purpose === 'implement')!;
    expect(worker, stderr).toBeDefined();
    await waitFor('the worker to finish its turn', () => !pidAlive(worker.pid), 120_000);
    const events = readFileSync(join(worker.stateDir!, 'events.jsonl'), 'utf8');
    expect(events).not.toMatch(/Connection error|ECONNREFUSED/);
    expect(events).toContain('src/median.js');

    const resumed = await polly(['resume', '--script', scriptFile, '--yes', '--json'], repo, env);
    expect(resumed.code, resumed.stderr).toBe(0);
    const task = Object.values(registry(repo).tasks)[0]!;
    expect(task.status, resumed.stderr).toBe('ready');
    expect(JSON.stringify(registry(repo))).not.toContain('Connection error');
  }, 600_000);
});
