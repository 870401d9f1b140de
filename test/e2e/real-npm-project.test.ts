/**
 * A real npm project whose worktrees need `npm ci`, end to end: two vendors, two PRs, a human merge.
 *
 * The package: **json-stringify-safe@5.0.1** (npm, ISC, by Isaac Z. Schlueter; tarball sha256
 * b7fbbf65c0bff6d47f516c98638229dff0e981d0edfffecbcf971d7fe361928a). Why this one:
 * - real and widely used (request depended on it), small (one 30-line stringify.js);
 * - its published tarball carries its test suite (test/stringify_test.js, test/mocha.opts) and the
 *   Makefile whose `make test` runs it: `polly init` finds that target and writes it as the check;
 * - the tests need its devDependencies (mocha 2, must, sinon 1: 57 packages), so each worktree
 *   needs `npm ci`, which creates the ignored `node_modules/` — issue 35 item 1's regression: an
 *   ignored path handed to `git add` made Polly's commit fail on green work;
 * - npm never publishes a lockfile, so test/fixtures/real-npm-project/package-lock.json pins those
 *   57 (`npm install --package-lock-only`; integrity hashes, no registry URLs), and its `gitignore`
 *   is the .gitignore the project's repository would have (npm does not publish that either).
 *
 * The tarball comes through test/helpers/real-projects.ts (cached outside the repository; no
 * network or another checksum → the test FAILS). `worktrees.setup` is polly init's `npm ci`, run in
 * the sandbox with `worktrees.setup_network: true`; npm's registry setting lives in the user's
 * ~/.npmrc, which the sandbox hides, so it is handed over as `npm_config_registry` through
 * `workers.env_passthrough`, as the README says a user does. Claude Code fixes the broken
 * `npm test` script, Codex adds a test file; pi reviews both (another vendor). Then the human
 * merges the first PR with a merge commit and squashes the second, pushes, and runs `polly pr sync`.
 */
import { copyFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { fetchNpmPackage, unpackNpmPackage } from '../helpers/real-projects.js';
import { createRealProjectRepo, originPaths, polly, registryTasks, runAsync, waitForNoProcessesIn, type Ran, type RealProjectRepo } from '../helpers/real-project-run.js';
import type { TaskRecord } from '../../brain/registry/registry-schema.js';
import { hasSystemPackages } from '../helpers/system-packages.js';

// Runs npm ci (network on: pasta) and make test in Polly's sandbox: skipped and listed without bubblewrap, passt, make, a failure under CI=true (test/helpers/system-packages.ts).
const READY = hasSystemPackages(['bubblewrap', 'passt', 'make'], import.meta.url);

const PACKAGE = { name: 'json-stringify-safe', version: '5.0.1', sha256: 'b7fbbf65c0bff6d47f516c98638229dff0e981d0edfffecbcf971d7fe361928a' };
const FIXTURES = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'test', 'fixtures', 'real-npm-project');

describe.skipIf(!READY)(`polly run on a real npm project with npm ci setup (${PACKAGE.name}@${PACKAGE.version})`, () => {
  let p: RealProjectRepo;
  let server: ScriptedModelServer | null = null;
  let init: Ran;
  let result: Ran;
  let readyTasks: TaskRecord[] = [];
  let worktreeNodeModules: boolean[] = [];
  let sync: Ran;
  const merges: string[] = [];

  beforeAll(async () => {
    const tarball = await fetchNpmPackage(PACKAGE);
    p = await createRealProjectRepo(
      'polly-real-npm-',
      async (dir) => {
        await unpackNpmPackage(tarball, dir);
        copyFileSync(join(FIXTURES, 'package-lock.json'), join(dir, 'package-lock.json'));
        copyFileSync(join(FIXTURES, 'gitignore'), join(dir, '.gitignore'));
      },
      `${PACKAGE.name}@${PACKAGE.version} as published on npm, with a pinned lockfile`,
    );
    init = await polly(['init'], p.repo);
    expect(init.code, `polly init failed:\n${init.stderr}`).toBe(0);
    server = await startScriptedModelServer({ script: parseModelScript(readFileSync(join(FIXTURES, 'workers-script.yaml'), 'utf8'), 'workers-script.yaml') });
    const registry = await runAsync('npm', ['config', 'get', 'registry'], p.repo, process.env, 30_000);
    expect(registry.code, registry.stderr).toBe(0);
    const modelEnv = useScriptedModels(p.repo, server.url, {
      extra: [
        [['worktrees', 'setup_network'], true],
        [['workers', 'env_passthrough'], ['npm_config_registry']],
      ],
    });
    copyFileSync(join(FIXTURES, 'plan.yaml'), join(p.root, 'plan.yaml'));
    result = await polly(['run', join(p.root, 'plan.yaml'), '--yes', '--json'], p.repo, { ...modelEnv, npm_config_registry: registry.stdout.trim() }, 240_000);
    readyTasks = registryTasks(p.repo);
    worktreeNodeModules = readyTasks.map((t) => t.worktree !== null && existsSync(join(t.worktree, 'node_modules', 'mocha', 'package.json')));

    // The human merges both PRs with git — the first with a merge commit, the second squashed — pushes, and asks Polly.
    for (const [task, method] of readyTasks.map((t, i) => [t, i === 0 ? 'merge' : 'squash'] as const)) {
      if (!task.branch || !task.pr) continue; // no PR (a failed task): the assertions below say why
      p.git(['fetch', '-q', 'origin', task.branch]);
      if (method === 'merge') p.git(['merge', '--no-ff', '-q', '-m', `Merge ${task.branch}`, 'FETCH_HEAD']);
      else {
        p.git(['merge', '--squash', '-q', 'FETCH_HEAD']);
        p.git(['commit', '-q', '-m', `${task.title} (squashed)`]);
      }
      merges.push(p.git(['rev-parse', 'HEAD']));
    }
    p.git(['push', '-q', 'origin', 'main']);
    sync = await polly(['pr', 'sync', '--json'], p.repo, {}, 120_000);
  }, 420_000);

  afterAll(async () => {
    await server?.close();
    await stopTrackedBrains();
    if (p?.root) rmSync(p.root, { recursive: true, force: true });
  });

  it('polly init found the npm project with its lockfile and its Makefile test target', () => {
    const config = readFileSync(join(p.repo, '.polly', 'config.yaml'), 'utf8');
    expect(config).toMatch(/commands:\s*\n?\s*-?\s*\[?"?make test/);
    expect(config).toContain('npm ci --prefer-offline --no-audit --no-fund');
  });

  it('polly run exits 0 with both tasks ready, each with one PR, by two vendors', () => {
    expect(
      result.code,
      `polly run failed (${readyTasks.map((t) => `${t.id} ${t.status}: ${t.statusReason ?? ''}`).join('; ')}):\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`,
    ).toBe(0);
    expect(readyTasks.map((t) => [t.worker, t.reviewer, t.status, t.pr?.state])).toEqual([
      ['claude-code', 'pi', 'ready', 'ready'],
      ['codex', 'pi', 'ready', 'ready'],
    ]);
    expect(new Set(readyTasks.map((t) => t.pr?.number)).size).toBe(2);
    const served = new Set(server!.requests.map((r) => r.session).filter((s) => s !== null));
    expect([...served].sort()).toEqual(['implement-npm-test', 'implement-serializer-test', 'review-npm-test', 'review-serializer-test']);
  });

  it('npm ci ran in each worktree (node_modules there), and the checks ran green on the first attempt', () => {
    expect(worktreeNodeModules).toEqual([true, true]);
    for (const t of readyTasks) {
      expect(t.attempts).toBe(1);
      expect(t.checks.map((c) => [c.command, c.exitCode])).toEqual([['make test', 0]]);
    }
    expect(readyTasks[1]!.checks[0]!.output).toMatch(/20 passing/);
  });

  it('the PR branches on origin carry the change and nothing ignored (no node_modules)', () => {
    const [t1, t2] = readyTasks;
    for (const t of readyTasks) {
      expect(p.originGit(['rev-parse', `refs/heads/${t.branch}`])).toBe(t.headCommit);
      expect(p.originGit(['rev-list', '--count', `${p.initialMain}..${t.branch}`])).toBe('1');
      expect(originPaths(p, t.branch!).filter((f) => /(^|\/)(node_modules|coverage|\.nyc_output)\//.test(f))).toEqual([]);
    }
    expect(p.originGit(['diff', '--name-status', p.initialMain, t1!.branch!])).toBe('M\tpackage.json');
    expect(p.originGit(['show', `${t1!.branch}:package.json`])).toContain('"test": "_mocha -R dot"');
    expect(p.originGit(['diff', '--name-status', p.initialMain, t2!.branch!])).toBe('A\ttest/serializer_test.js');
  });

  it('after the human merge, polly pr sync marks both done and removes their worktrees after a backup', () => {
    expect(sync.code, sync.stderr).toBe(0);
    const report = JSON.parse(sync.stdout) as { done: Array<{ taskId: string; mergeCommitSha: string | null; backupRef: string | null }>; errors: unknown[] };
    expect(report.errors).toEqual([]);
    expect(report.done.map((d) => [d.taskId, d.mergeCommitSha])).toEqual(readyTasks.map((t, i) => [t.id, merges[i]]));
    const after = registryTasks(p.repo);
    for (const [i, t] of after.entries()) {
      expect([t.status, t.pr?.state]).toEqual(['done', 'merged']);
      expect(existsSync(readyTasks[i]!.worktree!)).toBe(false);
      expect(t.backupRefs).toHaveLength(1);
      expect(p.git(['merge-base', '--is-ancestor', readyTasks[i]!.headCommit!, t.backupRefs[0]!])).toBe('');
    }
    expect(
      p
        .git(['worktree', 'list', '--porcelain'])
        .split('\n')
        .filter((l) => l.startsWith('worktree ')),
    ).toEqual([`worktree ${p.repo}`]);
    // main on origin: the human's two commits on the published one.
    expect(p.originGit(['rev-list', '--first-parent', '--count', 'main'])).toBe('3');
    expect(originPaths(p, 'main')).toEqual(expect.arrayContaining(['test/serializer_test.js', 'package-lock.json']));
    expect(originPaths(p, 'main').some((f) => f.startsWith('node_modules/'))).toBe(false);
  });

  it('nothing is left running: no Brain, worker, setup or check in the repository', async () => {
    expect(await waitForNoProcessesIn(p.root, 15_000)).toEqual([]);
    const list = await polly(['pr', 'list', '--all', '--json'], p.repo);
    expect((JSON.parse(list.stdout) as Array<{ state: string }>).map((pr) => pr.state)).toEqual(['merged', 'merged']);
  });
});
