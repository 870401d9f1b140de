/**
 * Worker worktrees live inside the repository (`.worktrees/<id>`), and test runners and linters
 * that crawl the tree find them: the user's `node --test` runs every worktree's copy of the tests,
 * vitest and jest collect them, eslint lints them. `.git/info/exclude` hides them from git only.
 * This module finds the configs of the common tools in a repository and says, per tool, the exact
 * exclusion to add. Pure apart from reading the repository's files.
 *
 * Defaults it relies on (each tool's documentation):
 * - vitest `test.exclude` defaults to `configDefaults.exclude` (node_modules, .git, …; not
 *   `.worktrees`): https://vitest.dev/config/#exclude
 * - jest `testPathIgnorePatterns` defaults to `["/node_modules/"]`:
 *   https://jestjs.io/docs/configuration#testpathignorepatterns-arraystring
 * - eslint flat config ignores only node_modules and .git by default:
 *   https://eslint.org/docs/latest/use/configure/ignore
 * - `node --test` without arguments searches the whole tree except node_modules:
 *   https://nodejs.org/api/test.html#running-tests-from-the-command-line
 * - pytest `norecursedirs` defaults include `.*`, so `.worktrees` is skipped unless a project
 *   sets its own list: https://docs.pytest.org/en/stable/reference/reference.html#confval-norecursedirs
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One tool whose config was found, and what to add so it skips `.worktrees/`. */
export interface ToolExclusion {
  tool: 'vitest' | 'jest' | 'eslint' | 'node --test' | 'pytest';
  /** The config file (relative to the repository root) that was found. */
  file: string;
  /** True when that config already mentions `.worktrees` (nothing to do). */
  excluded: boolean;
  /** The exact change to make, as the user would write it. */
  fix: string;
}

const read = (root: string, file: string): string | null => {
  try {
    return readFileSync(join(root, file), 'utf8');
  } catch {
    return null;
  }
};

const first = (root: string, files: string[]): string | null => files.find((f) => existsSync(join(root, f))) ?? null;

/**
 * The tools configured in `repoRoot` that would crawl `<repoRoot>/.worktrees`, each with its fix.
 * @param worktreesDir the worktrees directory relative to the root (default `.worktrees`).
 */
export function detectToolExclusions(repoRoot: string, worktreesDir = '.worktrees'): ToolExclusion[] {
  const out: ToolExclusion[] = [];
  const pkgText = read(repoRoot, 'package.json');
  let pkg: { scripts?: Record<string, string>; jest?: unknown; devDependencies?: Record<string, string>; dependencies?: Record<string, string> } = {};
  try {
    pkg = pkgText ? JSON.parse(pkgText) : {};
  } catch {
    pkg = {};
  }
  const mentions = (text: string | null): boolean => text?.includes(worktreesDir) === true;
  /** True when package.json depends on `tool` or a script runs it. */
  const uses = (tool: string): boolean =>
    Boolean(pkg.dependencies?.[tool] ?? pkg.devDependencies?.[tool]) || Object.values(pkg.scripts ?? {}).some((cmd) => new RegExp(`(^|[\\s;&|])${tool}(\\s|$)`).test(cmd));
  const ext = ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs'];

  const vitest =
    first(
      repoRoot,
      ext.map((e) => `vitest.config.${e}`),
    ) ??
    first(
      repoRoot,
      ext.map((e) => `vite.config.${e}`),
    );
  if (vitest && (vitest.startsWith('vitest') || /\btest\s*:/.test(read(repoRoot, vitest) ?? ''))) {
    out.push({
      tool: 'vitest',
      file: vitest,
      excluded: mentions(read(repoRoot, vitest)),
      fix: `test: { exclude: [...configDefaults.exclude, '${worktreesDir}/**'] }  (import { configDefaults } from 'vitest/config')`,
    });
  } else if (vitest && uses('vitest')) {
    // A vite config without a `test` block: vitest reads it, with its default excludes.
    out.push({
      tool: 'vitest',
      file: vitest,
      excluded: false,
      fix: `test: { exclude: [...configDefaults.exclude, '${worktreesDir}/**'] } in its defineConfig({…})  (import { configDefaults } from 'vitest/config')`,
    });
  } else if (!vitest && uses('vitest')) {
    // No config file: vitest runs with its defaults, which crawl every directory but node_modules and .git.
    out.push({
      tool: 'vitest',
      file: 'package.json',
      excluded: false,
      fix: `add vitest.config.ts: export default defineConfig({ test: { exclude: [...configDefaults.exclude, '${worktreesDir}/**'] } })  (import { configDefaults, defineConfig } from 'vitest/config')`,
    });
  }
  // A jest config file, the package.json "jest" key, or jest used with its defaults (which crawl dot directories too).
  const jest = first(repoRoot, ext.map((e) => `jest.config.${e}`).concat('jest.config.json')) ?? (pkg.jest || uses('jest') ? 'package.json' : null);
  if (jest) {
    const text = jest === 'package.json' ? JSON.stringify(pkg.jest) : read(repoRoot, jest);
    out.push({
      tool: 'jest',
      file: jest,
      excluded: mentions(text),
      fix: `testPathIgnorePatterns: ['/node_modules/', '<rootDir>/${worktreesDir}/'], modulePathIgnorePatterns: ['<rootDir>/${worktreesDir}/']`,
    });
  }
  const flat = first(
    repoRoot,
    ext.map((e) => `eslint.config.${e}`),
  );
  if (flat) out.push({ tool: 'eslint', file: flat, excluded: mentions(read(repoRoot, flat)), fix: `add { ignores: ['${worktreesDir}/**'] } to the exported config array` });
  else {
    const legacy = first(repoRoot, ['.eslintrc.js', '.eslintrc.cjs', '.eslintrc.json', '.eslintrc.yaml', '.eslintrc.yml', '.eslintrc']);
    if (legacy) out.push({ tool: 'eslint', file: legacy, excluded: mentions(read(repoRoot, '.eslintignore')), fix: `add the line ${worktreesDir}/ to .eslintignore` });
  }
  const nodeTest = Object.entries(pkg.scripts ?? {}).find(([, cmd]) => /\bnode\s+(?:[^|;&]*\s)?--test\b/.test(cmd) && !/--test\s+\S*[/*]/.test(cmd));
  if (nodeTest) {
    out.push({
      tool: 'node --test',
      file: `package.json (scripts.${nodeTest[0]})`,
      excluded: false,
      // A glob the shell expands: every Node version then gets the same file list (from Node 21 on,
      // node --test reads its arguments as glob patterns, and a bare directory no longer names its files).
      fix: `name your test files instead of letting node --test search the whole tree, e.g. "${nodeTest[1].replace(/--test\b/, '--test test/*.test.js')}"`,
    });
  }
  const pytestFile = first(repoRoot, ['pytest.ini', 'pyproject.toml', 'setup.cfg', 'tox.ini']);
  const pytestText = pytestFile ? read(repoRoot, pytestFile) : null;
  if (
    pytestFile &&
    pytestText &&
    /\[(tool[.:])?pytest/.test(pytestText) &&
    /norecursedirs/.test(pytestText) &&
    !mentions(pytestText) &&
    !/norecursedirs[^\n]*['"\s]\.\*/.test(pytestText)
  ) {
    out.push({ tool: 'pytest', file: pytestFile, excluded: false, fix: `add ${worktreesDir} to norecursedirs (your list replaces pytest's default, which skips .* directories)` });
  }
  return out;
}
