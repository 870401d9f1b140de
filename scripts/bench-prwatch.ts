/**
 * `npm run bench -- prwatch [prs] [intervals]`: what watching open PRs on GitHub costs (issue 16): the API
 * requests per watched PR per hour at several poll intervals, with nothing changing (mostly 304s)
 * and with activity, and the budget for 20 PRs against GitHub's 5,000 requests per hour.
 *
 * The real watcher (`brain/forge/github-watch.ts`, Octokit with the throttling and retry plugins)
 * polls `prs` PRs (default 2; the cost is per PR) every `intervals` seconds (default 30,60,300) on the GitHub API simulator for one simulated
 * hour per case; the simulator's clock is advanced between passes, so an hour takes seconds.
 * "Charged" requests are those GitHub counts against the primary rate limit: every request except
 * a `304 Not Modified` to a conditional request (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api).
 *
 * After each pass the Brain's after-merge pass runs too (`brain/forge/after-merge.ts`, behind the
 * watcher: it reads a GitHub PR only once the watcher found it merged or closed); its requests are
 * counted in the totals and shown on their own.
 *
 * Activity per hour (the "active" case): 3 merges into the base by humans (each moves the base of
 * every open PR: GitHub recomputes mergeability), and per PR one review with a line comment, one
 * comment, one push of the head with two check runs going from queued to completed (one fails)
 * and one commit status.
 */
import { loadavg } from 'node:os';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGitHubClient } from '../brain/forge/github-client.js';
import { createGitHubForge } from '../brain/forge/github-forge.js';
import { createGitHubPullWatcher, PR_WATCH_DEFAULT_SECONDS } from '../brain/forge/github-watch.js';
import { watchMerges } from '../brain/forge/after-merge.js';
import { emptyRegistry } from '../brain/registry/registry-schema.js';
import { createMemoryRegistryStore } from '../brain/registry/registry-store.js';
import { createFakeClock, startGitHubSimulator } from './github-simulator/github-simulator.js';

const PRS = Number(process.argv[2] ?? '2');
const INTERVALS = (process.argv[3] ?? '30,60,300').split(',').map(Number);
const HOUR = 3_600_000;
const TOKEN = 'ghp_benchTokenForTheSimulator000000000000';
const BUDGET = 5000;
const WATCHED = 20;

interface CaseResult {
  interval: number;
  active: boolean;
  requests: number;
  charged: number;
  notModified: number;
  events: number;
  /** Of `requests`, sent by the after-merge passes. */
  afterMerge: number;
  wallMs: number;
}

async function runCase(interval: number, active: boolean): Promise<CaseResult> {
  const clock = createFakeClock();
  const branches: Record<string, string> = { main: 'a'.repeat(40), other: 'f'.repeat(40) };
  for (let i = 1; i <= PRS; i++) branches[`polly/b${i}`] = i.toString(16).padStart(40, '0');
  const sim = await startGitHubSimulator({ clock, branches, rateLimit: 1_000_000 });
  try {
    const forge = createGitHubForge({ owner: sim.owner, repo: sim.repo, token: TOKEN, baseUrl: sim.baseUrl });
    const reg = emptyRegistry();
    const at = new Date(clock.now()).toISOString();
    for (let i = 1; i <= PRS; i++) {
      const pr = await forge.openDraftPullRequest({ head: `polly/b${i}`, base: 'main', title: `b${i}`, body: '' });
      sim.setChangedFiles(pr.number, [`src/b${i}.ts`]);
      reg.tasks[`b${i}`] = {
        id: `b${i}`,
        planId: 'p1',
        title: `b${i}`,
        purpose: 'implement',
        worker: 'claude-code',
        model: 'm',
        reviewer: 'codex',
        prompt: '',
        acceptance: { commands: [], criteria: [] },
        dependsOn: [],
        status: 'ready' as never,
        statusReason: null,
        attempts: 1,
        reviewRounds: 1,
        branch: `polly/b${i}`,
        worktree: null,
        baseBranch: 'main',
        baseCommit: null,
        headCommit: null,
        checks: [],
        reviews: [],
        pr: { forge: 'github', number: pr.number, url: pr.url, state: 'ready' },
        backupRefs: [],
        sessionId: null,
        createdAt: at,
        updatedAt: at,
      };
    }
    const store = createMemoryRegistryStore({ initial: reg });
    const client = createGitHubClient({ token: TOKEN, baseUrl: sim.baseUrl });
    const watcher = createGitHubPullWatcher({ store, client, owner: sim.owner, repo: sim.repo, now: () => new Date(clock.now()) });
    // Warm-up: the first passes learn every ETag (and GitHub's first mergeable is null): not counted.
    for (let i = 0; i < 3; i++) {
      await watcher.pass();
      clock.advance(interval * 1000);
    }
    const events = (await store.journal()).length;
    const from = sim.requests.length;
    const start = clock.now();
    const passes = Math.floor(HOUR / (interval * 1000));
    // Activity at fixed times in the hour: per PR spread over the hour, merges at 15, 35, 55 min.
    const actions: Array<{ at: number; run: () => void }> = [];
    if (active) {
      for (const [k, minute] of [15, 35, 55].entries()) {
        actions.push({
          at: start + minute * 60_000,
          run: () => sim.setBranch('main', `${(k + 1).toString(16)}`.padStart(40, 'e')),
        });
      }
      for (let i = 1; i <= PRS; i++) {
        const offset = (i * 7) % 40;
        const head = `${(100 + i).toString(16)}`.padStart(40, 'c');
        actions.push({
          at: start + (offset + 2) * 60_000,
          run: () => sim.humanReview(i, { login: 'alice', event: 'REQUEST_CHANGES', body: 'rename x', comments: [{ path: `src/b${i}.ts`, line: 3, body: 'x?' }] }),
        });
        actions.push({ at: start + (offset + 5) * 60_000, run: () => sim.humanComment(i, { login: 'bob', body: 'and the docs' }) });
        actions.push({
          at: start + (offset + 10) * 60_000,
          run: () => {
            sim.setBranch(`polly/b${i}`, head);
            sim.setCheckRun(head, { name: 'test', status: 'queued', conclusion: null });
            sim.setCheckRun(head, { name: 'lint', status: 'queued', conclusion: null });
          },
        });
        actions.push({
          at: start + (offset + 14) * 60_000,
          run: () => {
            sim.setCheckRun(head, { name: 'test', status: 'completed', conclusion: 'failure', output: { title: '1 failed', summary: 'sum', text: 'log' } });
            sim.setCheckRun(head, { name: 'lint', status: 'completed', conclusion: 'success' });
            sim.setCommitStatus(head, { context: 'deploy', state: 'success' });
          },
        });
      }
      actions.sort((a, b) => a.at - b.at);
    }
    const t0 = performance.now();
    const forgeBefore = forge.stats().requests;
    const worktrees = { remove: async () => ({ ref: null }) };
    for (let p = 0; p < passes; p++) {
      clock.advance(interval * 1000);
      while (actions.length && actions[0]!.at <= clock.now()) actions.shift()!.run();
      await watcher.pass();
      await watchMerges({ store, forge, worktrees: worktrees as never, githubWatched: true });
    }
    const afterMerge = forge.stats().requests - forgeBefore;
    const wallMs = performance.now() - t0;
    const sent = sim.requests.slice(from);
    if (sim.mergeRequests().length || sim.forceUpdates().length) throw new Error('the watcher sent a merge or a forced ref update');
    return {
      interval,
      active,
      requests: sent.length,
      charged: sent.filter((r) => r.charged).length,
      notModified: sent.filter((r) => r.status === 304).length,
      events: (await store.journal()).length - events,
      afterMerge,
      wallMs,
    };
  } finally {
    await sim.close();
  }
}

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(8);
const tmp = mkdtempSync(join(tmpdir(), 'polly-bench-prwatch-'));
try {
  console.log(
    `prwatch: ${PRS} PRs watched for one simulated hour per case; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  console.log('interval  case     req/PR/h  after-merge/PR/h  charged/PR/h  304 share  events  20 PRs: charged/h  of 5,000  req/min  wall ms/pass');
  for (const interval of INTERVALS) {
    for (const active of [false, true]) {
      const r = await runCase(interval, active);
      const perPr = r.requests / PRS;
      const chargedPerPr = r.charged / PRS;
      const passes = HOUR / (interval * 1000);
      console.log(
        `${String(interval).padStart(5)} s  ${active ? 'active' : 'quiet '}  ${fmt(perPr)}  ${fmt(r.afterMerge / PRS)}          ${fmt(chargedPerPr)}      ${fmt((100 * r.notModified) / Math.max(1, r.requests), 0)}%  ${String(r.events).padStart(6)}  ${fmt(chargedPerPr * WATCHED, 0)}          ${fmt((100 * chargedPerPr * WATCHED) / BUDGET, 1)}%  ${fmt((perPr * WATCHED) / 60, 0)}  ${fmt(r.wallMs / passes, 1)}`,
      );
    }
  }
  console.log(
    `default poll interval: ${PR_WATCH_DEFAULT_SECONDS} s (brain/forge/github-watch.ts). Requests per pass and PR: 6 conditional GETs; 304s do not count against the 5,000/h primary limit.`,
  );
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
