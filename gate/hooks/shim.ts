#!/usr/bin/env node
/**
 * The `git` / `gh` shim backstop: `node shim.js <gate-config.json> <git|gh> [args…]`, called by the
 * two-line shell scripts `prepareGate` puts first on a worker's PATH. It runs the gate on its own
 * argv (as the bash command `git args…`, words quoted so the gate sees exactly this argv), journals
 * the decision, and only on allow runs the real binary — found by PATH search skipping the shim
 * directory — with the same argv, stdio and environment, exiting with its status.
 * A denial prints `polly gate: denied (rule): reason` on stderr and exits 1; a shim failure exits 1.
 */
import { spawnSync } from 'node:child_process';
import { findReal } from './find-real.js';
import { decideAll, readGateConfig } from './hook-runtime.js';
import { shimCommandText } from './shim-fast-path.js';

function main(): number {
  const [configPath, prog, ...args] = process.argv.slice(2);
  if (!configPath || (prog !== 'git' && prog !== 'gh')) {
    process.stderr.write('polly gate shim: usage: shim.js <gate-config.json> git|gh [args…]\n');
    return 1;
  }
  const cfg = readGateConfig(configPath);
  const d = decideAll(cfg, [{ tool: 'bash', input: shimCommandText(prog, args), cwd: process.cwd(), harness: 'shim' }]);
  if (d.decision !== 'allow') {
    process.stderr.write(`polly gate: ${d.decision === 'ask' ? 'needs human approval, denied in a headless worker' : 'denied'} (${d.rule}): ${d.reason}\n`);
    return 1;
  }
  const bin = findReal(prog, process.env.PATH ?? '', cfg.shimDir);
  if (!bin) {
    process.stderr.write(`polly gate shim: no real ${prog} on PATH outside ${cfg.shimDir}\n`);
    return 127;
  }
  const r = spawnSync(bin, args, { stdio: 'inherit' });
  if (r.error) {
    process.stderr.write(`polly gate shim: ${prog} failed to start: ${r.error.message}\n`);
    return 126;
  }
  if (r.signal) {
    process.kill(process.pid, r.signal);
    return 128;
  }
  return r.status ?? 1;
}

try {
  process.exitCode = main();
} catch (error) {
  process.stderr.write(`polly gate shim failed and blocks this call (fail closed): ${(error as Error).message}\n`);
  process.exitCode = 1;
}
