/**
 * Worktrees do not pollute the user's tools (issue 15, item 6): with three worker worktrees in
 * `.worktrees/`, a bare `node --test` in the user's repository runs every copy; `polly init` names
 * the fix for node --test, vitest and eslint, and the fix makes `node --test` run only the user's
 * own test. Real git worktrees, the real node test runner, the real CLI.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGitRunner } from '../../../workers/git/git.js';
import { createWorktreeManager } from '../../../workers/git/worktree-manager.js';
import { detectToolExclusions } from '../../../brain/config/tool-exclusions.js';
import { worktreesCollectedCheck } from '../../../brain/commands/doctor.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { packageRoot } from '../../../brain/core/install-paths.js';
import { probeSandbox } from '../../../workers/sandbox/sandbox.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { runCli } from '../../helpers/registry-cli.js';

/** How many tests `node --test [args]` ran in `cwd` (its TAP summary line `# tests N`); `args` go through sh, so globs expand as in a package.json script. */
function nodeTestCount(cwd: string, args: string[]): number {
  const r = spawnSync('sh', ['-c', `"${process.execPath}" --test ${args.join(' ')}`], { cwd, env: gitTestEnv(), encoding: 'utf8', timeout: 120_000 });
  const m = /^# tests (\d+)$/m.exec(r.stdout);
  if (!m) throw new Error(`node --test printed no summary:\n${r.stdout}\n${r.stderr}`);
  return Number(m[1]);
}

describe('worktrees and the user tools', () => {
  it('three worktrees present: bare node --test runs 4 tests; polly init writes the exclusions (the script names its test files, vitest excludes .worktrees/), eslint is advised; the written command runs only the user test', {
    timeout: 180_000,
  }, async () => {
    const repo = createTestRepo({
      'package.json': JSON.stringify({ name: 'user', type: 'module', scripts: { test: 'node --test' } }, null, 2),
      'test/one.test.js': "import test from 'node:test';\ntest('one', () => {});\n",
      'vitest.config.js': 'export default { test: {} };\n',
      'eslint.config.js': 'export default [];\n',
    });
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ env: { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } }) });
    for (const id of ['w1', 'w2', 'w3']) await manager.create({ id });
    // The pollution the issue saw: the worktrees' copies run too.
    expect(nodeTestCount(repo.dir, [])).toBe(4);

    const init = runCli(['init'], repo.dir);
    expect(init.code).toBe(0);
    // Diagnostics on stderr, prefixed; stdout starts with the result. The exclusions are written.
    expect(init.stderr).toContain('polly init: wrote into package.json (scripts.test) so node --test skips the worker worktrees in .worktrees/: "node --test test/*.test.js"');
    expect(init.stderr).toContain(
      "polly init: wrote into vitest.config.js so vitest skips the worker worktrees in .worktrees/: test.exclude: [...configDefaults.exclude, '.worktrees/**']",
    );
    expect(init.stderr).toContain("polly init: note: eslint (eslint.config.js) will also see the worker worktrees in .worktrees/: add { ignores: ['.worktrees/**'] }");
    expect(init.stdout).not.toContain('will also see');
    expect(init.stdout).toMatch(/^Initialised Polly in /);
    expect(readFileSync(join(repo.dir, 'vitest.config.js'), 'utf8')).toBe(
      "import { configDefaults } from 'vitest/config';\nexport default { test: { exclude: [...configDefaults.exclude, '.worktrees/**'] } };\n",
    );
    // The written script runs only the user's own test, with the three worktrees present.
    const script = (JSON.parse(readFileSync(join(repo.dir, 'package.json'), 'utf8')) as { scripts: { test: string } }).scripts.test;
    expect(script).toBe('node --test test/*.test.js');
    expect(nodeTestCount(repo.dir, ['test/*.test.js'])).toBe(1);
    expect(
      detectToolExclusions(repo.dir)
        .filter((t) => !t.excluded)
        .map((t) => t.tool),
    ).toEqual(['eslint']);
  });

  it('worktrees.dir beside the repository: three worktrees there, bare node --test runs only the user test, git admin and cleanup work, polly doctor is content', {
    timeout: 180_000,
  }, async () => {
    const repo = createTestRepo({
      'package.json': JSON.stringify({ name: 'user', type: 'module', scripts: { test: 'node --test' }, devDependencies: { vitest: '4' } }, null, 2),
      'test/one.test.js': "import test from 'node:test';\ntest('one', () => {});\n",
      'eslint.config.js': 'export default [];\n',
    });
    // --no-exclusions: the configs are left as they are, so doctor's advice below has something to name.
    expect(runCli(['init', '--no-exclusions'], repo.dir).code).toBe(0);
    const config = join(repo.dir, '.polly/config.yaml');
    writeFileSync(config, readFileSync(config, 'utf8').replace('dir: .worktrees', 'dir: ../repo.polly-worktrees'));
    const outside = join(repo.root, 'repo.polly-worktrees');
    const manager = createWorktreeManager({
      repoRoot: repo.dir,
      worktreesDir: '../repo.polly-worktrees',
      git: createGitRunner({ env: { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } }),
    });
    for (const id of ['w1', 'w2', 'w3']) expect((await manager.create({ id })).path).toBe(join(outside, id));
    expect(nodeTestCount(repo.dir, [])).toBe(1);
    // Nothing was added to .git/info/exclude for a directory git never sees.
    expect(readFileSync(join(repo.dir, '.git/info/exclude'), 'utf8')).not.toContain('polly-worktrees');
    expect(
      (await manager.list())
        .filter((w) => w.taskId !== null)
        .map((w) => w.path)
        .sort(),
    ).toEqual(['w1', 'w2', 'w3'].map((id) => join(outside, id)));
    await manager.remove({ id: 'w2', reason: 'test' });
    expect(existsSync(join(outside, 'w2'))).toBe(false);
    expect(repo.git(['worktree', 'list', '--porcelain'])).not.toContain('w2');
    const doctor = runCli(['doctor', '--json'], repo.dir);
    const check = (JSON.parse(doctor.stdout) as { checks: Array<{ id: string; status: string; detail: string }> }).checks.find((c) => c.id === 'worktrees-visible');
    expect(check).toEqual({ id: 'worktrees-visible', status: 'ok', detail: `worktrees live outside the repository (${outside}): no tool of the repository crawls them` });
    // The same repository with the default: doctor names each tool that would crawl .worktrees/, with its exclusion.
    writeFileSync(config, readFileSync(config, 'utf8').replace('dir: ../repo.polly-worktrees', 'dir: .worktrees'));
    const inside = (JSON.parse(runCli(['doctor', '--json'], repo.dir).stdout) as { checks: Array<{ id: string; status: string; detail: string; fix: string }> }).checks.find(
      (c) => c.id === 'worktrees-visible',
    )!;
    expect(inside.status).toBe('problem');
    expect(inside.detail).toBe(
      ['vitest (package.json)', 'eslint (eslint.config.js)', 'node --test (package.json (scripts.test))']
        .map((t) => `${t} will also run the tests of every worker worktree under .worktrees/`)
        .join('; '),
    );
    expect(inside.fix).toContain("eslint: add { ignores: ['.worktrees/**'] } to the exported config array");
    expect(inside.fix).toContain('set worktrees.dir: ../repo.polly-worktrees');
  });

  it('polly doctor proves it with the runners themselves: before init vitest list, pytest --collect-only and node --test name the probe worktree; after init none does', {
    timeout: 240_000,
  }, async () => {
    const repo = createTestRepo({
      '.gitignore': 'node_modules\n',
      'package.json': JSON.stringify({ name: 'user', type: 'module', scripts: { test: 'node --test', unit: 'vitest run' }, devDependencies: { vitest: '4' } }, null, 2),
      'vitest.config.mjs': "import { defineConfig } from 'vitest/config';\n\nexport default defineConfig({ test: { include: ['**/*.test.js'] } });\n",
      'test/one.test.js': "import test from 'node:test';\ntest('one', () => {});\n",
      'pyproject.toml': '[project]\nname = "user"\n\n[tool.pytest.ini_options]\nnorecursedirs = ["build"]\n',
      'tests/test_user.py': 'def test_user():\n    pass\n',
    });
    // The real vitest, as npm ci would install it: Polly's own, linked into a node_modules of the
    // checkout's own (vite writes its config bundle into node_modules/.vite-temp).
    mkdirSync(join(repo.dir, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(join(packageRoot(), 'node_modules', 'vitest'), join(repo.dir, 'node_modules', 'vitest'));
    symlinkSync('../vitest/vitest.mjs', join(repo.dir, 'node_modules', '.bin', 'vitest'));
    const env = gitTestEnv();
    const sandbox = probeSandbox();
    const config = structuredClone(DEFAULT_CONFIG);
    config.workers.allow_unconfined = !sandbox.ok;
    config.acceptance.commands = ['python3 -m pytest'];
    const before = await worktreesCollectedCheck(repo.dir, config, env, sandbox);
    expect(before.status, before.detail).toBe('problem');
    expect(before.detail).toContain('node --test (scripts.test) runs .worktrees/polly-collect-probe/polly-collect-probe.test.js');
    expect(before.detail).toContain('vitest collects .worktrees/polly-collect-probe/polly-collect-probe.test.js');
    const pytest = spawnSync('python3', ['-m', 'pytest', '--version']).status === 0;
    if (pytest) expect(before.detail).toContain('pytest collects .worktrees/polly-collect-probe/test_polly_collect_probe.py');
    expect(before.fix).toContain('run polly init again');
    // The probe is gone, and so is the .worktrees/ it made.
    expect(existsSync(join(repo.dir, '.worktrees'))).toBe(false);

    const init = runCli(['init'], repo.dir);
    expect(init.code, init.stderr).toBe(0);
    expect(readFileSync(join(repo.dir, 'vitest.config.mjs'), 'utf8')).toContain("exclude: [...configDefaults.exclude, '.worktrees/**'], include:");
    expect(readFileSync(join(repo.dir, 'pyproject.toml'), 'utf8')).toContain('norecursedirs = [".worktrees", "build"]');
    const after = await worktreesCollectedCheck(repo.dir, config, env, sandbox);
    expect(after.status, after.detail).toBe('ok');
    expect(after.detail).toMatch(/^nothing under \.worktrees\/ is collected: node --test \(scripts\.test\): 1 file\(s\); node_modules\/\.bin\/vitest list --filesOnly \(exit \d\)/);
  });

  it('worktrees.dir cannot be the repository itself or contain it, nor lie inside .git or .polly', async () => {
    const repo = createTestRepo();
    for (const dir of ['.', '..', '.git/wt', '.polly/wt']) {
      await expect(createWorktreeManager({ repoRoot: repo.dir, worktreesDir: dir }).list()).rejects.toThrow(/worktrees\.dir .* cannot hold worktrees/);
    }
  });

  it('a config that already excludes .worktrees is not reported', () => {
    const repo = createTestRepo({ 'vitest.config.ts': "export default { test: { exclude: ['.worktrees/**'] } };\n", 'jest.config.js': 'module.exports = {};\n' });
    expect(detectToolExclusions(repo.dir).map((t) => [t.tool, t.excluded])).toEqual([
      ['vitest', true],
      ['jest', false],
    ]);
  });
});
