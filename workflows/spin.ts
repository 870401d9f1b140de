/**
 * Run Debian's `spin` on a workflow's Promela export: `spin -a`, compile `pan.c` with `cc`, run
 * `pan`, and read its verdict and figures. Used by the cross-check test and the benchmark.
 *
 * Two passes, because pan disables invalid-end-state (deadlock) checking under a never claim:
 * a safety pass (assertions + invalid end states, `-DSAFETY`) and, when the workflow declares
 * `terminates`, a liveness pass (`ltl terminates { <> done }`, `pan -a`).
 * pan's output format: https://spinroot.com/spin/Man/Pan.html
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PollyError } from '../brain/errors.js';
import { toPromela } from './promela.js';
import type { Workflow } from './workflow-schema.js';

/** One pan run. */
export interface PanRun {
  errors: number;
  statesStored: number;
  transitions: number;
  /** pan's own elapsed time (seconds) and rate (states/second), when it printed them. */
  elapsedSeconds: number;
  rate: number | null;
  /** Wall time of compiling pan.c (ms) and of running pan (ms). */
  compileMs: number;
  runMs: number;
  output: string;
}

export interface SpinVerdict {
  admitted: boolean;
  safety: PanRun;
  liveness: PanRun | null;
}

export interface SpinOptions {
  /** Extra cc flags (default `-O2`). */
  ccFlags?: string[];
  /** Use pan's breadth-first search for the safety pass (`-DBFS`). */
  bfs?: boolean;
  /** pan's search depth bound (`-m`), default 10,000,000. */
  maxDepth?: number;
  /** pan's hash table size as a power of two (`-w`), default 24. */
  hashBits?: number;
}

/** True when `spin` and `cc` are on PATH. */
export function spinAvailable(): boolean {
  return ['spin', 'cc'].every((cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0);
}

/**
 * Verify `wf` with spin and return its verdict.
 * @throws PollyError `internal` when spin or cc fails to run (the message includes their output).
 */
export function spinVerify(wf: Workflow, options: SpinOptions = {}): SpinVerdict {
  const dir = mkdtempSync(join(tmpdir(), 'polly-spin-'));
  try {
    const safety = runPass(dir, 'safety', toPromela(wf, { ltl: false }), [...(options.ccFlags ?? ['-O2']), '-DSAFETY', ...(options.bfs ? ['-DBFS'] : [])], [], options);
    const liveness = wf.invariants.some((i) => i.pattern === 'terminates') ? runPass(dir, 'liveness', toPromela(wf, { ltl: true }), options.ccFlags ?? ['-O2'], ['-a'], options) : null;
    return { admitted: safety.errors === 0 && (liveness === null || liveness.errors === 0), safety, liveness };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runPass(root: string, name: string, source: string, ccFlags: string[], panFlags: string[], options: SpinOptions): PanRun {
  const dir = join(root, name);
  spawnSync('mkdir', ['-p', dir]);
  writeFileSync(join(dir, 'model.pml'), source);
  const run = (cmd: string, args: string[]): string => {
    const r = spawnSync(cmd, args, { cwd: dir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.error || (r.status !== 0 && cmd !== './pan')) {
      throw new PollyError('internal', `${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr || r.stdout || '').slice(0, 2000)}`);
    }
    return `${r.stdout}${r.stderr}`;
  };
  run('spin', ['-a', 'model.pml']);
  const c0 = performance.now();
  run('cc', [...ccFlags, '-DVECTORSZ=4096', '-o', 'pan', 'pan.c']);
  const c1 = performance.now();
  const output = run('./pan', [...panFlags, `-m${options.maxDepth ?? 10_000_000}`, `-w${options.hashBits ?? 24}`]);
  const runMs = performance.now() - c1;
  const num = (re: RegExp): number | null => {
    const m = re.exec(output);
    return m ? Number(m[1]) : null;
  };
  const errors = num(/errors: (\d+)/);
  if (errors === null) throw new PollyError('internal', `pan printed no verdict:\n${output.slice(0, 2000)}`);
  return {
    errors,
    statesStored: num(/([\d.e+]+) states, stored/) ?? 0,
    transitions: num(/([\d.e+]+) transitions \(= /) ?? 0,
    elapsedSeconds: num(/pan: elapsed time ([\d.e+-]+) seconds/) ?? runMs / 1000,
    rate: num(/pan: rate\s+([\d.e+-]+) states\/second/),
    compileMs: c1 - c0,
    runMs,
    output,
  };
}
