#!/usr/bin/env node
/**
 * The `git` / `gh` shim backstop: `node shim.js <gate-config.json> <git|gh> [args…]`, called by the
 * two-line shell scripts `prepareGate` puts first on a worker's PATH. It runs the gate on its own
 * argv (as the bash command `git args…`, words quoted so the gate sees exactly this argv: asked
 * through ./gate-client.ts, so a worker's shim gets the runner's decision, journaled there), and
 * only on allow runs the real binary — found by PATH search skipping the shim
 * directory — with the same argv, stdio and environment, exiting with its status.
 * A denial prints `polly gate: denied (rule): reason` on stderr and exits 1; a shim failure exits 1.
 */
import { spawnSync } from 'node:child_process';
import { findReal } from './find-real.js';
import { askGate } from './gate-client.js';
import { denialText } from './gate-request.js';
import { readGateConfig } from './hook-runtime.js';

async function main(): Promise<number> {
  const [configPath, prog, ...args] = process.argv.slice(2);
  if (!configPath || (prog !== 'git' && prog !== 'gh')) {
    process.stderr.write('polly gate shim: usage: shim.js <gate-config.json> git|gh [args…]\n');
    return 1;
  }
  const cfg = readGateConfig(configPath);
  const d = await askGate(cfg, { v: 1, from: 'shim', cwd: process.cwd(), prog, args });
  if (d.decision !== 'allow') {
    process.stderr.write(`polly gate: ${denialText(d).replace(/^Polly gate: /, '')}\n`);
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

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`polly gate shim failed and blocks this call (fail closed): ${(error as Error).message}\n`);
    process.exitCode = 1;
  },
);
