/**
 * Vitest global setup: the tests that spawn compiled code (the CLI, child processes, the gate's
 * hooks) run `dist/`, so before any test file runs, `dist/` must be the build of the sources on
 * disk. The last successful build recorded a hash of its inputs (scripts/build-stamp.ts); when the
 * sources hash differently (an edited file, a checkout, no dist/ at all) this builds once, as
 * `npm run build` would, and fails the run with tsc's output when the build fails. So one test
 * file run alone after an edit tests the edit, and `npm test` builds only when it must (CI's
 * `npm ci` has already built through `prepare`).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { builtHash, ROOT, sourcesHash } from '../../scripts/build-stamp.js';

/** True when dist/ was not built from the sources on disk. */
export function distIsStale(): boolean {
  return builtHash() !== sourcesHash().hash;
}

/** Builds dist/ when it is stale (below). */
export default function setup(): void {
  build();
}

function build(): void {
  if (!distIsStale()) return;
  const started = Date.now();
  process.stderr.write('test setup: dist/ is not the build of the current sources; building (npm run build)…\n');
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.json')], { cwd: ROOT, encoding: 'utf8' });
  if (tsc.status !== 0) {
    throw new Error(`test setup: the build failed (tsc -p tsconfig.json, exit ${tsc.status}); fix it and run the tests again:\n${tsc.stdout}${tsc.stderr}`);
  }
  const post = spawnSync(process.execPath, [join(ROOT, 'scripts/post-build.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (post.status !== 0) throw new Error(`test setup: scripts/post-build.mjs failed (exit ${post.status}):\n${post.stdout}${post.stderr}`);
  process.stderr.write(`test setup: built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
