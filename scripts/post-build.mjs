// After tsc: make the bin executable (tsc keeps the shebang but not the mode).
import { chmodSync, existsSync } from 'node:fs';
const bin = new URL('../dist/brain/cli.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
// Bundle the gate's hook entry points (see scripts/bundle-gate.mjs).
await import('./bundle-gate.mjs');
