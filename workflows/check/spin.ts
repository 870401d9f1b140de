/**
 * Run Debian's `spin` on a workflow's Promela export: `spin -a`, compile `pan.c` with `cc`, run
 * `pan`, and read its verdict and figures. Used by the cross-check test and the benchmark.
 * pan's output format: https://spinroot.com/spin/Man/Pan.html
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { toPromela } from './promela.js';
import type { Workflow } from '../workflow-schema.js';

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
  /** CPU time (user + system) pan used, in seconds (from the shell's `times`). */
  cpuSeconds: number | null;
  output: string;
}

export interface SpinVerdict {
  admitted: boolean;
  /** `liveness`: the model includes `ltl terminates { <> wf_done }` and pan ran with `-a`. */
  mode: 'safety' | 'liveness';
  pan: PanRun;
}

export interface SpinOptions {
  /** Extra cc flags (default `-O2`). */
  ccFlags?: string[];
  /** Check `terminates` as LTL (default: when the workflow declares it). False = safety only (`-DSAFETY`). */
  liveness?: boolean;
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
 * Verify `wf` with spin (one compile, one pan run) and return its verdict. Assertions cover the
 * safety invariants and deadlocks; with `liveness`, pan's acceptance-cycle search checks
 * `<> wf_done` (every path terminates) in the same run.
 * @throws PollyError `internal` when spin or cc fails to run (the message includes their output).
 */
export function spinVerify(wf: Workflow, options: SpinOptions = {}): SpinVerdict {
  const dir = mkdtempSync(join(tmpdir(), 'polly-spin-'));
  try {
    const liveness = options.liveness ?? wf.invariants.some((i) => i.pattern === 'terminates');
    const cc = options.ccFlags ?? ['-O2'];
    const pan = liveness ? runPass(dir, toPromela(wf, { ltl: true }), cc, ['-a'], options) : runPass(dir, toPromela(wf, { ltl: false }), [...cc, '-DSAFETY'], [], options);
    return { admitted: pan.errors === 0, mode: liveness ? 'liveness' : 'safety', pan };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runPass(dir: string, source: string, ccFlags: string[], panFlags: string[], options: SpinOptions): PanRun {
  writeFileSync(join(dir, 'model.pml'), source);
  const run = (cmd: string, args: string[]): string => {
    const r = spawnSync(cmd, args, { cwd: dir, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.error || r.status !== 0) {
      throw new PollyError('internal', `${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}): ${(r.stderr || r.stdout || '').slice(0, 2000)}`);
    }
    return `${r.stdout}${r.stderr}`;
  };
  run('spin', ['-a', 'model.pml']);
  const c0 = performance.now();
  run('cc', [...ccFlags, '-DVECTORSZ=4096', '-o', 'pan', 'pan.c']);
  const c1 = performance.now();
  const panArgs = [...panFlags, `-m${options.maxDepth ?? 10_000_000}`, `-w${options.hashBits ?? 24}`];
  const output = run('bash', ['-c', `./pan ${panArgs.join(' ')}; echo "pan-times:"; times`]);
  const runMs = performance.now() - c1;
  const times = /pan-times:\n[^\n]*\n(\d+)m([\d.]+)s (\d+)m([\d.]+)s/.exec(output);
  const cpuSeconds = times ? Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4]) : null;
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
    cpuSeconds,
    output,
  };
}
