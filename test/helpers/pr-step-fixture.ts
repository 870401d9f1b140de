/**
 * A real setting for PR-step tests: a temp repository with a bare `origin`, a file registry store
 * in `<repo>/.polly`, the real worktree manager, a task whose worktree holds one committed change,
 * and a {@link TaskToolContext} builder (fresh task read per call, as the executor does).
 */
import { mkdtempSync, realpathSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DEFAULT_CONFIG, type PollyConfig } from '../../brain/config/config-schema.js';
import type { Forge } from '../../brain/forge/forge.js';
import { createFileRegistryStore, type FileRegistryStore } from '../../brain/registry/registry-store.js';
import type { TaskRecord } from '../../brain/registry/registry-schema.js';
import type { Harness } from '../../brain/core/vocabulary.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from '../../brain/task-tools/types.js';
import type { WorkerSupervisor } from '../../workers/worker-turn.js';
import { createWorktreeManager, type WorktreeManager } from '../../workers/git/worktree-manager.js';
import { createTestRepo, git, type TestRepo } from './git-repo.js';

export interface PrStepSetting {
  repo: TestRepo;
  store: FileRegistryStore;
  worktrees: WorktreeManager;
  /** Temp dir outside the repository for agent state, HOME, … */
  outside: string;
}

/** A repository with `files` on main, pushed to a bare origin; store and worktree manager over it. */
export function createPrStepSetting(files: Record<string, string>): PrStepSetting {
  const repo = createTestRepo(files);
  const store = createFileRegistryStore(join(repo.dir, '.polly'));
  const worktrees = createWorktreeManager({ repoRoot: repo.dir });
  const outside = realpathSync(mkdtempSync(join(tmpdir(), 'polly-prstep-state-')));
  return { repo, store, worktrees, outside };
}

/** Config for tests: the seed's, with pi and Claude pointed at the scripted model server at `modelUrl`. */
export function testConfig(modelUrl: string | null): PollyConfig {
  const config = structuredClone(DEFAULT_CONFIG);
  if (modelUrl) {
    config.workers.pi = { ...config.workers.pi, base_url: `${modelUrl}/v1`, api_key_env: 'POLLY_SCRIPTED_API_KEY', api: 'openai-completions' };
    config.workers['claude-code'] = { ...config.workers['claude-code'], allow_root_sandbox: true };
  }
  return config;
}

/** Env for agent processes talking to the scripted server. */
export function scriptedAgentEnv(modelUrl: string, home: string): Record<string, string> {
  return { POLLY_SCRIPTED_API_KEY: 'scripted-dummy-key', ANTHROPIC_BASE_URL: modelUrl, ANTHROPIC_API_KEY: 'sk-scripted-dummy-key', HOME: home };
}

/**
 * Create task `id`'s worktree from main (or `options.baseBranch`, e.g. a stacked task's parent branch), write `change` (path → content) in it and commit it (the
 * implementer's work), and insert the task into the registry as green with its checks.
 */
export async function createGreenTask(
  s: PrStepSetting,
  id: string,
  change: Record<string, string>,
  options: { worker?: Harness; reviewer?: Harness | null; title?: string; baseBranch?: string; stackedOn?: string } = {},
): Promise<TaskRecord> {
  const wt = await s.worktrees.create({ id, baseBranch: options.baseBranch ?? 'main' });
  commitIn(wt.path, change, `${id}: implement`);
  const head = git(wt.path, ['rev-parse', 'HEAD']);
  const now = new Date().toISOString();
  const task: TaskRecord = {
    id,
    planId: null,
    title: options.title ?? `Change for ${id}`,
    purpose: 'implement',
    worker: options.worker ?? 'claude-code',
    model: null,
    reviewer: options.reviewer ?? null,
    prompt: `Implement the change of ${id}.`,
    acceptance: { commands: ['node --test'], criteria: ['add(a, b) returns the sum'] },
    dependsOn: [],
    status: 'green',
    statusReason: null,
    attempts: 1,
    reviewRounds: 0,
    branch: wt.branch,
    worktree: wt.path,
    baseBranch: options.baseBranch ?? 'main',
    ...(options.stackedOn ? { stackedOn: options.stackedOn } : {}),
    baseCommit: wt.baseCommit,
    headCommit: head,
    checks: [{ command: 'node --test', exitCode: 0, timedOut: false, durationMs: 420, output: `ok 1 - add (${wt.path}/test/add.test.js)\n` }],
    reviews: [],
    pr: null,
    backupRefs: [],
    sessionId: null,
    feedback: null,
    createdAt: now,
    updatedAt: now,
  };
  await s.store.update((draft) => {
    draft.tasks[id] = task;
  });
  return task;
}

/** Write files in `dir` (a worktree) and commit them there. Returns the commit. */
export function commitIn(dir: string, change: Record<string, string>, message: string): string {
  for (const [p, c] of Object.entries(change)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), c);
  }
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', message]);
  return git(dir, ['rev-parse', 'HEAD']);
}

export interface ToolRunner {
  /** Run `tool` for task `taskId` as work order `orderId` (a fresh task read, as the executor does). */
  run(tool: TaskTool, taskId: string, orderId: string, kind?: string): Promise<TaskToolOutcome>;
  progress: string[];
}

/** Build contexts over `s` with `forge` and `supervisor`. */
export function toolRunner(s: PrStepSetting, deps: { forge: Forge; supervisor: WorkerSupervisor; config: PollyConfig; agentEnv: Record<string, string> }): ToolRunner {
  const progress: string[] = [];
  return {
    progress,
    async run(tool, taskId, orderId, kind = 'effect') {
      const task = (await s.store.read()).tasks[taskId]!;
      const ctx: TaskToolContext = {
        repoRoot: s.repo.dir,
        store: s.store,
        config: deps.config,
        task,
        order: { id: orderId, kind, tool: kind, attempt: 1 },
        worktrees: s.worktrees,
        supervisor: deps.supervisor,
        forge: deps.forge,
        agentEnv: deps.agentEnv,
        progress: (line) => progress.push(line),
        signal: new AbortController().signal,
        clock: () => new Date(),
      };
      return tool(ctx);
    },
  };
}

/** A supervisor that fails the test if called (for tools that must not start agents). */
export const noAgents: WorkerSupervisor = {
  runTurn: async () => {
    throw new Error('no agent may run in this test');
  },
  cancelTask: async () => ({ cancelled: 0 }),
  reconcile: async () => ({ adopted: [], reaped: [] }),
  live: async () => [],
};
