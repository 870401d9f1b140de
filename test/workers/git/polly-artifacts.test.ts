// What Polly's own setup and checks write into a worktree stays out of the task's commit (a
// newcomer's first PR carried a whole .venv/ made by worktrees.setup, and pytest's __pycache__
// made by the acceptance run); what the worker writes is committed as before. Real git, the real
// worktree manager, its setup in the real sandbox.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isArtifact, readArtifacts, recordArtifacts, untrackedPaths } from '../../../workers/git/polly-artifacts.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { scanForSecrets } from '../../../workers/git/secret-scan.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const GITHUB_TOKEN = ['gh', 'p_', Array.from({ length: 36 }, (_, i) => ALNUM[(i * 7 + 16) % ALNUM.length]).join('')].join('');

describe("Polly's artifacts", () => {
  it("setup's and the checks' new files are left out of the commit and the secret scan; the worker's files are committed", async () => {
    const repo = createTestRepo({ 'calc.py': 'def add(a, b):\n    return a - b\n', 'tests/test_calc.py': 'from calc import add\n' });
    const journal: Array<[string, Record<string, unknown>]> = [];
    const manager = createWorktreeManager({
      repoRoot: repo.dir,
      setupCommand: 'mkdir -p .venv/bin build && echo python > .venv/bin/python && echo out > build/out.txt',
      journal: (kind, data) => journal.push([kind, data]),
    });
    const created = await manager.create({ id: 'art1' });
    expect(created.setup).toMatchObject({ exitCode: 0 });
    const wt = created.path;
    const git = createGitRunner({ baseEnv: gitTestEnv() });
    expect((await readArtifacts(git, wt)).sort()).toEqual(['.venv', 'build']);
    expect(journal.find(([k]) => k === 'worktree.setup_artifacts')?.[1]).toMatchObject({ id: 'art1', count: 2 });

    // The worker fixes the code, adds a module and a new test folder.
    writeFileSync(join(wt, 'calc.py'), 'def add(a, b):\n    return a + b\n');
    writeFileSync(join(wt, 'util.py'), 'X = 1\n');
    mkdirSync(join(wt, 'more_tests'));
    writeFileSync(join(wt, 'more_tests/test_util.py'), 'from util import X\n');
    // The checks run (as run_acceptance brackets them): bytecode beside tracked tests, a report at the
    // top, and bytecode inside the worker's new folder (untracked before: not looked into, committed).
    const before = await untrackedPaths(git, wt);
    mkdirSync(join(wt, 'tests/__pycache__'));
    writeFileSync(join(wt, 'tests/__pycache__/test_calc.cpython-311.pyc'), 'bytecode');
    writeFileSync(join(wt, '.coverage'), `token=${GITHUB_TOKEN}\n`);
    mkdirSync(join(wt, 'more_tests/__pycache__'));
    writeFileSync(join(wt, 'more_tests/__pycache__/test_util.pyc'), 'bytecode');
    expect((await recordArtifacts(git, wt, before)).sort()).toEqual(['.coverage', 'tests/__pycache__']);
    expect((await readArtifacts(git, wt)).sort()).toEqual(['.coverage', '.venv', 'build', 'tests/__pycache__']);

    // The secret scan before the commit does not read an artifact (it is never committed).
    const base = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: wt, encoding: 'utf8' }).trim();
    expect((await scanForSecrets({ git, cwd: wt, base, head: null })).findings).toEqual([]);

    const commit = await manager.commitAll({ id: 'art1', message: 'Fix add' });
    expect(commit).not.toBeNull();
    const files = execFileSync('git', ['show', '--name-only', '--format=', commit!], { cwd: wt, encoding: 'utf8' }).trim().split('\n').sort();
    expect(files).toEqual(['calc.py', 'more_tests/__pycache__/test_util.pyc', 'more_tests/test_util.py', 'util.py']);
    expect(journal.find(([k]) => k === 'worktree.artifacts_left_out')?.[1]).toMatchObject({ id: 'art1', count: 4 });
    // Left in the worktree, untracked: nothing of them is lost.
    expect(execFileSync('git', ['status', '--porcelain', '--untracked-files=normal'], { cwd: wt, encoding: 'utf8' }).split('\n').filter(Boolean).sort()).toEqual([
      '?? .coverage',
      '?? .venv/',
      '?? build/',
      '?? tests/__pycache__/',
    ]);
  }, 60_000);

  it('setup and checks that make ignored paths (node_modules, dist, target, *.egg-info, *.pyc) still commit: no ignored path is named to git add', async () => {
    // The regression of issue 35: the artifacts record lists ignored paths too, and an exclude
    // pathspec naming an ignored path makes `git add` refuse the whole add (exit 1).
    const repo = createTestRepo({
      '.gitignore': 'node_modules/\n/dist\ntarget/\n*.egg-info\n*.pyc\n',
      'src/calc.js': 'export const add = (a, b) => a - b;\n',
    });
    const manager = createWorktreeManager({ repoRoot: repo.dir, setupCommand: 'mkdir -p node_modules/dep && echo x > node_modules/dep/index.js' });
    const created = await manager.create({ id: 'ign1' });
    expect(created.setup).toMatchObject({ exitCode: 0 });
    const wt = created.path;
    const git = createGitRunner({ baseEnv: gitTestEnv() });
    writeFileSync(join(wt, 'src/calc.js'), 'export const add = (a, b) => a + b;\n');
    const before = await untrackedPaths(git, wt);
    for (const d of ['dist', 'target/debug', 'calc.egg-info', 'src/__cache__']) mkdirSync(join(wt, d), { recursive: true });
    writeFileSync(join(wt, 'dist/calc.js'), 'built');
    writeFileSync(join(wt, 'target/debug/calc'), 'binary');
    writeFileSync(join(wt, 'calc.egg-info/PKG-INFO'), 'Name: calc');
    writeFileSync(join(wt, 'src/calc.pyc'), 'bytecode'); // an ignored file inside a tracked directory
    writeFileSync(join(wt, 'src/__cache__/c.json'), '{}'); // not ignored: left out as an artifact
    await recordArtifacts(git, wt, before);
    expect((await readArtifacts(git, wt)).sort()).toEqual(['calc.egg-info', 'dist', 'node_modules', 'src/__cache__', 'src/calc.pyc', 'target']);

    const commit = await manager.commitAll({ id: 'ign1', message: 'Fix add' });
    expect(commit).not.toBeNull();
    expect(execFileSync('git', ['show', '--name-only', '--format=', commit!], { cwd: wt, encoding: 'utf8' }).trim()).toBe('src/calc.js');
    expect(execFileSync('git', ['status', '--porcelain', '--untracked-files=normal'], { cwd: wt, encoding: 'utf8' }).split('\n').filter(Boolean)).toEqual(['?? src/__cache__/']);
  }, 60_000);

  it("a check that un-ignores the worker's own file during the run does not get it recorded (it is committed)", async () => {
    const repo = createTestRepo({ 'README.md': 'x\n' });
    const manager = createWorktreeManager({ repoRoot: repo.dir });
    const wt = (await manager.create({ id: 'art2' })).path;
    const git = createGitRunner({ baseEnv: gitTestEnv() });
    // The worker's turn: lib/ ignored by its own .gitignore, a module in it that its check needs.
    writeFileSync(join(wt, '.gitignore'), 'lib/\n');
    mkdirSync(join(wt, 'lib'));
    writeFileSync(join(wt, 'lib/helper.js'), 'exports.ok = true;\n');
    // The check (worker-written) rewrites .gitignore while Polly runs it, so lib/ shows up as untracked.
    const before = await untrackedPaths(git, wt);
    writeFileSync(join(wt, '.gitignore'), 'nothing-here\n');
    expect(await recordArtifacts(git, wt, before)).toEqual([]);
    const commit = await manager.commitAll({ id: 'art2', message: 'Add the helper' });
    const files = execFileSync('git', ['show', '--name-only', '--format=', commit!], { cwd: wt, encoding: 'utf8' }).trim().split('\n').sort();
    expect(files).toEqual(['.gitignore', 'lib/helper.js']);
  }, 60_000);

  it('isArtifact matches a recorded path and what lies below it, nothing else', () => {
    expect(['.venv', '.venv/bin/python', 'build/x', '.venvx', 'src/.venv'].map((p) => isArtifact(p, ['.venv', 'build']))).toEqual([true, true, true, false, false]);
  });
});
