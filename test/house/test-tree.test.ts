/**
 * The test tree mirrors the source tree: a test of `brain/forge/x.ts` lives in `test/brain/forge/`.
 * For every `*.test.ts` under `test/brain|workers|gate|workflows/` (the other test folders —
 * e2e/, confinement/, house/, helpers/, fixtures/, scripts/ — group tests by kind, not by source):
 * - its folder, without `test/`, is a source folder that holds TypeScript files;
 * - a test named after a source file (`x.test.ts` for a `x.ts` found once in the four rooms) sits
 *   in that file's mirror folder;
 * - a test at the top of a room (`test/brain/x.test.ts`) imports a module from the top of that
 *   room, so a room's top cannot fill up again with tests of its sub-folders; the exceptions are
 *   listed below with their reason.
 * The checker functions are also run on planted misplacements, so the test cannot pass by scanning
 * nothing.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const ROOMS = ['brain', 'workers', 'gate', 'workflows'];

/**
 * Tests at the top of a room that import nothing from it, with the reason. Both drive the built
 * `polly` bin, `brain/cli.ts`, as a process (the top of `brain/`), so they import no module.
 */
const TOP_LEVEL_EXCEPTIONS: Record<string, string> = {
  'test/brain/cli-basics.test.ts': 'the `polly` bin (brain/cli.ts) run as a process: version, help, exit codes',
  'test/brain/npm-link.test.ts': 'the `polly` bin (brain/cli.ts) as `npm link` installs it',
};

function walk(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...walk(path, keep));
    else if (keep(name)) out.push(path);
  }
  return out;
}

const repoPath = (abs: string) => relative(ROOT, abs).split(sep).join('/');

/** The source tree as repo-relative `.ts` paths (no `.d.ts`). */
function sourceFiles(): string[] {
  return ROOMS.flatMap((room) => walk(join(ROOT, room), (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'))).map(repoPath);
}

/** Relative import specifiers of a test file's source (static, dynamic and re-exports). */
function specifiers(source: string): string[] {
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g;
  return [...source.matchAll(re)].map((m) => m[2]!);
}

/**
 * Where the test file `test` (repo-relative, e.g. `test/brain/x.test.ts`) breaks the mirror rule,
 * given the source files (repo-relative) and the test's text; one line per broken rule.
 */
function misplacement(test: string, sources: string[], text: string): string[] {
  const problems: string[] = [];
  const folder = dirname(test).replace(/^test\//, '');
  const room = folder.split('/')[0]!;
  const sourceFolders = new Set(sources.map((s) => dirname(s)));
  if (!sourceFolders.has(folder)) problems.push(`${test}: no source folder ${folder}/ (move it to the folder of the source it tests)`);
  const name = basename(test).replace(/\.test\.ts$/, '');
  const namesakes = sources.filter((s) => basename(s) === `${name}.ts`);
  if (namesakes.length === 1 && dirname(namesakes[0]!) !== folder) {
    problems.push(`${test}: named after ${namesakes[0]}, so it belongs in test/${dirname(namesakes[0]!)}/`);
  }
  if (folder === room && !(test in TOP_LEVEL_EXCEPTIONS)) {
    const testDir = join(ROOT, dirname(test));
    const topModules = specifiers(text)
      .map((s) => repoPath(resolve(testDir, s)).replace(/\.js$/, '.ts'))
      .filter((t) => dirname(t) === room);
    if (topModules.length === 0) problems.push(`${test}: at the top of ${room}/ but imports nothing from there (move it to the sub-folder of what it tests)`);
  }
  return problems;
}

describe('the house: the test tree mirrors the source tree', () => {
  it('every test under test/brain|workers|gate|workflows sits in the mirror folder of its source', () => {
    const sources = sourceFiles();
    const tests = ROOMS.flatMap((room) => walk(join(ROOT, 'test', room), (n) => n.endsWith('.test.ts')));
    expect(tests.length).toBeGreaterThan(100);
    const problems = tests.flatMap((t) => misplacement(repoPath(t), sources, readFileSync(t, 'utf8')));
    expect(problems).toEqual([]);
    for (const listed of Object.keys(TOP_LEVEL_EXCEPTIONS)) expect(existsSync(join(ROOT, listed)), `${listed} is listed as an exception but missing`).toBe(true);
  });

  it('the check bites: a flat test, a folder with no source, a namesake elsewhere are reported; a mirrored test is not', () => {
    const sources = ['brain/cli.ts', 'brain/forge/github-forge.ts', 'brain/forge/pr-body.ts', 'workers/git/secret-scan.ts', 'workers/acceptance.ts'];
    const forgeImport = "import { renderPrBody } from '../../brain/forge/pr-body.js';";
    expect(misplacement('test/brain/pr-text.test.ts', sources, forgeImport)).toEqual([
      'test/brain/pr-text.test.ts: at the top of brain/ but imports nothing from there (move it to the sub-folder of what it tests)',
    ]);
    expect(misplacement('test/brain/widgets/w.test.ts', sources, '')).toEqual([
      'test/brain/widgets/w.test.ts: no source folder brain/widgets/ (move it to the folder of the source it tests)',
    ]);
    expect(misplacement('test/brain/forge/secret-scan.test.ts', sources, '')).toEqual([
      'test/brain/forge/secret-scan.test.ts: named after workers/git/secret-scan.ts, so it belongs in test/workers/git/',
    ]);
    expect(misplacement('test/brain/forge/pr-text.test.ts', sources, "import { renderPrBody } from '../../../brain/forge/pr-body.js';")).toEqual([]);
    expect(misplacement('test/workers/acceptance.test.ts', sources, "import { runAcceptance } from '../../workers/acceptance.js';")).toEqual([]);
  });
});
