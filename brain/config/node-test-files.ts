/**
 * The files `node --test` runs, by Node 20's rules (https://nodejs.org/docs/latest-v20.x/api/test.html#running-tests-from-the-command-line):
 * without arguments it searches the working directory recursively, skipping only `node_modules`
 * (dot directories such as `.worktrees/` are searched: checked on Node 20.20), and runs every file
 * named `*.test.{js,cjs,mjs}`, `*-test.*`, `*_test.*`, `test-*.*`, `test.*`, or any `.js`/`.cjs`/`.mjs`
 * file inside a directory named `test`; a directory argument is searched the same way; a file
 * argument is run as it is. Node 20 reads no glob patterns itself (a quoted `test/**` is "Could not
 * find"), so a glob in a package.json script is the shell's: {@link shellGlobs} writes ones that
 * every Node version runs alike.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const JS = /\.(c|m)?js$/;
const NAMED = /(^|[.\-_])test\.(c|m)?js$|^test-.*\.(c|m)?js$|^test\.(c|m)?js$/;

function isTestFile(rel: string): boolean {
  const parts = rel.split('/');
  const base = parts.at(-1)!;
  if (!JS.test(base)) return false;
  return NAMED.test(base) || parts.slice(0, -1).includes('test');
}

/**
 * The files (relative to `root`, sorted) `node --test` run from `root` with `args` would run.
 * @param args the arguments after `--test` as the shell passes them (globs already expanded); [] for none.
 * @param limit stop after this many files (default 5000).
 */
export function nodeTestFiles(root: string, args: readonly string[] = [], limit = 5000): string[] {
  const out = new Set<string>();
  const walk = (dir: string): void => {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (out.size >= limit) return;
      if (name === 'node_modules') continue;
      const p = join(dir, name);
      let dirLike = false;
      try {
        dirLike = statSync(p).isDirectory();
      } catch {
        continue;
      }
      const rel = relative(root, p);
      if (dirLike) walk(p);
      else if (isTestFile(rel)) out.add(rel);
    }
  };
  if (args.length === 0) walk(root);
  for (const a of args) {
    const p = join(root, a);
    try {
      if (statSync(p).isDirectory()) walk(p);
      else out.add(relative(root, p));
    } catch {
      // Node says "Could not find"; nothing to list
    }
  }
  return [...out].sort();
}

/**
 * Shell globs (for `sh`, no braces, no `**`) that name `files` by directory and naming
 * convention: `test/*.test.js`, `test/unit/*.js`, `*_test.js`. A later file of the same kind in
 * the same directory is picked up; one in a new directory is not. Sorted, deduplicated.
 */
export function shellGlobs(files: readonly string[]): string[] {
  const globs = new Set<string>();
  for (const f of files) {
    const parts = f.split('/');
    const base = parts.pop()!;
    const dir = parts.length > 0 ? `${parts.join('/')}/` : '';
    const ext = base.match(JS)?.[0] ?? '.js';
    let pattern: string;
    if (/\.test\.(c|m)?js$/.test(base)) pattern = `*.test${ext}`;
    else if (/-test\.(c|m)?js$/.test(base)) pattern = `*-test${ext}`;
    else if (/_test\.(c|m)?js$/.test(base)) pattern = `*_test${ext}`;
    else if (/^test-/.test(base)) pattern = `test-*${ext}`;
    else if (/^test\./.test(base)) pattern = `test${ext}`;
    else pattern = `*${ext}`;
    globs.add(`${dir}${pattern}`);
  }
  // `dir/*.js` already names `dir/*.test.js`.
  return [...globs]
    .filter((g) => {
      const slash = g.lastIndexOf('/');
      const dir = g.slice(0, slash + 1);
      const ext = g.match(JS)?.[0] ?? '';
      return g === `${dir}*${ext}` || !globs.has(`${dir}*${ext}`);
    })
    .sort();
}
