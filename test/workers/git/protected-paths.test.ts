// Protected paths at Polly's commit (issue 27 item 4): green work that changes Polly's config or a
// CI workflow its plan did not declare commits nothing; the worker is told once which files and
// why, the second time the task parks naming them; declared, the change commits and the PR body
// flags it. The real run_acceptance tool in a real worktree, real git (pathspec globs matched by git).
import { mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { renderPrBody } from '../../../brain/forge/pr-body.js';
import { validatePlan } from '../../../brain/plan/plan-schema.js';
import { runAcceptanceTool } from '../../../brain/task-tools/run-acceptance.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { DEFAULT_PROTECTED_PATHS, type PathContract, protectedChanges } from '../../../workers/git/protected-paths.js';
import { createWorktreeManager, type WorktreeManager } from '../../../workers/git/worktree-manager.js';
import { isPollyError } from '../../../brain/core/errors.js';
import { createTestRepo, git, type TestRepo } from '../../helpers/git-repo.js';
import { commitIn, createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';

const write = (dir: string, rel: string, text: string) => {
  mkdirSync(join(dir, rel, '..'), { recursive: true });
  writeFileSync(join(dir, rel), text);
};

/**
 * One file each default protected pattern covers (issue 27 item 4's list, plus the two other
 * places GitHub and GitLab read CODEOWNERS from), and a new file under each directory pattern.
 */
const EACH: Array<{ pattern: string; path: string; added?: string }> = [
  { pattern: '.polly/**', path: '.polly/config.yaml', added: '.polly/policy.yaml' },
  { pattern: '.github/workflows/**', path: '.github/workflows/ci.yml', added: '.github/workflows/release.yaml' },
  { pattern: '.github/actions/**', path: '.github/actions/setup/action.yml', added: '.github/actions/leak/action.yml' },
  { pattern: '.gitlab-ci.yml', path: '.gitlab-ci.yml' },
  { pattern: '.circleci/**', path: '.circleci/config.yml', added: '.circleci/extra.yml' },
  { pattern: 'Jenkinsfile', path: 'Jenkinsfile' },
  { pattern: '.buildkite/**', path: '.buildkite/pipeline.yml', added: '.buildkite/hooks/pre-command' },
  { pattern: 'azure-pipelines.yml', path: 'azure-pipelines.yml' },
  { pattern: '.worktreeinclude', path: '.worktreeinclude' },
  { pattern: '.husky/**', path: '.husky/pre-commit', added: '.husky/pre-push' },
  { pattern: '.pre-commit-config.yaml', path: '.pre-commit-config.yaml' },
  { pattern: 'CODEOWNERS', path: 'CODEOWNERS' },
  { pattern: '.github/CODEOWNERS', path: '.github/CODEOWNERS' },
  { pattern: 'docs/CODEOWNERS', path: 'docs/CODEOWNERS' },
];

describe('each default protected path, through the staging function (worktree manager commitAll)', () => {
  let repo: TestRepo;
  let manager: WorktreeManager;
  const contract = (declared: string[]): PathContract => ({ protectedPatterns: DEFAULT_PROTECTED_PATHS, declaredProtected: declared, paths: null });
  let wt = '';
  const head = () => git(wt, ['rev-parse', 'HEAD']);
  const refusal = async (declared: string[]): Promise<string[] | string> => {
    try {
      return `committed ${await manager.commitAll({ id: 'each', message: 'the change', contract: contract(declared) })}`;
    } catch (error) {
      if (!isPollyError(error, 'protected_path')) throw error;
      return (error.details as { protected: string[] }).protected;
    }
  };
  const flagged = (declared: string[]) =>
    renderPrBody({ taskId: 'each', title: 'A change', prompt: 'Change it.', acceptance: { commands: [], criteria: [] }, checks: [], reviews: [], protectedPaths: declared });

  beforeAll(async () => {
    repo = createTestRepo({ 'README.md': '# r\n', ...Object.fromEntries(EACH.map((e) => [e.path, `${e.path} v1\n`])) });
    manager = createWorktreeManager({ repoRoot: repo.dir });
    wt = (await manager.create({ id: 'each' })).path;
  }, 60_000);
  afterAll(() => rmSync(repo.root, { recursive: true, force: true }));

  it('the table covers every default pattern', () => {
    expect(EACH.map((e) => e.pattern)).toEqual([...DEFAULT_PROTECTED_PATHS]);
  });

  const cases = EACH.flatMap((e) => [
    { kind: 'edited', pattern: e.pattern, path: e.path, change: () => writeFileSync(join(wt, e.path), `${e.path} v2 by the worker\n`) },
    { kind: 'deleted', pattern: e.pattern, path: e.path, change: () => unlinkSync(join(wt, e.path)) },
    ...(e.added ? [{ kind: 'added', pattern: e.pattern, path: e.added, change: () => write(wt, e.added!, 'new\n') }] : []),
  ]);
  it.each(cases)('$path $kind: refused undeclared (nothing committed), committed when the plan declares $pattern, and the PR body flags it', async ({ pattern, path, change }) => {
    change();
    const before = head();
    expect(await refusal([])).toEqual([path]);
    expect(head()).toBe(before);
    // Another protected pattern declared is no declaration of this one.
    expect(await refusal([pattern === 'CODEOWNERS' ? 'Jenkinsfile' : 'CODEOWNERS'])).toEqual([path]);
    expect(head()).toBe(before);
    expect(await refusal([pattern])).toMatch(/^committed [0-9a-f]{40}$/);
    expect(git(wt, ['show', '--name-only', '--format=', 'HEAD'])).toBe(path);
    const body = flagged([pattern]);
    expect(body).toContain('**This task may change protected paths**');
    expect(body).toContain(`\`${pattern}\``);
    expect(flagged([])).not.toContain('protected paths');
  });
});

describe('protected paths at staging', () => {
  it('git matches the staged changes: undeclared protected ones are named, declared ones and the base side of a merge are not', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n', '.github/workflows/ci.yml': 'on: push\n' });
    const t = await createGreenTask(s, 'pp0', { 'a.txt': 'a\n' });
    const wt = t.worktree!;
    const g = createGitRunner();
    write(wt, '.github/workflows/x.yml', 'on: push\njobs: {}\n');
    write(wt, '.polly/config.yaml', 'workers: {}\n');
    write(wt, 'src/ok.js', 'ok\n');
    write(wt, 'sub/dir/Jenkinsfile', 'not the root one\n');
    git(wt, ['add', '-A', '-f']);
    expect(await protectedChanges(g, wt, DEFAULT_PROTECTED_PATHS)).toEqual(['.github/workflows/x.yml', '.polly/config.yaml']);
    expect(await protectedChanges(g, wt, DEFAULT_PROTECTED_PATHS, ['.github/workflows/*.yml'])).toEqual(['.polly/config.yaml']);
    // A catch-all declaration is a declaration too: the human saw it at the plan gate.
    expect(await protectedChanges(g, wt, DEFAULT_PROTECTED_PATHS, ['**'])).toEqual([]);
    git(wt, ['reset', '-q', '--hard']);
    git(wt, ['clean', '-qfd']);
    // The base changed ci.yml; merging it into the task branch is the base's change, not the task's.
    commitIn(s.repo.dir, { '.github/workflows/ci.yml': 'on: [push, pull_request]\n' }, 'ci on PRs');
    git(wt, ['merge', '--no-commit', '--no-ff', 'main']);
    expect(await protectedChanges(g, wt, DEFAULT_PROTECTED_PATHS)).toEqual([]);
    // …unless the task changes it further during the merge.
    write(wt, '.github/workflows/ci.yml', 'on: [push, pull_request]\njobs: {evil: {}}\n');
    git(wt, ['add', '-A']);
    expect(await protectedChanges(g, wt, DEFAULT_PROTECTED_PATHS)).toEqual(['.github/workflows/ci.yml']);
  }, 60_000);

  it('run_acceptance: green work on an undeclared workflow commits nothing, goes back to the worker once, then parks the task; declared, it commits and the PR flags it', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const t = await createGreenTask(s, 'pp1', { 'a.txt': 'a\n' });
    await s.store.update((d) => {
      d.tasks.pp1!.acceptance.commands = ['true'];
    });
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const headBefore = git(t.worktree!, ['rev-parse', 'HEAD']);
    write(t.worktree!, '.github/workflows/x.yml', 'on: push\njobs: {leak: {steps: [{run: "echo ${{ secrets.NPM_TOKEN }}"}]}}\n');
    write(t.worktree!, 'b.txt', 'b\n');

    const first = await tools.run(runAcceptanceTool, 'pp1', 'o-1');
    expect(first).toMatchObject({ outcome: 'failure', permanent: true });
    let task = (await s.store.read()).tasks.pp1!;
    expect(task.status).toBe('fixing');
    expect(task.statusReason).toBe('protected paths changed: .github/workflows/x.yml');
    expect(task.feedback).toContain('- .github/workflows/x.yml');
    expect(task.feedback).toContain('nothing was committed');
    expect(git(t.worktree!, ['rev-parse', 'HEAD'])).toBe(headBefore);

    const second = await tools.run(runAcceptanceTool, 'pp1', 'o-2');
    expect(second).toMatchObject({ outcome: 'failure', permanent: true });
    task = (await s.store.read()).tasks.pp1!;
    // Parked (issue 29: one path-contract refusal), the work kept in the worktree and a backup ref.
    expect(task.status).toBe('parked');
    expect(task.statusReason).toContain('protected paths changed: .github/workflows/x.yml, again after the worker was told');
    expect(task.statusReason).toContain('protected_paths');
    expect(task.backupRefs.at(-1)).toMatch(/^refs\/polly\/backup\/pp1\//);
    expect(git(t.worktree!, ['rev-parse', 'HEAD'])).toBe(headBefore);

    // Declared by the plan (what the human approved): committed, and the PR body flags it.
    await s.store.update((d) => {
      const r = d.tasks.pp1!;
      r.protectedPaths = ['.github/workflows/x.yml'];
      r.status = 'fixing';
    });
    const third = await tools.run(runAcceptanceTool, 'pp1', 'o-3');
    expect(third.outcome, third.note).toBe('ok');
    expect(git(t.worktree!, ['show', '--name-only', '--format=', 'HEAD']).split('\n').sort()).toEqual(['.github/workflows/x.yml', 'b.txt']);
    task = (await s.store.read()).tasks.pp1!;
    const body = renderPrBody({
      taskId: task.id,
      title: task.title,
      prompt: task.prompt,
      acceptance: task.acceptance,
      checks: task.checks,
      reviews: [],
      protectedPaths: task.protectedPaths!,
    });
    expect(body).toContain('**This task may change protected paths**');
    expect(body).toContain('`.github/workflows/x.yml`');
  }, 60_000);

  it('run_acceptance with declared paths (issue 29): a file outside them commits nothing, the worker is told which and why, then the task parks naming it; inside them it commits as before, a declared protected path too', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n', 'src/api/users.ts': 'v1\n', 'src/ui/app.ts': 'v1\n' });
    const t = await createGreenTask(s, 'pc1', { 'src/api/users.ts': 'v2\n' });
    await s.store.update((d) => {
      d.tasks.pc1!.acceptance.commands = ['true'];
      d.tasks.pc1!.paths = ['src/api/**'];
    });
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const wt = t.worktree!;
    const headBefore = git(wt, ['rev-parse', 'HEAD']);
    write(wt, 'src/api/orders.ts', 'new\n');
    write(wt, 'src/ui/app.ts', 'v2\n');
    // A file both outside the paths and protected is named once, as protected.
    write(wt, '.polly/config.yaml', 'workers: {}\n');

    expect(await tools.run(runAcceptanceTool, 'pc1', 'o-1')).toMatchObject({ outcome: 'failure', permanent: true });
    let task = (await s.store.read()).tasks.pc1!;
    expect(task.status).toBe('fixing');
    expect(task.statusReason).toBe("protected paths changed: .polly/config.yaml; paths outside the task's paths (src/api/**) changed: src/ui/app.ts");
    expect(task.feedback).toContain('These files are outside the paths your task may change (src/api/**):\n\n- src/ui/app.ts');
    expect(task.feedback).toContain('These files are protected');
    expect(task.feedback).not.toContain('- src/api/orders.ts');
    expect(git(wt, ['rev-parse', 'HEAD'])).toBe(headBefore);

    // The worker reverts the protected file but keeps the one outside its paths: parked, named.
    git(wt, ['reset', '-q', '--', '.polly/config.yaml']);
    rmSync(join(wt, '.polly'), { recursive: true, force: true });
    expect(await tools.run(runAcceptanceTool, 'pc1', 'o-2')).toMatchObject({ outcome: 'failure', permanent: true });
    task = (await s.store.read()).tasks.pc1!;
    expect(task.status).toBe('parked');
    expect(task.statusReason).toContain("paths outside the task's paths (src/api/**) changed: src/ui/app.ts, again after the worker was told");
    expect(task.statusReason).not.toContain('protected paths changed');
    expect(git(wt, ['rev-parse', 'HEAD'])).toBe(headBefore);
    expect(readFileSync(join(wt, 'src/ui/app.ts'), 'utf8')).toBe('v2\n');
    const journal = readFileSync(join(s.repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal).toContain('"kind":"task.parked"');

    // Inside the paths (and a protected path the plan declares): committed as before.
    git(wt, ['checkout', '-q', 'HEAD', '--', 'src/ui/app.ts']);
    write(wt, '.github/workflows/api.yml', 'on: push\n');
    await s.store.update((d) => {
      const r = d.tasks.pc1!;
      r.protectedPaths = ['.github/workflows/api.yml'];
      r.status = 'fixing';
    });
    const third = await tools.run(runAcceptanceTool, 'pc1', 'o-3');
    expect(third.outcome, third.note).toBe('ok');
    expect(git(wt, ['show', '--name-only', '--format=', 'HEAD']).split('\n').sort()).toEqual(['.github/workflows/api.yml', 'src/api/orders.ts']);
  }, 60_000);

  it('a plan names them as protected_paths; a pattern outside the repository is refused with the offending value', () => {
    const task = {
      key: 't1',
      title: 'CI',
      purpose: 'implement',
      worker: 'codex',
      prompt: 'Add CI.',
      acceptance: { commands: ['true'] },
      protected_paths: ['.github/workflows/ci.yml'],
    };
    expect(validatePlan({ tasks: [task] }, 'plan.yaml').tasks[0]!.protectedPaths).toEqual(['.github/workflows/ci.yml']);
    expect(() => validatePlan({ tasks: [{ ...task, protected_paths: ['../outside'] }] }, 'plan.yaml')).toThrow(/"\.\.\/outside" is a "\.\." segment/);
    expect(() => validatePlan({ tasks: [{ ...task, protected_paths: ['/etc/x'] }] }, 'plan.yaml')).toThrow(/an absolute path/);
  });
});
