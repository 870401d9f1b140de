// After tsc: bundle each gate entry point (hooks, shim) into one CommonJS file under
// dist/gate/hooks/bundle/. A worker's hook starts once per tool call, and Node 20 loads one CJS file much
// faster than an ESM graph of ~30 modules, and run-cached.cjs adds a V8 code cache (see
// `npm run bench -- gate`). prepareGate uses the bundles when present and falls back to the ESM
// entry points otherwise.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist/gate/hooks/', import.meta.url));
if (existsSync(`${dist}claude-code-hook.js`)) {
  let build;
  try {
    ({ build } = await import('rolldown'));
  } catch {
    process.stderr.write('bundle-gate: rolldown is not installed; the gate hooks run unbundled (slower start-up)\n');
  }
  if (build) {
    mkdirSync(`${dist}bundle`, { recursive: true });
    for (const name of ['claude-code-hook', 'codex-hook', 'shim']) {
      await build({
        input: `${dist}${name}.js`,
        platform: 'node',
        logLevel: 'warn',
        output: { file: `${dist}bundle/${name}.cjs`, format: 'cjs', sourcemap: false },
      });
    }
    // the loader that runs a bundle with a V8 code cache (gate/hooks/run-cached.cjs)
    copyFileSync(fileURLToPath(new URL('../gate/hooks/run-cached.cjs', import.meta.url)), `${dist}bundle/run-cached.cjs`);
  }
}
