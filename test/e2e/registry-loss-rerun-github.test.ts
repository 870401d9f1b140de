/**
 * Registry loss: a plan ran to ready PRs on GitHub (the API simulator), then
 * `.polly/`'s state was lost (registry, journal, logs — the config kept), and the user runs the
 * same plan file again. Every task must end ready with exactly one open PR, the PR Polly opened
 * the first time: the branches already on origin are adopted and built on (fast-forward only,
 * never a force-push), the open PR of each head is found (`GET /pulls?head=owner:branch`) and
 * reused with its body updated, never a second one opened.
 *
 * Real everything but GitHub and the model: the `polly` CLI from dist/, git with a bare repository
 * that the simulator serves over git smart HTTP as `origin`, the real `claude` implementers and `pi`
 * reviewers against the scripted model server.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import { startGitHubSimulator, type GitHubSimulator } from '../helpers/github-simulator.js';
import { git, gitTestEnv } from '../helpers/git-repo.js';
import { sampleProjectWithOrigin } from '../helpers/sample-project.js';
import { stopTrackedBrains } from '../helpers/brain-cleanup.js';
import { readJournalFile, readRegistryFile } from '../helpers/polly-state.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const run = promisify(execFile);
const cli = join(process.cwd(), 'dist/brain/cli.js');
const TOKEN = 'ghp_FAKEtokenForTheSimulator0123456789ab';

const PLAN = `goal: Fix sum() and add median()
tasks:
  - key: t1
    title: Fix sum()
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: sum() in src/stats.js subtracts; make it add, so the existing tests pass.
    acceptance:
      commands: [npm test]
      known_red: [npm test]
  - key: t2
    title: Add median()
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: Add median(xs) in src/median.js with tests in test/median.test.js.
    acceptance:
      commands: [node --test test/median.test.js]
`;

/** Each implementer writes its files whole (the second run's turn writes the same content again). */
const SCRIPT = `sessions:
  - name: implement-sum
    match: {role: implement, contains: ["Fix sum()"]}
    repeat_last: true
    turns:
      - steps:
          - write:
              path: src/stats.js
              content: |
                /** Sum of a list of numbers. */
                export function sum(xs) {
                  return xs.reduce((a, b) => a + b, 0);
                }

                /** Arithmetic mean of a non-empty list of numbers. */
                export function mean(xs) {
                  if (xs.length === 0) throw new RangeError('mean of an empty list');
                  return sum(xs) / xs.length;
                }
          - finish: "sum() adds now."
  - name: implement-median
    match: {role: implement, contains: ["Add median()"]}
    repeat_last: true
    turns:
      - steps:
          - write:
              path: src/median.js
              content: |
                export function median(xs) {
                  const s = [...xs].sort((a, b) => a - b);
                  const mid = Math.floor(s.length / 2);
                  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
                }
          - write:
              path: test/median.test.js
              content: |
                import { test } from 'node:test';
                import assert from 'node:assert/strict';
                import { median } from '../src/median.js';
                test('median', () => assert.equal(median([4, 1, 3, 2]), 2.5));
          - finish: "Added median()."
  - name: review
    match: {role: review}
    repeat_last: true
    turns:
      - steps:
          - read: DIFF.patch
          - finish: '{"blocking": [], "non_blocking": []}'
`;

let server: ScriptedModelServer | null = null;
let sim: GitHubSimulator | null = null;
afterAll(async () => {
  await stopTrackedBrains();
  await server?.close();
  await sim?.close();
});

describe.skipIf(!SANDBOXED)('the same plan run again after the registry was lost (GitHub API simulator)', () => {
  it('adopts the branches and PRs on origin: every task ready, one open PR per task (the first one, reused), branches only fast-forwarded', async () => {
    const { root, repo, origin } = sampleProjectWithOrigin('polly-gh-regloss-');
    const env = gitTestEnv();
    [server, sim] = await Promise.all([startScriptedModelServer({ script: parseModelScript(SCRIPT) }), startGitHubSimulator({ git: origin })]);
    await run(process.execPath, [cli, 'init'], { cwd: repo, env });
    git(repo, ['remote', 'set-url', 'origin', sim.gitUrl!]);
    const modelEnv = useScriptedModels(repo, server.url, {
      extra: [
        [['forge', 'kind'], 'github'],
        [['forge', 'github', 'base_url'], sim.baseUrl],
        [['forge', 'github', 'watch_seconds'], 1],
      ],
    });
    const cliEnv = { ...env, ...modelEnv, GITHUB_TOKEN: TOKEN };
    const polly = (args: string[]) =>
      run(process.execPath, [cli, ...args], { cwd: repo, env: cliEnv, timeout: 240_000, maxBuffer: 16 << 20 }).catch((e: { stdout?: string; stderr?: string; code?: number }) => {
        let log = '';
        try {
          log = readFileSync(join(repo, '.polly/brain.log'), 'utf8').slice(-4000);
        } catch {}
        throw new Error(`polly ${args.join(' ')} failed (${e.code}):\n${e.stderr}\n${e.stdout}\n${log}`);
      });
    const plan = join(root, 'plan.yaml');
    writeFileSync(plan, PLAN);
    const ids = ['p1-t1', 'p1-t2'];
    const openPolly = () =>
      [...sim!.pulls.values()]
        .filter((p) => p.state === 'open' && p.head.startsWith('polly/'))
        .map((p) => [p.head, p.number] as const)
        .sort();

    // 1. The first run: two ready PRs.
    await polly(['run', plan, '--yes', '--json']);
    const first = readRegistryFile(repo);
    for (const id of ids) expect(first.tasks[id]?.status, id).toBe('ready');
    const before = openPolly();
    expect(before.map(([head]) => head)).toEqual(['polly/p1-t1', 'polly/p1-t2']);
    const tips = Object.fromEntries(ids.map((id) => [id, git(origin, ['rev-parse', `refs/heads/polly/${id}`])]));

    // 2. The registry is lost: everything under .polly/ but the config (the worktrees stay).
    for (const name of readdirSync(join(repo, '.polly'))) if (name !== 'config.yaml') rmSync(join(repo, '.polly', name), { recursive: true, force: true });

    // 3. The same plan again.
    const pullsOpened = () => sim!.requests.filter((r) => r.method === 'POST' && /\/pulls$/.test(r.path)).length;
    const opened = pullsOpened();
    const again = await polly(['run', plan, '--yes', '--json']);
    const reg = readRegistryFile(repo);
    for (const id of ids) expect(reg.tasks[id]?.status, `${id}: ${reg.tasks[id]?.statusReason}\n${again.stderr}`).toBe('ready');
    // Exactly one open PR per task: the first run's, found by its head and reused.
    expect(openPolly()).toEqual(before);
    expect(pullsOpened()).toBe(opened);
    expect(sim.requests.some((r) => r.method === 'GET' && /\/pulls$/.test(r.path) && String(r.query.head) === `${sim!.owner}:polly/p1-t1`)).toBe(true);
    for (const id of ids) {
      expect(reg.tasks[id]?.pr?.number).toBe(before.find(([head]) => head === `polly/${id}`)?.[1]);
      // No force-push: every move of a task branch on origin was a fast-forward, and the tip still
      // contains what the first run pushed.
      git(origin, ['merge-base', '--is-ancestor', tips[id]!, `refs/heads/polly/${id}`]);
    }
    const moves = sim.refUpdates.filter((u) => u.branch.startsWith('polly/'));
    expect(moves.filter((u) => !u.fastForward)).toEqual([]);
    expect(sim.forceUpdates()).toEqual([]);
    expect(sim.mergeRequests()).toEqual([]);
    const journal = readJournalFile(repo);
    expect(
      journal
        .filter((e) => e.kind === 'task.branch_adopted')
        .map((e) => e.data.taskId)
        .sort(),
    ).toEqual(ids);
    expect(journal.filter((e) => e.kind === 'task.pr_opened').every((e) => e.data.adopted === true)).toBe(true);
  }, 600_000);
});
