/**
 * One Brain per repository, even without a registry (issue 15, item 3): `.polly/brain.lock` held by
 * a live process refuses a second Brain; a dead holder's lock is taken over; a registry deleted
 * under a running Brain stops it with the restore command. Real processes, real files.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { acquireBrainLock, holderAlive, processStartTime } from '../../../brain/process/brain-lock.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

const LOCK_MODULE = resolve('dist/brain/process/brain-lock.js');
const CLI = resolve('dist/brain/cli.js');
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.pid && c.exitCode === null && c.signalCode === null) process.kill(c.pid, 'SIGKILL');
});

/** A child process that takes the Brain lock of `pollyDir` and holds it, printing "held". */
function holdInChild(pollyDir: string): Promise<ChildProcess> {
  const script = `const { acquireBrainLock } = await import(${JSON.stringify(LOCK_MODULE)});
    await acquireBrainLock(${JSON.stringify(pollyDir)}); process.stdout.write('held\\n'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((done) => child.stdout!.once('data', () => done(child)));
}

describe('the Brain lock (.polly/brain.lock)', () => {
  it('a live holder in another process refuses a second Brain with its pid; once it is SIGKILLed the lock is taken over', async () => {
    const pollyDir = join(mkdtempSync(join(tmpdir(), 'polly-brainlock-')), '.polly');
    const child = await holdInChild(pollyDir);
    const error = await acquireBrainLock(pollyDir).catch((e: unknown) => e);
    expect(isPollyError(error, 'already_running')).toBe(true);
    expect(String((error as Error).message)).toContain(`pid ${child.pid}`);
    // No registry is involved at all: the lock alone refuses.
    expect(existsSync(join(pollyDir, 'registry.json'))).toBe(false);

    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const lock = await acquireBrainLock(pollyDir);
    expect(lock.previous?.pid).toBe(child.pid);
    expect(JSON.parse(readFileSync(lock.path, 'utf8')).pid).toBe(process.pid);
    await lock.release();
    expect(existsSync(lock.path)).toBe(false);
  });

  it('a lock naming a pid that now belongs to another process (a different start time) is stale', () => {
    expect(processStartTime(process.pid)).toMatch(/^\d+$/);
    expect(holderAlive({ pid: process.pid, startTime: processStartTime(process.pid), startedAt: '' })).toBe(true);
    expect(holderAlive({ pid: process.pid, startTime: '1', startedAt: '' })).toBe(false);
  });

  it('two Brains starting at once: exactly one gets the lock', async () => {
    const pollyDir = join(mkdtempSync(join(tmpdir(), 'polly-brainlock-')), '.polly');
    const script = `const { acquireBrainLock } = await import(${JSON.stringify(LOCK_MODULE)});
      try { await acquireBrainLock(${JSON.stringify(pollyDir)}); process.stdout.write('won\\n'); setInterval(() => {}, 1000); }
      catch (e) { process.stdout.write((e.code ?? 'error') + '\\n'); process.exit(0); }`;
    const results = await Promise.all(
      [0, 1, 2, 3].map(
        () =>
          new Promise<string>((done) => {
            const c = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
            children.push(c);
            c.stdout!.once('data', (d) => done(String(d).trim()));
          }),
      ),
    );
    expect(results.sort()).toEqual(['already_running', 'already_running', 'already_running', 'won']);
  });

  it('the registry deleted under a running Brain: it stops with the restore command, and no second Brain starts', { timeout: 120_000 }, async () => {
    const repo = createTestRepo();
    const env = { ...gitTestEnv(), POLLY_HOME: join(repo.root, 'polly-home') };
    const runCli = (args: string[]) =>
      new Promise<{ code: number; stderr: string }>((done) => {
        const c = spawn(process.execPath, [CLI, ...args], { cwd: repo.dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
        children.push(c);
        let stderr = '';
        c.stderr!.on('data', (d) => (stderr += String(d)));
        c.on('exit', (code) => done({ code: code ?? -1, stderr }));
      });
    expect((await runCli(['init'])).code).toBe(0);
    const brain = spawn(process.execPath, [CLI, 'brain', '--no-llm'], { cwd: repo.dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(brain);
    let brainErr = '';
    brain.stderr!.on('data', (d) => (brainErr += String(d)));
    const exited = new Promise<number>((done) => brain.on('exit', (code) => done(code ?? -1)));
    const registry = join(repo.dir, '.polly', 'registry.json');
    const deadline = Date.now() + 60_000;
    while (!(existsSync(registry) && readFileSync(registry, 'utf8').includes(`"pid": ${brain.pid}`)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    // Let the Brain write its row twice (a backup exists), then delete the registry.
    expect(existsSync(join(repo.dir, '.polly', 'brain.lock'))).toBe(true);
    rmSync(registry);
    const second = await runCli(['brain', '--no-llm', '--exit-when-idle']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/a Brain already runs for this repository \(pid \d+|registry\.json .*(deleted|missing)/);
    // The running Brain notices on its next pass (at most ~5 s) and stops with the restore command.
    const code = await exited;
    expect(code).toBe(1);
    expect(brainErr).toMatch(/registry\.json (was deleted while this process used it|is missing while its backup)/);
    expect(brainErr).toMatch(/cp '.*registry\.json\.bak' '.*registry\.json'|move the damaged|start over/);
    expect(existsSync(registry)).toBe(false);
  });
});
