/**
 * `polly init` writes the `.worktrees/` exclusion for each test runner it finds
 * (./tool-exclusions.ts says which would crawl the worker worktrees), so the project's own test
 * run from the repository root never collects a worker's half-done copy (issue 35 item 7):
 * - vitest: `test.exclude: [...configDefaults.exclude, '.worktrees/**']` inserted into the config's
 *   `test: {` block (or a `test:` block added to `defineConfig({`), `configDefaults` imported from
 *   `vitest/config`; with no config at all, a `vitest.config.mts` holding only that
 *   (https://vitest.dev/config/#exclude);
 * - jest: `testPathIgnorePatterns` and `modulePathIgnorePatterns` with `<rootDir>/.worktrees/`
 *   (the second keeps jest's module map free of the worktrees' package.json copies) in
 *   package.json's `jest` key, `jest.config.json`, or after `module.exports = {` / `export default {`
 *   (https://jestjs.io/docs/configuration#testpathignorepatterns-arraystring);
 * - `node --test` without arguments: the script names its test files by shell globs instead
 *   (./node-test-files.ts: Node 20 searches dot directories and reads no globs itself);
 * - pytest with its own `norecursedirs`: `.worktrees` appended to that one-line list.
 * A config Polly cannot edit safely (a `test.exclude` already set, a CommonJS vitest config, a
 * multi-line list) is left as it is, and the exclusion to add is said instead. eslint is only advised.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeTestFiles, shellGlobs } from './node-test-files.js';
import { detectToolExclusions, type ToolExclusion } from './tool-exclusions.js';

/** What was done for one tool. */
export interface WrittenExclusion {
  tool: ToolExclusion['tool'];
  /** The file written, created, or that needs the change. */
  file: string;
  /** `written` (an existing file edited), `created` (a new file), or `advised` (not edited: `detail` says what to add). */
  action: 'written' | 'created' | 'advised';
  /** What changed, or why not and the exclusion to add by hand. */
  detail: string;
}

const read = (root: string, file: string): string | null => {
  try {
    return readFileSync(join(root, file), 'utf8');
  } catch {
    return null;
  }
};

/** A JSON file's indentation (two spaces when it cannot tell). */
function indentOf(text: string): string | number {
  return text.match(/\n([ \t]+)"/)?.[1] ?? 2;
}

function editJson(root: string, file: string, edit: (value: Record<string, unknown>) => void): boolean {
  const text = read(root, file);
  if (text === null) return false;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  edit(value as Record<string, unknown>);
  writeFileSync(join(root, file), `${JSON.stringify(value, null, indentOf(text))}\n`);
  return true;
}

function withPattern(list: unknown, fallback: string[], pattern: string): string[] {
  const base = Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : fallback;
  return base.includes(pattern) ? base : [...base, pattern];
}

/** Add `configDefaults` to a vitest config's imports: into an existing `from 'vitest/config'` import, else a new line on top. */
function importConfigDefaults(text: string): string {
  if (/import[^;]*\bconfigDefaults\b/.test(text)) return text;
  const named = /import\s*\{([^}]*)\}\s*from\s*(['"])vitest\/config\2/;
  if (named.test(text)) return text.replace(named, (m, names: string) => m.replace(`{${names}}`, `{${names.replace(/\s*$/, '')}, configDefaults }`).replace('{ ,', '{'));
  return `import { configDefaults } from 'vitest/config';\n${text}`;
}

function writeVitest(root: string, t: ToolExclusion, dir: string): WrittenExclusion {
  const entry = `'${dir}/**'`;
  const exclude = `exclude: [...configDefaults.exclude, ${entry}]`;
  if (t.file === 'package.json') {
    const file = 'vitest.config.mts';
    if (existsSync(join(root, file))) return { tool: t.tool, file, action: 'advised', detail: t.fix };
    writeFileSync(
      join(root, file),
      `// Written by "polly init": vitest's defaults, but not the worker worktrees in ${dir}/.\nimport { configDefaults, defineConfig } from 'vitest/config';\n\nexport default defineConfig({ test: { ${exclude} } });\n`,
    );
    return { tool: t.tool, file, action: 'created', detail: `test.${exclude}` };
  }
  const text = read(root, t.file) ?? '';
  const cjs = /\.c[jt]s$/.test(t.file) || /\brequire\(/.test(text);
  const advise = (why: string): WrittenExclusion => ({ tool: t.tool, file: t.file, action: 'advised', detail: `${why}: add ${t.fix}` });
  if (cjs) return advise('a CommonJS config is not edited');
  if (/\bexclude\s*:/.test(text)) return advise('it sets its own exclude list, which Polly does not edit');
  let edited: string | null = null;
  if (/\btest\s*:\s*\{/.test(text)) edited = text.replace(/\btest\s*:\s*\{(\s*\})?/, (m, empty?: string) => (empty ? `test: { ${exclude} }` : `${m} ${exclude},`));
  else if (/defineConfig\(\s*\{/.test(text)) edited = text.replace(/defineConfig\(\s*\{/, (m) => `${m}\n  test: { ${exclude} },`);
  if (edited === null) return advise('no `test: {` block or `defineConfig({` found to add it to');
  writeFileSync(join(root, t.file), importConfigDefaults(edited));
  return { tool: t.tool, file: t.file, action: 'written', detail: `test.${exclude}` };
}

function writeJest(root: string, t: ToolExclusion, dir: string): WrittenExclusion {
  const pattern = `<rootDir>/${dir}/`;
  const detail = `testPathIgnorePatterns and modulePathIgnorePatterns gained "${pattern}"`;
  const set = (config: Record<string, unknown>) => {
    config.testPathIgnorePatterns = withPattern(config.testPathIgnorePatterns, ['/node_modules/'], pattern);
    config.modulePathIgnorePatterns = withPattern(config.modulePathIgnorePatterns, [], pattern);
  };
  if (t.file === 'package.json') {
    const ok = editJson(root, 'package.json', (pkg) => {
      const jest = typeof pkg.jest === 'object' && pkg.jest !== null ? (pkg.jest as Record<string, unknown>) : {};
      set(jest);
      pkg.jest = jest;
    });
    return ok ? { tool: t.tool, file: 'package.json (jest)', action: 'written', detail } : { tool: t.tool, file: t.file, action: 'advised', detail: t.fix };
  }
  if (t.file.endsWith('.json')) {
    return editJson(root, t.file, set) ? { tool: t.tool, file: t.file, action: 'written', detail } : { tool: t.tool, file: t.file, action: 'advised', detail: t.fix };
  }
  const text = read(root, t.file) ?? '';
  const head = /(module\.exports\s*=|export\s+default)\s*\{/;
  if (/PathIgnorePatterns/.test(text) || !head.test(text))
    return { tool: t.tool, file: t.file, action: 'advised', detail: `not edited (its own ignore patterns, or no plain object export): add ${t.fix}` };
  writeFileSync(
    join(root, t.file),
    text.replace(head, (m) => `${m}\n  testPathIgnorePatterns: ['/node_modules/', '${pattern}'],\n  modulePathIgnorePatterns: ['${pattern}'],`),
  );
  return { tool: t.tool, file: t.file, action: 'written', detail };
}

function writeNodeTest(root: string, t: ToolExclusion, dir: string): WrittenExclusion {
  const script = t.file.match(/scripts\.(.+)\)$/)?.[1];
  const files = nodeTestFiles(root).filter((f) => !f.startsWith(`${dir}/`));
  const globs = shellGlobs(files);
  if (!script || globs.length === 0) return { tool: t.tool, file: t.file, action: 'advised', detail: `no test file found to name: ${t.fix}` };
  let command = '';
  const ok = editJson(root, 'package.json', (pkg) => {
    const scripts = pkg.scripts as Record<string, string>;
    command = scripts[script]!.replace(/--test\b/, `--test ${globs.join(' ')}`);
    scripts[script] = command;
  });
  if (!ok) return { tool: t.tool, file: t.file, action: 'advised', detail: t.fix };
  return { tool: t.tool, file: t.file, action: 'written', detail: `"${command}" (shell globs: a new test directory needs adding)` };
}

function writePytest(root: string, t: ToolExclusion, dir: string): WrittenExclusion {
  const text = read(root, t.file) ?? '';
  const toml = /^(\s*norecursedirs\s*=\s*\[)([^\]\n]*\])/m;
  const ini = /^(\s*norecursedirs\s*=[ \t]*)(\S[^\n]*)$/m;
  let edited: string | null = null;
  if (t.file.endsWith('.toml')) {
    if (toml.test(text)) edited = text.replace(toml, (_m, open: string, rest: string) => `${open}"${dir}", ${rest}`);
  } else if (ini.test(text)) edited = text.replace(ini, (_m, key: string, list: string) => `${key}${list} ${dir}`);
  if (edited === null) return { tool: t.tool, file: t.file, action: 'advised', detail: `a multi-line norecursedirs is not edited: ${t.fix}` };
  writeFileSync(join(root, t.file), edited);
  return { tool: t.tool, file: t.file, action: 'written', detail: `norecursedirs gained ${dir}` };
}

/**
 * Write the worktrees exclusion for each tool in `root` that would crawl `<root>/<worktreesDir>`
 * (see the module doc). Idempotent: a tool that already excludes it is not touched.
 * @param worktreesDir the worktrees directory relative to the root (default `.worktrees`).
 * @returns one entry per tool that needed it: what was written, or what to add by hand.
 */
export function writeToolExclusions(root: string, worktreesDir = '.worktrees'): WrittenExclusion[] {
  const out: WrittenExclusion[] = [];
  for (const t of detectToolExclusions(root, worktreesDir).filter((e) => !e.excluded)) {
    if (t.tool === 'vitest') out.push(writeVitest(root, t, worktreesDir));
    else if (t.tool === 'jest') out.push(writeJest(root, t, worktreesDir));
    else if (t.tool === 'node --test') out.push(writeNodeTest(root, t, worktreesDir));
    else if (t.tool === 'pytest') out.push(writePytest(root, t, worktreesDir));
    else out.push({ tool: t.tool, file: t.file, action: 'advised', detail: t.fix });
  }
  return out;
}
