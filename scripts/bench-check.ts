/**
 * `npm run bench -- check [--tasks N] [--retries R]` — the admission checker's speed on a
 * synthetic plan workflow (N parallel tasks, each: dispatch → acceptance with R bounded retries →
 * review → ready/failed), compared in the same run with spin on the same exported Promela model.
 *
 * Prints: states, transitions, states/s and peak memory of Polly's checker; spin's states stored,
 * pan's own rate and wall time; and the ratio. Targets: >= 500k states/s, within 5x of spin.
 */
import { checkWorkflow } from '../workflows/checker.js';
import { spinAvailable, spinVerify } from '../workflows/spin.js';
import { syntheticPlan } from '../workflows/synthetic-plan.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

const tasks = arg('tasks', 6);
const retries = arg('retries', 2);
const wf = syntheticPlan(tasks, retries);

// Warm up the JIT on a small instance (not measured).
checkWorkflow(syntheticPlan(3, retries));
(globalThis as { gc?: () => void }).gc?.();

const rssBefore = process.memoryUsage().rss;
const t0 = performance.now();
const result = checkWorkflow(wf, { stateCap: 20_000_000 });
const ms = performance.now() - t0;
const peakRss = process.resourceUsage().maxRSS * 1024;
const ours = result.statesSeen / (ms / 1000);
process.stdout.write(`bench check: ${wf.name} (${tasks} parallel tasks, ${retries} retries each, ${wf.invariants.length} invariants)\n`);
process.stdout.write(`  polly checker: ${result.admitted ? 'admitted' : 'REFUSED'} — states seen ${fmt(result.statesSeen)}, paths explored ${fmt(result.pathsExplored)}, ${(ms / 1000).toFixed(2)} s\n`);
process.stdout.write(`  polly checker: ${fmt(ours)} states/s, ${fmt(result.pathsExplored / (ms / 1000))} transitions/s (BFS + reverse reachability + cycle check)\n`);
process.stdout.write(`  polly checker: peak RSS ${mb(peakRss)} (RSS before the check ${mb(rssBefore)})\n`);
process.stdout.write(`  target >= 500,000 states/s: ${ours >= 500_000 ? 'met' : 'NOT met'}; >= 10^6 states: ${result.statesSeen >= 1_000_000 ? 'yes' : 'NO'}\n`);

if (!spinAvailable()) {
  process.stdout.write('  spin: NOT INSTALLED — no baseline in this run (apt-get install spin)\n');
  process.exitCode = 1;
} else {
  const spin = spinVerify(wf, { hashBits: 24 });
  const s = spin.safety;
  const spinRate = s.rate ?? s.statesStored / Math.max(s.elapsedSeconds, 1e-3);
  const spinWallRate = s.statesStored / (s.runMs / 1000);
  process.stdout.write(`  spin (pan -DSAFETY, cc -O2, safety pass): ${spin.admitted ? 'admitted' : 'REFUSED'} — states stored ${fmt(s.statesStored)}, transitions ${fmt(s.transitions)}, pan ${s.elapsedSeconds.toFixed(2)} s, wall ${(s.runMs / 1000).toFixed(2)} s (+ cc ${(s.compileMs / 1000).toFixed(2)} s)\n`);
  process.stdout.write(`  spin: pan rate ${fmt(spinRate)} states/s; wall rate ${fmt(spinWallRate)} states/s\n`);
  if (spin.liveness) process.stdout.write(`  spin liveness pass (<> done, pan -a): ${spin.liveness.errors === 0 ? 'no errors' : `${spin.liveness.errors} errors`}, ${(spin.liveness.runMs / 1000).toFixed(2)} s wall\n`);
  const ratio = spinWallRate / ours;
  process.stdout.write(`  ratio spin/polly (wall states/s, safety pass vs full check): ${ratio.toFixed(2)}x — target within 5x: ${ratio <= 5 ? 'met' : 'NOT met'}\n`);
  process.stdout.write(`  verdicts agree: ${spin.admitted === result.admitted ? 'yes' : 'NO'}\n`);
}
