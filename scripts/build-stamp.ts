// The build stamp: one SHA-256 over everything `npm run build` turns into dist/ (the TypeScript
// sources tsconfig.json compiles, tsconfig.json and package.json themselves, and the post-build
// steps with the files they copy). post-build.mjs writes it (from the compiled dist/scripts/build-stamp.js) to dist/.sources-sha256 after a build
// that succeeded; the test run's global setup (test/helpers/build-once.ts) compares it with the
// sources on disk and builds again when they differ, so a test always runs the current sources.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in scripts/). */
export const ROOT = repoRoot(fileURLToPath(new URL('.', import.meta.url)));
/** scripts/ in the sources, dist/scripts/ once compiled: the root is the nearest parent with package.json. */
function repoRoot(dir: string): string {
  let d = dir;
  while (!existsSync(join(d, 'package.json'))) {
    const up = dirname(d);
    if (up === d) throw new Error(`build-stamp: no package.json above ${dir}`);
    d = up;
  }
  return d;
}

/** Where a successful build records the hash of the sources it compiled. */
export const STAMP = join(ROOT, 'dist', '.sources-sha256');

// tsconfig.json's `include` roots; keep in step with it.
const SOURCE_DIRS = ['brain', 'workers', 'gate', 'workflows', 'scripts'];
const EXTRA = ['tsconfig.json', 'package.json', 'scripts/post-build.mjs', 'scripts/bundle-gate.mjs', 'gate/hooks/run-cached.cjs'];

function tsFiles(dir: string, out: string[]): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') tsFiles(p, out);
    } else if (e.isFile() && e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/**
 * The hex SHA-256 of the build's inputs: for each file, in path order, its path relative to the
 * root, a NUL, its bytes, a NUL. Files: every `*.ts` under the tsconfig roots plus EXTRA.
 */
export function sourcesHash(root: string = ROOT): { hash: string; files: number } {
  const files = SOURCE_DIRS.flatMap((d) => (existsSync(join(root, d)) ? tsFiles(join(root, d), []) : []));
  for (const f of EXTRA) if (existsSync(join(root, f))) files.push(join(root, f));
  const rel = [...new Set(files.map((f) => relative(root, f)))].sort();
  const h = createHash('sha256');
  for (const r of rel)
    h.update(r)
      .update('\0')
      .update(readFileSync(join(root, r)))
      .update('\0');
  return { hash: h.digest('hex'), files: rel.length };
}

/** The hash the last successful build recorded, or null when dist/ has none. */
export function builtHash(root: string = ROOT): string | null {
  const p = join(root, 'dist', '.sources-sha256');
  return existsSync(p) ? readFileSync(p, 'utf8').trim() : null;
}
