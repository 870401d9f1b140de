#!/usr/bin/env node
// `npm run bench -- <name> [args]`: runs the compiled benchmark dist/scripts/bench-<name>.js.
// Each benchmark prints its figures and ratios against a baseline measured in the same run.
import { existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist/scripts/', import.meta.url));
const available = existsSync(dist)
  ? readdirSync(dist)
      .filter((f) => /^bench-.+\.js$/.test(f))
      .map((f) => f.slice(6, -3))
      .sort()
  : [];
const [name, ...rest] = process.argv.slice(2);
if (!name || !available.includes(name)) {
  process.stderr.write(
    `${name ? `unknown benchmark "${name}". ` : ''}Usage: npm run bench -- <name>\n` + `Available: ${available.join(', ') || '(none: run "npm run build" first)'}\n`,
  );
  process.exit(2);
}
const r = spawnSync(process.execPath, ['--expose-gc', `${dist}bench-${name}.js`, ...rest], { stdio: 'inherit' });
process.exit(r.status ?? 1);
