/**
 * PR fix rounds end to end against the GitHub API simulator: a ready PR's life on
 * GitHub goes back to the SAME worker session as bounded fix rounds — a change request with a line
 * comment, then a failing check run, then a conflict after another PR merged — and Polly never
 * merges, never force-updates a ref, and opens exactly one PR.
 *
 * Real everything but GitHub and the model: the real `polly` from dist/ (a long-running `polly
 * brain` whose PR watcher polls the simulator every second, and `polly run`), git with a bare
 * repository that the simulator serves over git smart HTTP as the repository's `origin`
 * (scripts/github-simulator/git-http.ts: pushes and fetches are real), the real `claude`
 * implementer and `pi` reviewer against the scripted model server. Humans and CI act through the
 * simulator's controls (reviews, check runs, another PR merged), which send no API request, so the
 * request log holds only what Polly sent. Ground truth: the bare repository's refs and commits,
 * the simulator's request log and branch moves, the model server's request log.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import type { Registry, TaskRecord } from '../../brain/registry/registry-schema.js';
import { startGitHubSimulator, type GitHubSimulator } from '../helpers/github-simulator.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { git, gitTestEnv } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { readJournalFile, readRegistryFile } from '../helpers/polly-state.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const run = promisify(execFile);
const cli = join(process.cwd(), 'dist/brain/cli.js');
const TOKEN = 'ghp_FAKEtokenForTheSimulator0123456789ab';

const PLAN = `goal: Fix sum()
tasks:
  - key: t1
    title: Fix sum()
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: sum() in src/stats.js returns wrong results; make the existing tests pass without changing them.
    acceptance:
      commands: [npm test]
      known_red: [npm test]
`;

const RESOLVED = `/** Sum of the numbers in xs (0 for an empty list). */
export function sum(xs) {
  return xs.reduce((a, b) => a + b, 0);
}

/** Arithmetic mean of a non-empty list of numbers (throws RangeError for an empty list). */
export function mean(xs) {
  if (xs.length === 0) throw new RangeError('mean of an empty list (no numbers)');
  return sum(xs) / xs.length;
}
`;

/**
 * The implementer's turns, one per human message of its ONE conversation: the task, the change
 * request (round 1), the failing check (round 2), the conflicting file of the base merge (round 3).
 */
const SCRIPT = `sessions:
  - name: implement-sum
    match: {role: implement, contains: ["Fix sum()"]}
    turns:
      - steps:
          - read: src/stats.js
          - edit: {path: src/stats.js, old: "a - b", new: "a + b"}
          - finish: "sum() adds now."
      - steps:
          - read: src/stats.js
          - edit: {path: src/stats.js, old: "/** Sum of a list of numbers. */", new: "/** Sum of a list of numbers (0 for an empty list). */"}
          - finish: "Documented sum([]) === 0."
      - steps:
          - read: src/stats.js
          - edit: {path: src/stats.js, old: "/** Arithmetic mean of a non-empty list of numbers. */", new: "/** Arithmetic mean of a non-empty list of numbers (throws RangeError for an empty list). */"}
          - finish: "Documented that mean() throws."
      - steps:
          - write:
              path: src/stats.js
              content: |
${RESOLVED.split('\n')
  .map((l) => (l ? `                ${l}` : ''))
  .join('\n')}
          - finish: "Kept both sides: the base's doc wording and error message, this task's sum() and docs."
  - name: review-sum
    match: {role: review, contains: ["Fix sum()"]}
    repeat_last: true
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [], "non_blocking": []}'
`;

const readRegistry = readRegistryFile;
const journalOf = readJournalFile;

let server: ScriptedModelServer | null = null;
let sim: GitHubSimulator | null = null;
let brain: ChildProcess | null = null;
afterAll(async () => {
  if (brain && brain.exitCode === null) {
    const gone = new Promise((r) => brain!.once('close', r));
    brain.kill('SIGTERM');
    await gone;
  }
  await server?.close();
  await sim?.close();
});

describe.skipIf(!SANDBOXED)('a ready PR on GitHub (API simulator): feedback, a failing check and a conflict go back to the same worker session', () => {
  it('change request → fixed in the same session, re-reviewed, plain push, reply; failing check → fixed; conflict after another PR merged → merge commit, green checks, ready; no merge endpoint, no forced ref update, one PR', async () => {
    const { root, repo, origin } = sampleProjectWithOrigin('polly-gh-fix-rounds-');
    const env = gitTestEnv();
    [server, sim] = await Promise.all([startScriptedModelServer({ script: parseModelScript(SCRIPT) }), startGitHubSimulator({ git: origin })]);
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    // origin is the simulated GitHub: Polly selects the GitHub forge and fetches and pushes over HTTP.
    git(repo, ['remote', 'set-url', 'origin', sim.gitUrl!]);
    const modelEnv = useScriptedModels(repo, server.url, {
      extra: [
        [['forge', 'kind'], 'github'],
        [['forge', 'github', 'base_url'], sim.baseUrl],
        [['forge', 'github', 'watch_seconds'], 1],
      ],
    });
    const brainEnv = { ...env, ...modelEnv, GITHUB_TOKEN: TOKEN };
    const planFile = join(root, 'plan.yaml');
    writeFileSync(planFile, PLAN);

    // The Brain runs the whole time, as it does on GitHub: its watcher turns what happens on the PR into events.
    let brainLog = '';
    brain = spawn(process.execPath, [cli, 'brain', '--no-llm'], { cwd: repo, env: brainEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    brain.stdout!.setEncoding('utf8').on('data', (d: string) => (brainLog += d));
    brain.stderr!.setEncoding('utf8').on('data', (d: string) => (brainLog += d));
    for (let i = 0; i < 100 && !readRegistryOrNull(repo)?.brain; i++) await sleep(100);

    /** Wait until `ok(task)` holds (the Brain works on its own; the test only watches). */
    const until = async (what: string, ok: (t: TaskRecord) => boolean, ms = 180_000): Promise<TaskRecord> => {
      const end = Date.now() + ms;
      for (;;) {
        const t = Object.values(readRegistry(repo).tasks).find((x) => x.purpose === 'implement');
        if (t && ok(t)) return t;
        if (Date.now() > end || brain!.exitCode !== null)
          throw new Error(
            `timed out waiting for ${what}; task: ${JSON.stringify(t && { status: t.status, fixRound: t.fixRound, reason: t.statusReason })}\n${brainLog.slice(-4000)}`,
          );
        await sleep(250);
      }
    };

    // 1. The plan runs to a ready PR on GitHub.
    const first = await run(process.execPath, [cli, 'run', planFile, '--yes', '--json'], { cwd: repo, env: brainEnv, timeout: 240_000, maxBuffer: 16 << 20 }).catch(
      (e: { stdout?: string; stderr?: string }) => {
        throw new Error(`polly run failed:\n${e.stderr}\n${e.stdout}\n${brainLog}`);
      },
    );
    const task = await until('the PR to be ready', (t) => t.status === 'ready');
    expect(task.pr, first.stderr).toMatchObject({ forge: 'github', state: 'ready' });
    const session = task.sessionId;
    expect(session).toBeTruthy();
    const branch = `polly/${task.id}`;
    const number = task.pr!.number;
    const pull = sim.pulls.get(number)!;
    const pushed1 = git(origin, ['rev-parse', branch]);
    expect(pull).toMatchObject({ head: branch, base: 'main', draft: false, state: 'open' });
    const mainBefore = git(origin, ['rev-parse', 'main']);
    const pollyReviews = () => pull.reviews.filter((r) => r.body.includes('<!-- polly -->')).length;
    const reviewsBefore = pollyReviews();
    expect(reviewsBefore).toBe(1);

    // 2. A human requests changes with a line comment; the watcher reports it, the Brain runs fix round 1.
    sim.humanReview(number, {
      login: 'alice',
      event: 'REQUEST_CHANGES',
      body: 'One thing before this goes in.',
      comments: [{ path: 'src/stats.js', line: 1, body: 'Say in the doc comment that sum([]) is 0.' }],
    });
    let t = await until('fix round 1', (x) => x.fixRound?.round === 1 && x.status === 'ready' && x.headCommit !== pushed1);
    expect(t.sessionId).toBe(session); // the same session, resumed
    expect(t.fixRound).toMatchObject({ round: 1, action: 'FEEDBACK', startHead: pushed1 });
    const turn1 = server.requests.filter((r) => r.session === 'implement-sum' && r.turnIndex === 1);
    expect(turn1.length).toBeGreaterThan(0);
    // The worker got the line comment itself, at its file and line (not only the review's body).
    expect(JSON.stringify(turn1[0]!.body)).toContain('src/stats.js:1: Say in the doc comment that sum([]) is 0.');
    const pushed2 = git(origin, ['rev-parse', branch]);
    expect(t.headCommit).toBe(pushed2);
    expect(git(origin, ['rev-list', '--parents', '-n', '1', pushed2]).split(' ').slice(1)).toEqual([pushed1]);
    expect(git(origin, ['show', `${pushed2}:src/stats.js`])).toContain('(0 for an empty list)');
    expect(pollyReviews()).toBe(reviewsBefore + 1); // re-reviewed by pi, posted on the PR
    const replies = () => pull.comments.filter((c) => c.body.includes('**Polly fix round'));
    await untilTrue('the reply of round 1', () => replies().length === 1);
    expect(replies()[0]!.body).toContain(pushed2.slice(0, 7));

    // 3. CI fails on the new head, with a log; the watcher reports it, the Brain runs fix round 2.
    const log = 'src/stats.js\n  6:1  error  mean() must say that it throws RangeError  jsdoc/require-throws\n\n✖ 1 problem (1 error, 0 warnings)';
    sim.setCheckRun(pushed2, { name: 'lint', status: 'completed', conclusion: 'failure', output: { title: '1 lint error', summary: 'eslint found 1 error', text: log } });
    t = await until('fix round 2', (x) => x.fixRound?.round === 2 && x.status === 'ready' && x.headCommit !== pushed2);
    expect(t.sessionId).toBe(session);
    expect(t.fixRound).toMatchObject({ round: 2, action: 'CHECKS_FAILED', startHead: pushed2 });
    const turn2 = server.requests.filter((r) => r.session === 'implement-sum' && r.turnIndex === 2);
    expect(JSON.stringify(turn2[0]!.body)).toContain('jsdoc/require-throws'); // the log excerpt reached the worker
    const pushed3 = git(origin, ['rev-parse', branch]);
    expect(git(origin, ['rev-list', '--parents', '-n', '1', pushed3]).split(' ').slice(1)).toEqual([pushed2]);
    expect(pollyReviews()).toBe(reviewsBefore + 2);
    await untilTrue('the reply of round 2', () => replies().length === 2);
    sim.setCheckRun(pushed3, { name: 'lint', status: 'completed', conclusion: 'success' });

    // 4. Another PR touching the same lines merges first on GitHub: this one conflicts; fix round 3 merges main in.
    git(repo, ['fetch', '-q', origin, 'main']);
    git(repo, ['checkout', '-q', '-b', 'human/message', 'FETCH_HEAD']);
    const stats = readFileSync(join(repo, 'src/stats.js'), 'utf8');
    writeFileSync(
      join(repo, 'src/stats.js'),
      stats.replace('/** Sum of a list of numbers. */', '/** Sum of the numbers in xs. */').replace("'mean of an empty list'", "'mean of an empty list (no numbers)'"),
    );
    git(repo, ['commit', '-q', '-am', 'Clearer messages']);
    git(repo, ['push', '-q', origin, 'human/message']);
    git(repo, ['checkout', '-q', 'main']);
    const other = sim.humanOpenPull({ login: 'bob', head: 'human/message', base: 'main', title: 'Clearer messages' });
    const humanMain = sim.humanMerge(other, 'merge');
    expect(git(origin, ['rev-parse', 'main'])).toBe(humanMain);
    t = await until('fix round 3', (x) => x.fixRound?.round === 3 && x.status === 'ready' && x.headCommit !== pushed3);
    expect(t.sessionId).toBe(session);
    expect(t.fixRound).toMatchObject({ round: 3, action: 'CONFLICTS', baseMerge: { commit: humanMain, files: ['src/stats.js'] } });
    const pushed4 = git(origin, ['rev-parse', branch]);
    // A merge commit with two parents — the PR's previous head and the merged main — never a rebase.
    expect(git(origin, ['rev-list', '--parents', '-n', '1', pushed4]).split(' ').slice(1)).toEqual([pushed3, humanMain]);
    expect(git(origin, ['show', `${pushed4}:src/stats.js`])).toBe(RESOLVED.trimEnd()); // (git() trims)
    expect(t.checks.map((c) => c.exitCode)).toEqual([0]); // Polly's own acceptance run on the merge: green
    expect(pollyReviews()).toBe(reviewsBefore + 3);
    await untilTrue('the reply of round 3', () => replies().length === 3);
    // CI goes green on the merge; the watcher sees it merge cleanly again: the PR is ready.
    sim.setCheckRun(pushed4, { name: 'lint', status: 'completed', conclusion: 'success' });
    t = await until(
      'green checks and no conflict on the new head',
      (x) => x.pr?.watch?.headCommit === pushed4 && x.pr.watch.checks === 'passing' && x.pr.watch.conflicts === 'clean',
    );
    expect(t.status).toBe('ready');
    expect(pull).toMatchObject({ state: 'open', merged: false, draft: false, headSha: pushed4 });
    const kinds = journalOf(repo).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'task.fix_round')).toHaveLength(3);
    expect(kinds).toContain('pr.conflicts_resolved');

    // Ground truth: no merge endpoint, nothing refused, no forced ref update; the branch only fast-forwarded; one PR.
    expect(sim.mergeRequests()).toEqual([]);
    expect(sim.refusedRequests()).toEqual([]);
    expect(sim.forceUpdates()).toEqual([]);
    const moves = sim.refUpdates.filter((u) => u.branch === branch);
    expect(moves.map((u) => u.to)).toEqual([pushed1, pushed2, pushed3, pushed4]);
    expect(moves.every((u) => u.fastForward)).toBe(true);
    expect(sim.refUpdates.filter((u) => u.branch === 'main').map((u) => u.to)).toEqual([humanMain]); // only the human moved main
    expect(mainBefore).not.toBe(humanMain);
    expect(sim.requests.filter((r) => r.method === 'POST' && r.path === `/repos/${sim!.owner}/${sim!.repo}/pulls`)).toHaveLength(1);
    expect([...sim.pulls.values()].filter((p) => p.head.startsWith('polly/'))).toHaveLength(1);
    expect(brainLog).not.toContain(TOKEN);
    expect(await expectRunsConform(repo)).toBeGreaterThanOrEqual(2);
  }, 600_000);
});

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function readRegistryOrNull(repo: string): Registry | null {
  try {
    return readRegistry(repo);
  } catch {
    return null;
  }
}

async function untilTrue(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
