/**
 * The landing order kept current, and stacked PRs retargeted after their parent merges (issue 29
 * item 3): real git (a temp repository with a bare origin), the real local forge and registry
 * store, the real PR tools (push, open_draft_pr, mark_ready); on GitHub, Octokit against the API
 * simulator. No agent runs here (test/e2e/landing-order.test.ts runs the same story with the real
 * CLIs).
 */
import { afterAll, describe, expect, test } from 'vitest';
import { watchMerges } from '../../../brain/forge/after-merge.js';
import { createGitHubForge } from '../../../brain/forge/github-forge.js';
import { syncLandingOrder } from '../../../brain/forge/landing-sync.js';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { actionablePrEvents } from '../../../brain/process/pr-events.js';
import { createMarkReadyTool } from '../../../brain/task-tools/mark-ready.js';
import { createOpenDraftPrTool } from '../../../brain/task-tools/open-draft-pr.js';
import { createPushTool } from '../../../brain/task-tools/push.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createFakeClock, startGitHubSimulator, type GitHubSimulator } from '../../helpers/github-simulator.js';
import { humanMerge } from '../../helpers/human-merge.js';
import { createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner, type PrStepSetting } from '../../helpers/pr-step-fixture.js';
import type { Forge } from '../../../brain/forge/forge.js';
import { overviewPage } from '../../../brain/ui/ui-pages.js';

const NAMES = 'alpha\nbravo\ncharlie\ndelta\necho\nfoxtrot\ngolf\n';
const cap = (word: string, text = NAMES) => text.replace(`${word}\n`, `${word.toUpperCase()}\n`);

let sim: GitHubSimulator | null = null;
afterAll(async () => {
  await sim?.close();
});

/** Push, open and mark ready task `id`'s PR through the real tools. */
async function toReady(s: PrStepSetting, forge: Forge, id: string, before?: () => void): Promise<void> {
  const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
  expect((await runner.run(createPushTool(), id, `${id}-push`)).outcome).toBe('ok');
  before?.();
  for (const [name, tool] of [
    ['open', createOpenDraftPrTool()],
    ['ready', createMarkReadyTool()],
  ] as const) {
    const r = await runner.run(tool, id, `${id}-${name}`);
    expect(r.outcome, r.note).toBe('ok');
  }
}

describe('landing order in the registry and the PR bodies; stacked PRs retargeted', () => {
  test('local forge: three PRs on one file and one stacked: the order and "Land after #N" in each body, unchanged when nothing moved; after the human merges #1 the stacked PR targets main, both dependants get a base-merge event, and the bodies follow', async () => {
    const s = createPrStepSetting({ 'docs/names.txt': NAMES });
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    for (const [id, word] of [
      ['l1', 'bravo'],
      ['l2', 'charlie'],
      ['l3', 'delta'],
    ] as const) {
      await createGreenTask(s, id, { 'docs/names.txt': cap(word) });
      await toReady(s, forge, id);
    }
    // l4 needs l1's change: stacked on it, from its branch.
    await createGreenTask(s, 'l4', { 'docs/names.txt': cap('foxtrot', cap('bravo')) }, { baseBranch: 'polly/l1', stackedOn: 'l1' });
    await toReady(s, forge, 'l4');
    let reg = await s.store.read();
    expect(reg.pullRequests['4']).toMatchObject({ head: 'polly/l4', base: 'polly/l1' });

    const git = createGitRunner();
    const first = await syncLandingOrder({ store: s.store, forge, git, repoRoot: s.repo.dir });
    expect(first).toMatchObject({ computed: true, updated: [1, 2, 3, 4], errors: [] });
    expect(first.landing).toMatchObject({ forge: 'local', order: [1, 4, 3, 2], after: { 1: [], 2: [1, 3], 3: [], 4: [1] }, stackedOn: { 4: 1 }, conflicts: 1, exact: true });
    expect(first.landing!.pairs).toEqual([
      { a: 1, b: 2, files: ['docs/names.txt'] },
      { a: 2, b: 3, files: ['docs/names.txt'] },
    ]);
    reg = await s.store.read();
    expect(reg.landing?.order).toEqual([1, 4, 3, 2]);
    const body = (n: number) => reg.pullRequests[String(n)]!.body;
    expect(body(2)).toContain(
      '**Land after #1, #3**: this PR conflicts with them in `docs/names.txt`. Once they merge, Polly merges the base into this PR in a fix round (position 4 of 4 in `polly pr order`).',
    );
    expect(body(4)).toContain(
      '**Land after #1**: this PR is stacked on #1 (it targets `polly/l1`). Once #1 merges, Polly retargets this PR to `main` and merges that base in (position 2 of 4 in `polly pr order`).',
    );
    expect(body(1)).toContain('Lands clean: it conflicts with no open PR ahead of it (position 1 of 4');
    // The rest of the body is still the task's (checks, review, the no-merge note).
    expect(body(2)).toContain('## Checks (run by Polly)');
    expect(body(2)).toContain('Polly never merges');
    // The dashboard's overview shows the same order, one row per PR, with what each lands after and why.
    // Cells may carry attributes (the phone layout labels each with its column: `<td data-label="#">`).
    const page = overviewPage(reg);
    expect(page).toContain('<h2>Landing order</h2>');
    const rows = [
      ...page
        .slice(page.indexOf('id="landing-order"'))
        .split('</table>')[0]!
        .matchAll(/<tr><td[^>]*>(\d+)<\/td><td[^>]*><a href="prs\/(\d+)">/g),
    ].map((m) => [m[1], m[2]]);
    expect(rows).toEqual([
      ['1', '1'],
      ['2', '4'],
      ['3', '3'],
      ['4', '2'],
    ]);
    expect(page).toContain('stacked on #1: retargeted to its base once it merges');
    expect(page).toContain('conflicts in docs/names.txt');
    expect((await s.store.journal()).filter((e) => e.kind === 'pr.landing_order').map((e) => e.data.order)).toEqual([[1, 4, 3, 2]]);

    // Nothing moved: nothing is computed or written again.
    expect(await syncLandingOrder({ store: s.store, forge, git, repoRoot: s.repo.dir })).toMatchObject({ computed: false, updated: [] });

    // The human merges #1 (l1) with a merge commit.
    const merged = humanMerge(s.repo, 'polly/l1', 'merge');
    const report = await watchMerges({ store: s.store, forge, worktrees: s.worktrees });
    expect(report.errors).toEqual([]);
    expect(report.done.map((d) => d.taskId)).toEqual(['l1']);
    expect(report.retargeted).toEqual([{ taskId: 'l4', number: 4, from: 'polly/l1', to: 'main', parentTaskId: 'l1' }]);
    reg = await s.store.read();
    expect(reg.pullRequests['4']).toMatchObject({ base: 'main', state: 'ready' });
    expect(reg.tasks.l4!.baseBranch).toBe('main');
    const journal = await s.store.journal();
    expect(journal.filter((e) => e.kind === 'pr.retargeted').map((e) => e.data)).toEqual([
      { forge: 'local', number: 4, taskId: 'l4', from: 'polly/l1', to: 'main', parentTaskId: 'l1', parentNumber: 1 },
    ]);
    // #2 conflicts with main now (the local forge saw it on the pass's read): both dependants get a base-merge round.
    expect(journal.filter((e) => e.kind === 'pr.conflicts').map((e) => [e.data.number, e.data.baseCommit, e.data.files])).toEqual([[2, merged, ['docs/names.txt']]]);
    expect(actionablePrEvents(journal, 'l2', 0).map((e) => e.action)).toEqual(['CONFLICTS']);
    expect(actionablePrEvents(journal, 'l4', 0).map((e) => [e.action, e.line])).toEqual([['CONFLICTS', 'was retargeted from polly/l1 to main after PR #1 merged']]);
    expect(actionablePrEvents(journal, 'l3', 0)).toEqual([]);
    // A second pass retargets nothing again.
    expect((await watchMerges({ store: s.store, forge, worktrees: s.worktrees })).retargeted ?? []).toEqual([]);

    // The order and the bodies follow: #1 is gone, #4 is no longer stacked.
    const after = await syncLandingOrder({ store: s.store, forge, git, repoRoot: s.repo.dir });
    expect(after.computed).toBe(true);
    expect(after.landing!.order).not.toContain(1);
    expect(after.landing!.stackedOn).toEqual({});
    reg = await s.store.read();
    expect(body(4)).not.toContain('stacked on');
    expect(body(2)).not.toContain('#1');
    expect(after.updated).toEqual(expect.arrayContaining([2, 4]));
    // Polly merged nothing into main.
    expect(s.repo.git(['rev-parse', 'origin/main'])).toBe(merged);
  }, 240_000);

  test('GitHub: the stacked PR targets its parent branch, "Land after #1" is PATCHed into its body, and after the human merges #1 on GitHub it is retargeted to main with PATCH pulls base; no merge request', async () => {
    const s = createPrStepSetting({ 'docs/names.txt': NAMES });
    sim = await startGitHubSimulator({ clock: createFakeClock(), branches: { main: s.repo.git(['rev-parse', 'main']) } });
    const forge = createGitHubForge({ owner: sim.owner, repo: sim.repo, token: 'ghp_FAKEtokenForTheSimulator0123456789ab', baseUrl: sim.baseUrl });
    const parent = await createGreenTask(s, 'g1', { 'docs/names.txt': cap('bravo') });
    await toReady(s, forge, 'g1', () => sim!.setBranch('polly/g1', parent.headCommit!));
    const child = await createGreenTask(s, 'g2', { 'docs/names.txt': cap('foxtrot', cap('bravo')) }, { baseBranch: 'polly/g1', stackedOn: 'g1' });
    await toReady(s, forge, 'g2', () => sim!.setBranch('polly/g2', child.headCommit!));
    expect(sim.pulls.get(2)).toMatchObject({ head: 'polly/g2', base: 'polly/g1' });

    const synced = await syncLandingOrder({ store: s.store, forge, git: createGitRunner(), repoRoot: s.repo.dir });
    expect(synced).toMatchObject({ computed: true, updated: [1, 2], errors: [] });
    expect(synced.landing).toMatchObject({ forge: 'github', order: [1, 2], stackedOn: { 2: 1 } });
    expect(sim.pulls.get(2)!.body).toContain('**Land after #1**: this PR is stacked on #1 (it targets `polly/g1`)');
    expect(sim.pulls.get(1)!.body).toContain('Lands clean');

    sim.humanMerge(1, 'merge');
    const report = await watchMerges({ store: s.store, forge, worktrees: s.worktrees });
    expect(report.errors).toEqual([]);
    expect(report.retargeted).toEqual([{ taskId: 'g2', number: 2, from: 'polly/g1', to: 'main', parentTaskId: 'g1' }]);
    expect(sim.pulls.get(2)).toMatchObject({ base: 'main', state: 'open' });
    const patches = sim.requests.filter((r) => r.method === 'PATCH' && /\/pulls\/2$/.test(r.path));
    expect(patches.length).toBeGreaterThanOrEqual(2); // the body, then the base
    expect((await forge.getPullRequest(2)).base).toBe('main');
    expect((await s.store.read()).tasks.g2!.baseBranch).toBe('main');
    // Retargeting again is a no-op; a merged PR cannot be retargeted.
    const before = sim.requests.length;
    await forge.retarget(2, 'main');
    expect(sim.requests.slice(before).filter((r) => r.method === 'PATCH')).toEqual([]);
    await expect(forge.retarget(1, 'main')).rejects.toMatchObject({ code: 'conflict' });
    expect(sim.mergeRequests()).toEqual([]);
    expect(sim.refusedRequests()).toEqual([]);
  }, 120_000);
});
