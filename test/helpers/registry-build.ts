// Tests that spawn compiled code (child processes, the CLI) need dist/. `npm test` builds first;
// when a test file runs alone on a fresh clone, build once here.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Build dist/ with tsc when `dist/brain/cli.js` or `dist/brain/registry/registry-store.js` is missing. */
export function ensureBuilt(): void {
  if (existsSync(`${ROOT}dist/brain/cli.js`) && existsSync(`${ROOT}dist/brain/registry/registry-store.js`)) return;
  try {
    execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, '-p', `${ROOT}tsconfig.json`], { cwd: ROOT, stdio: 'pipe' });
  } catch {
    // tsc exits non-zero on type errors elsewhere but still emits; the existence check below decides.
  }
  execFileSync(process.execPath, [`${ROOT}scripts/post-build.mjs`], { cwd: ROOT, stdio: 'pipe' });
  if (!existsSync(`${ROOT}dist/brain/registry/registry-store.js`)) throw new Error('build failed: dist/brain/registry/registry-store.js was not emitted');
}
