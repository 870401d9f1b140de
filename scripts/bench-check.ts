/**
 * `npm run bench -- check [--tasks N] [--retries R]` — the admission checker's speed on a
 * synthetic plan workflow (N parallel tasks, each: dispatch → acceptance with R bounded retries →
 * review → ready/failed), compared in the same run with spin on the same exported Promela model.
 *
 * Prints: states, transitions, states/s and peak memory of Polly's checker; spin's states stored,
 * pan's own rate and wall time; and the ratio. Targets: >= 500k states/s, within 5x of spin.
 */
import os from 'node:os';
import { checkWorkflow } from '../workflows/check/checker.js';
import { spinAvailable, spinVerify } from '../workflows/check/spin.js';
import { syntheticPlan } from './synthetic-plan.js';

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
