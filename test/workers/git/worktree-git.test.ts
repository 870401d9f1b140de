/** The git runner, the repository admin lock and the port allocator, with real git and real processes. */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { createGitRunner, scrubbedGitEnv } from '../../../workers/git/git.js';
import { createPortAllocator, isPortFree } from '../../../workers/ports.js';
import { createRepoLock } from '../../../workers/git/repo-lock.js';
import { createTestRepo } from '../../helpers/git-repo.js';

const ISOLATED = { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };

describe('git runner', () => {
  it('scrubs GIT_* from the parent (a hook environment would redirect git) and forces no editor/pager/prompt', async () => {
    const repo = createTestRepo();
    const git = createGitRunner({
      baseEnv: { ...process.env, GIT_DIR: '/nonexistent', GIT_INDEX_FILE: '/nonexistent/index', GIT_EDITOR: 'vi', EDITOR: 'vi' },
      env: ISOLATED,
    });
    const r = await git.run(['rev-parse', '--show-toplevel'], { cwd: repo.dir });
    expect(r.stdout.trim()).toBe(repo.dir);
    const env = git.env();
    expect(env.GIT_DIR).toBeUndefined();
    expect(env).toMatchObject({ GIT_EDITOR: 'true', GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_GLOBAL: '/dev/null' });
    expect(scrubbedGitEnv({ GIT_WORK_TREE: '/x', HOME: '/h' }, { GIT_INDEX_FILE: '/i' })).toMatchObject({ HOME: '/h', GIT_INDEX_FILE: '/i' });
    expect(scrubbedGitEnv({ GIT_WORK_TREE: '/x' }).GIT_WORK_TREE).toBeUndefined();
  });

  it('turns a failure into git_failed keeping the command, cwd, exit code and stderr', async () => {
    const repo = createTestRepo();
    const git = createGitRunner({ env: ISOLATED });
    const error = await git.run(['rev-parse', '--verify', 'no-such-branch'], { cwd: repo.dir }).catch((e: unknown) => e);
    expect(isPollyError(error, 'git_failed')).toBe(true);
    const details = (error as { details: Record<string, unknown> }).details;
    expect(details).toMatchObject({ command: 'git rev-parse --verify no-such-branch', cwd: repo.dir, exitCode: 128, timedOut: false });
    expect(String(details.stderr)).toMatch(/Needed a single revision/);
    // Expected non-zero exits are results.
    const ok = await git.run(['rev-parse', '--verify', '--quiet', 'no-such-branch'], { cwd: repo.dir, okExitCodes: [1] });
    expect(ok.exitCode).toBe(1);
  });

  it('kills a git call that exceeds its timeout and says so', async () => {
    const repo = createTestRepo();
    const git = createGitRunner({ env: ISOLATED });
    const started = Date.now();
    const error = await git.run(['-c', 'alias.wait=!sleep 30', 'wait'], { cwd: repo.dir, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(isPollyError(error, 'git_failed')).toBe(true);
    expect((error as { details: { timedOut: boolean } }).details.timedOut).toBe(true);
  });

  it('reports a missing working directory as git_failed naming it', async () => {
    const git = createGitRunner({ env: ISOLATED });
    const error = await git.run(['status'], { cwd: '/nonexistent/polly-dir' }).catch((e: unknown) => e);
    expect(isPollyError(error, 'git_failed')).toBe(true);
    expect(String((error as Error).message)).toContain('/nonexistent/polly-dir');
  });
});

/** A child node process that holds the admin lock of `commonDir` for `ms`, printing "held" once it has it. */
function holdLockInChild(commonDir: string, ms: number): Promise<{ done: Promise<number> }> {
  const script = `
    const lockfile = require('proper-lockfile');
    lockfile.lock(${JSON.stringify(commonDir)}, { lockfilePath: ${JSON.stringify(join(commonDir, 'polly-admin.lock'))}, realpath: false })
      .then((release) => { process.stdout.write('held\\n'); setTimeout(() => release().then(() => process.exit(0)), ${ms}); });`;
  const child = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  const done = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  return new Promise((resolve) => child.stdout.once('data', () => resolve({ done })));
}

describe('repository admin lock', () => {
  it('serializes callers in one process (no two inside at once)', async () => {
    const repo = createTestRepo();
    const lock = createRepoLock({ gitCommonDir: join(repo.dir, '.git') });
    let inside = 0;
    let maxInside = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        lock.withLock(async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          await new Promise((r) => setTimeout(r, 10));
          order.push(i);
          inside--;
        }),
      ),
    );
    expect(maxInside).toBe(1);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(existsSync(lock.path)).toBe(false);
  });

  it('waits for another process holding the lock, and times out with lock_timeout', async () => {
    const repo = createTestRepo();
    const commonDir = join(repo.dir, '.git');
    const child = await holdLockInChild(commonDir, 800);
    const short = createRepoLock({ gitCommonDir: commonDir, timeoutMs: 200 });
    const error = await short.withLock(async () => 'x').catch((e: unknown) => e);
    expect(isPollyError(error, 'lock_timeout')).toBe(true);
    const patient = createRepoLock({ gitCommonDir: commonDir, timeoutMs: 10_000 });
    let childExited = false;
    void child.done.then(() => (childExited = true));
    const got = await patient.withLock(async () => {
      await new Promise((r) => setTimeout(r, 50)); // the child's exit event follows its release
      return childExited;
    });
    expect(got).toBe(true);
  });

  it('releases the lock when the function throws', async () => {
    const repo = createTestRepo();
    const lock = createRepoLock({ gitCommonDir: join(repo.dir, '.git') });
    await expect(lock.withLock(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await lock.withLock(async () => 42)).toBe(42);
  });
});

describe('ports', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });
  function listen(port: number, host: string): Promise<void> {
    const s = createServer();
    servers.push(s);
    return new Promise((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, host, () => resolve());
    });
  }
  async function twoFreePorts(): Promise<number> {
    for (let p = 47_000 + Math.floor(Math.random() * 5000); p < 60_000; p += 2) {
      if ((await isPortFree(p)) && (await isPortFree(p + 1))) return p;
    }
    throw new Error('no two adjacent free ports');
  }

  it('skips a port a server listens on (even on 127.0.0.1 only) and never hands one out twice', async () => {
    const min = await twoFreePorts();
    await listen(min, '127.0.0.1');
    expect(await isPortFree(min)).toBe(false);
    const ports = createPortAllocator({ min, max: min + 1 });
    expect(await ports.allocate('a')).toBe(min + 1);
    const error = await ports.allocate('b').catch((e: unknown) => e);
    expect(isPollyError(error, 'conflict')).toBe(true);
    ports.release(min + 1);
    expect(await ports.allocate('b')).toBe(min + 1);
  });

  it('gives concurrent allocations distinct free ports', async () => {
    const ports = createPortAllocator();
    const got = await Promise.all(Array.from({ length: 8 }, (_, i) => ports.allocate(`task-${i % 2}`)));
    expect(new Set(got).size).toBe(8);
    for (const p of got) expect(p).toBeGreaterThanOrEqual(4100);
  });

  it('rejects a bad range', () => {
    expect(() => createPortAllocator({ min: 5000, max: 4000 })).toThrow(/port range/);
  });
});
