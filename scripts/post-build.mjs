// After tsc: make the bin executable (tsc keeps the shebang but not the mode).
import { chmodSync, existsSync } from 'node:fs';
const bin = new URL('../dist/brain/cli.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
// Bundle the gate's hook entry points (see scripts/bundle-gate.mjs).
await import('./bundle-gate.mjs');
// Record what this build compiled (scripts/build-stamp.ts): tests build again when it differs.
const { sourcesHash, STAMP } = await import('../dist/scripts/build-stamp.js');
const { writeFileSync } = await import('node:fs');
writeFileSync(STAMP, `${sourcesHash().hash}\n`);
