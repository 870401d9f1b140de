/**
 * Fresh base (issue 16, Build item 4): a task's worktree starts from the fetched remote branch, not
 * the possibly stale local one, and a task's declared `base:` is both where it starts and what its
 * PR targets. Real git (temp repo with a bare origin, a second clone playing the human), the real
 * worktree manager, the real local forge and the real `open_draft_pr` tool.
 */
import { existsSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { parsePlanFile } from '../../../brain/plan/plan-schema.js';
import { planTaskRecord } from '../../../brain/process/brain-process.js';
import type { PlanRecord, TaskRecord } from '../../../brain/registry/registry-schema.js';
import { ensureWorktree } from '../../../brain/task-tools/dispatch.js';
import { createOpenDraftPrTool } from '../../../brain/task-tools/open-draft-pr.js';
import { commitIn, createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner, type PrStepSetting } from '../../helpers/pr-step-fixture.js';
import { git } from '../../helpers/git-repo.js';

/** A second clone of origin: the human working on GitHub / another machine. */
function humanClone(s: PrStepSetting): string {
  const dir = join(realpathSync(mkdtempSync(join(tmpdir(), 'polly-human-'))), 'clone');
  git(s.repo.root, ['clone', '-q', s.repo.remote, dir]);
  git(dir, ['config', 'user.name', 'Human']);
  git(dir, ['config', 'user.email', 'human@example.com']);
  return dir;
}

/** Approve `yaml` as plan `id` and insert its task records into the registry. */
async function approvePlan(s: PrStepSetting, id: string, yaml: string): Promise<TaskRecord[]> {
  const plan = parsePlanFile(yaml, `${id}.yaml`);
  const at = new Date().toISOString();
  const record: PlanRecord = { id, goalId: null, createdAt: at, tasks: plan.tasks, admission: null, gate: 'approved', askedAt: null, decidedAt: at, decidedBy: 'test' };
  const tasks = plan.tasks.map((spec) => planTaskRecord(record, spec, testConfig(null), at));
  await s.store.update((draft) => {
    draft.plans[id] = record;
    for (const t of tasks) draft.tasks[t.id] = t;
  });
  return tasks;
}

const PLAN = (base: string | null) => `
tasks:
  - key: t1
    title: Follow-up change
    purpose: implement
    worker: claude-code
    reviewer: pi
    prompt: Add b.txt.
    acceptance: { commands: ["test -f b.txt"] }
${base ? `    base: ${base}\n` : ''}`;

describe('fresh base', () => {
  test('a follow-up plan after a human merge branches from the merged origin/main, and Polly warns that local main is behind', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    await createGreenTask(s, 'a1', { 'a.txt': 'a\n' });
    const pr = await forge.openDraftPullRequest({ head: 'polly/a1', base: 'main', title: 'a1', body: 'a1' });
    // The human merges on the remote side; the local checkout's main is not pulled.
    const human = humanClone(s);
    git(human, ['merge', '--no-ff', '-q', '-m', 'Merge PR 1', 'origin/polly/a1']);
    git(human, ['push', '-q', 'origin', 'main']);
    const merged = git(human, ['rev-parse', 'HEAD']);
    const staleLocal = s.repo.git(['rev-parse', 'main']);
    expect(staleLocal).not.toBe(merged);
    expect((await forge.getPullRequest(pr.number)).state).toBe('merged');

    const [task] = await approvePlan(s, 'p2', PLAN(null));
    expect(task!.baseBranch).toBeNull();
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    let prepared: TaskRecord | null = null;
    await runner.run(
      async (ctx) => {
        prepared = (await ensureWorktree(ctx)).task;
        return { outcome: 'ok', note: 'worktree ready' };
      },
      task!.id,
      'o1',
    );
    const t = prepared as unknown as TaskRecord;
    expect(t.baseBranch).toBe('main');
    expect(t.baseCommit).toBe(merged);
    expect(git(t.worktree!, ['rev-parse', 'HEAD'])).toBe(merged);
    expect(existsSync(join(t.worktree!, 'a.txt'))).toBe(true);
    expect(s.repo.git(['rev-parse', 'refs/remotes/origin/main'])).toBe(merged);
    // The local branch is left alone (Polly never moves the user's main), and the user is told.
    expect(s.repo.git(['rev-parse', 'main'])).toBe(staleLocal);
    expect(runner.progress).toContain(
      `${task!.id}: warning: local main is 2 commit(s) behind origin/main; the worktree starts from origin/main. Run "git pull" in ${s.repo.dir} to update your checkout.`,
    );
  });

  test('a task with base: release/1.x starts from origin/release/1.x and opens its PR against release/1.x', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const human = humanClone(s);
    git(human, ['switch', '-q', '-c', 'release/1.x']);
    commitIn(human, { VERSION: '1.4.2\n' }, 'release 1.4.2');
    git(human, ['push', '-q', 'origin', 'release/1.x']);
    const releaseTip = git(human, ['rev-parse', 'HEAD']);

    const [task] = await approvePlan(s, 'p3', PLAN('release/1.x'));
    expect(task!.baseBranch).toBe('release/1.x');
    expect(task!.base).toBe('release/1.x');
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    let worktree = '';
    await runner.run(
      async (ctx) => {
        const { task: t } = await ensureWorktree(ctx);
        expect(t.baseCommit).toBe(releaseTip);
        worktree = t.worktree!;
        return { outcome: 'ok', note: 'worktree ready' };
      },
      task!.id,
      'o1',
    );
    // No local release/1.x exists: nothing is behind, nothing to warn about.
    expect(runner.progress.filter((l) => l.includes('warning'))).toEqual([]);
    const head = commitIn(worktree, { 'b.txt': 'b\n' }, 't1: implement');
    await s.store.update((draft) => {
      const t = draft.tasks[task!.id]!;
      t.status = 'green';
      t.headCommit = head;
    });
    const opened = await runner.run(createOpenDraftPrTool(), task!.id, 'o2');
    expect(opened.outcome).toBe('ok');
    const prs = await forge.listPullRequests();
    expect(prs.map((p) => [p.head, p.base, p.headSha])).toEqual([[`polly/${task!.id}`, 'release/1.x', head]]);
    // The PR brings exactly the task's commit on top of the release branch.
    expect(await forge.diff(prs[0]!.number)).toContain('+++ b/b.txt');
    expect(await forge.diff(prs[0]!.number)).not.toContain('VERSION');
  });

  test('a base the remote does not have: the local branch, with a warning that it may be stale', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    s.repo.git(['branch', 'local-only']);
    const [task] = await approvePlan(s, 'p4', PLAN('local-only'));
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    let base: string | null = null;
    await runner.run(
      async (ctx) => {
        base = (await ensureWorktree(ctx)).task.baseCommit;
        return { outcome: 'ok', note: 'worktree ready' };
      },
      task!.id,
      'o1',
    );
    expect(base).toBe(s.repo.git(['rev-parse', 'local-only']));
    const warnings = runner.progress.filter((l) => l.includes('warning'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^p4-t1: warning: could not fetch local-only from origin \(.*\); the worktree starts from the local local-only, which may be stale\./);
  });

  test("an origin whose HEAD names a branch nobody pushed (git init --bare's master beside main): the base is origin/main, and unpushed local commits are named", async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    git(s.repo.remote, ['symbolic-ref', 'HEAD', 'refs/heads/master']);
    s.repo.git(['remote', 'set-head', 'origin', '--delete']);
    const pushed = s.repo.git(['rev-parse', 'main']);
    const local = commitIn(s.repo.dir, { '.polly-note': 'config\n' }, 'Polly config (not pushed)');
    const [task] = await approvePlan(s, 'p5', PLAN(null));
    const forge = createLocalForge({ repoRoot: s.repo.dir, store: s.store });
    const runner = toolRunner(s, { forge, supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    let t: TaskRecord | null = null;
    await runner.run(
      async (ctx) => {
        t = (await ensureWorktree(ctx)).task;
        return { outcome: 'ok', note: 'worktree ready' };
      },
      task!.id,
      'o1',
    );
    expect(s.repo.git(['rev-parse', 'refs/remotes/origin/main'])).toBe(pushed);
    // Local main is strictly ahead: the task builds on it, and the user is told the PR carries the commit.
    expect((t as unknown as TaskRecord).baseCommit).toBe(local);
    expect(runner.progress).toContain(
      `${task!.id}: warning: local main has 1 commit(s) not on origin/main; the worktree starts from local main, so its PR will carry them too. Push them first to keep the PR to the task's own work.`,
    );
  });

  test('a plan with a base that is not a branch name is refused naming the field', () => {
    expect(() => parsePlanFile(PLAN('../etc'), 'bad.yaml')).toThrow(/tasks\[0\]\.base: a base is a branch name/);
  });
});
