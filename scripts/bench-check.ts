/**
 * `npm run bench -- check [--tasks N] [--retries R]` — the admission checker's speed on a
 * synthetic plan workflow (N parallel tasks, each: dispatch → acceptance with R bounded retries →
 * review → ready/failed), compared in the same run with spin on the same exported Promela model.
 *
 * Prints: states, transitions, states/s and peak memory of Polly's checker; spin's states stored,
 * pan's own rate and wall time; and the ratio. Targets: >= 500k states/s, within 5x of spin.
 *
 * Then the cost of path constraints (issue 29), in the same process: the same plan with task 2
 * ordered after task 1 and task 4 after task 3 (their declared paths overlap), checked with the
 * overlap invariants and without them (the monitors' own cost at an equal state space), against
 * the plan without paths; and the overlap analysis of N tasks' declared globs, alone.
 */
import os from 'node:os';
import { checkWorkflow } from '../workflows/check/checker.js';
import { spinAvailable, spinVerify } from '../workflows/check/spin.js';
import { syntheticPlan } from './synthetic-plan.js';
import { pathOverlaps } from '../brain/plan/plan-compiler.js';
import { validatePlan } from '../brain/plan/plan-schema.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

const tasks = arg('tasks', 5);
const retries = arg('retries', 2);
const wf = syntheticPlan(tasks, retries);

// Warm up the JIT on a small instance (not measured).
checkWorkflow(syntheticPlan(3, retries));
(globalThis as { gc?: () => void }).gc?.();

const rssBefore = process.memoryUsage().rss;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const result = checkWorkflow(wf, { stateCap: 20_000_000 });
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
const peakRss = process.resourceUsage().maxRSS * 1024;
const ours = result.statesSeen / (ms / 1000);
process.stdout.write(
  `machine: ${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')} (other processes compete for the same cores)\n`,
);
process.stdout.write(`bench check: ${wf.name} (${tasks} parallel tasks, ${retries} retries each, ${wf.invariants.length} invariants)\n`);
process.stdout.write(
  `  polly checker: ${result.admitted ? 'admitted' : 'REFUSED'} — states seen ${fmt(result.statesSeen)}, paths explored ${fmt(result.pathsExplored)}, ${(ms / 1000).toFixed(2)} s\n`,
);
process.stdout.write(
  `  polly checker: ${fmt(ours)} states/s, ${fmt(result.pathsExplored / (ms / 1000))} transitions/s (BFS + reverse reachability + cycle check); CPU time ${cpuSeconds.toFixed(2)} s → ${fmt(result.statesSeen / cpuSeconds)} states/CPU-s\n`,
);
process.stdout.write(`  polly checker: peak RSS ${mb(peakRss)} (RSS before the check ${mb(rssBefore)})\n`);
process.stdout.write(`  target >= 500,000 states/s: ${ours >= 500_000 ? 'met' : 'NOT met'}; >= 10^6 states: ${result.statesSeen >= 1_000_000 ? 'yes' : 'NO'}\n`);

if (!spinAvailable()) {
  process.stdout.write('  spin: NOT INSTALLED — no baseline in this run (apt-get install spin)\n');
  process.exitCode = 1;
} else {
  const spin = spinVerify(wf, { hashBits: 24, liveness: false });
  const s = spin.pan;
  const spinRate = s.rate ?? s.statesStored / Math.max(s.elapsedSeconds, 1e-3);
  const spinWallRate = s.statesStored / (s.runMs / 1000);
  process.stdout.write(
    `  spin (pan -DSAFETY, cc -O2, safety pass): ${spin.admitted ? 'admitted' : 'REFUSED'} — states stored ${fmt(s.statesStored)}, transitions ${fmt(s.transitions)}, pan ${s.elapsedSeconds.toFixed(2)} s, wall ${(s.runMs / 1000).toFixed(2)} s (+ cc ${(s.compileMs / 1000).toFixed(2)} s)\n`,
  );
  process.stdout.write(
    `  spin: pan rate ${fmt(spinRate)} states/s; wall rate ${fmt(spinWallRate)} states/s; CPU time ${s.cpuSeconds?.toFixed(2) ?? '?'} s → ${s.cpuSeconds ? fmt(s.statesStored / s.cpuSeconds) : '?'} states/CPU-s\n`,
  );
  const ratio = spinWallRate / ours;
  process.stdout.write(
    `  ratio spin/polly, wall states/s (polly's full check vs pan's safety search): ${ratio.toFixed(2)}x — target within 5x: ${ratio <= 5 ? 'met' : 'NOT met'}\n`,
  );
  if (s.cpuSeconds) {
    const cpuRatio = s.statesStored / s.cpuSeconds / (result.statesSeen / cpuSeconds);
    process.stdout.write(
      `  ratio spin/polly, states per CPU-second (fairer on a loaded machine): ${cpuRatio.toFixed(2)}x — target within 5x: ${cpuRatio <= 5 ? 'met' : 'NOT met'}\n`,
    );
  }
  process.stdout.write(`  verdicts agree: ${spin.admitted === result.admitted ? 'yes' : 'NO'}\n`);
}

// Path constraints (issue 29): figures and ratios against the plan without paths, same process.
{
  const ordered: Array<[number, number]> = [];
  for (let i = 1; i + 1 <= tasks; i += 2) ordered.push([i, i + 1]);
  const timed = (w: ReturnType<typeof syntheticPlan>) => {
    (globalThis as { gc?: () => void }).gc?.();
    const t = performance.now();
    const c = process.cpuUsage();
    const r = checkWorkflow(w, { stateCap: 20_000_000 });
    const used = process.cpuUsage(c);
    return { r, ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000 };
  };
  const base = timed(wf);
  const unchecked = timed(syntheticPlan(tasks, retries, { ordered, overlapInvariants: false }));
  const checked = timed(syntheticPlan(tasks, retries, { ordered, overlapInvariants: true }));
  const line = (label: string, x: { r: { admitted: boolean; statesSeen: number; pathsExplored: number }; ms: number; cpuMs: number }) =>
    `  ${label}: ${x.r.admitted ? 'admitted' : 'REFUSED'} — states ${fmt(x.r.statesSeen)}, paths ${fmt(x.r.pathsExplored)}, wall ${(x.ms / 1000).toFixed(2)} s, CPU ${(x.cpuMs / 1000).toFixed(2)} s, ${fmt(x.r.statesSeen / (x.cpuMs / 1000))} states/CPU-s`;
  process.stdout.write(
    `bench check, path constraints: ${tasks} tasks, ${retries} retries; pairs with overlapping paths, ordered: ${ordered.map(([i, j]) => `t${i}<t${j}`).join(', ')}\n`,
  );
  process.stdout.write(`${line('no paths (all parallel)        ', base)}\n`);
  process.stdout.write(`${line('ordered pairs, no invariants   ', unchecked)}\n`);
  process.stdout.write(`${line(`ordered pairs + ${ordered.length} invariants  `, checked)}\n`);
  process.stdout.write(
    `  ratio with paths / without (CPU time): ${(checked.cpuMs / base.cpuMs).toFixed(2)}x, states ${(checked.r.statesSeen / base.r.statesSeen).toFixed(2)}x; the invariants alone (equal state space): CPU time ${(checked.cpuMs / unchecked.cpuMs).toFixed(2)}x\n`,
  );
  // The overlap analysis of declared globs (every pair of tasks, every pair of globs): plan compile time.
  const t = (k: string, paths: string[]) => ({
    key: k,
    title: k,
    purpose: 'implement',
    worker: 'claude-code',
    reviewer: 'codex',
    prompt: 'p',
    acceptance: { commands: ['true'] },
    paths,
  });
  const plan = validatePlan(
    { tasks: Array.from({ length: tasks }, (_, i) => t(`t${i + 1}`, [`src/m${i + 1}/**`, `test/m${i + 1}/*.test.ts`, `docs/m${Math.floor(i / 2) + 1}.md`])) },
    'bench',
  );
  const reps = 1000;
  const t0 = performance.now();
  let pairs = 0;
  for (let k = 0; k < reps; k++) pairs = pathOverlaps(plan.tasks).length;
  const us = ((performance.now() - t0) / reps) * 1000;
  process.stdout.write(`  overlap analysis: ${tasks} tasks × 3 globs each, ${pairs} overlapping pair(s) found: ${us.toFixed(1)} µs per plan (mean of ${reps})\n`);
}
