/**
 * Worktrees do not pollute the user's tools (issue 15, item 6): with three worker worktrees in
 * `.worktrees/`, a bare `node --test` in the user's repository runs every copy; `polly init` names
 * the fix for node --test, vitest and eslint, and the fix makes `node --test` run only the user's
 * own test. Real git worktrees, the real node test runner, the real CLI.
 */
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { createGitRunner } from '../../workers/git/git.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';
import { detectToolExclusions } from '../../brain/config/tool-exclusions.js';
import { createTestRepo, gitTestEnv } from '../helpers/git-repo.js';
import { ensureBuilt } from '../helpers/registry-build.js';
import { runCli } from '../helpers/registry-cli.js';

/** How many tests `node --test [args]` ran in `cwd` (its TAP summary line `# tests N`). */
function nodeTestCount(cwd: string, args: string[]): number {
  const r = spawnSync(process.execPath, ['--test', ...args], { cwd, env: gitTestEnv(), encoding: 'utf8', timeout: 120_000 });
  const m = /^# tests (\d+)$/m.exec(r.stdout);
  if (!m) throw new Error(`node --test printed no summary:\n${r.stdout}\n${r.stderr}`);
  return Number(m[1]);
}

describe('worktrees and the user tools', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it('three worktrees present: bare node --test runs 4 tests; polly init names the fixes; the fixed command runs only the user test', { timeout: 180_000 }, async () => {
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
    expect(init.stdout).toContain('node --test (package.json (scripts.test)) will also see the worker worktrees in .worktrees/');
    expect(init.stdout).toContain("vitest (vitest.config.js) will also see the worker worktrees in .worktrees/: test: { exclude: [...configDefaults.exclude, '.worktrees/**'] }");
    expect(init.stdout).toContain("eslint (eslint.config.js) will also see the worker worktrees in .worktrees/: add { ignores: ['.worktrees/**'] }");
    // Following the advice for node --test: name the test files; only the user's own test runs.
    const fix = detectToolExclusions(repo.dir).find((t) => t.tool === 'node --test')!.fix;
    expect(fix).toContain('"node --test test/"');
    expect(nodeTestCount(repo.dir, ['test/'])).toBe(1);
  });

  it('a config that already excludes .worktrees is not reported', () => {
    const repo = createTestRepo({ 'vitest.config.ts': "export default { test: { exclude: ['.worktrees/**'] } };\n", 'jest.config.js': 'module.exports = {};\n' });
    expect(detectToolExclusions(repo.dir).map((t) => [t.tool, t.excluded])).toEqual([
      ['vitest', true],
      ['jest', false],
    ]);
  });
});
