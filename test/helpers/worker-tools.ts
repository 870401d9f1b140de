/**
 * Test helpers for the worker tools (dispatch, send_followup, run_acceptance) against the real
 * CLIs and the scripted model: a task record, a config pointing every harness at the scripted
 * server, a minimal TaskToolContext, and readers of the server's recorded requests.
 */
import { execFileSync } from 'node:child_process';
import { gitTestEnv } from './git-repo.js';
import { join } from 'node:path';
import { DEFAULT_CONFIG, type PollyConfig } from '../../brain/config/config-schema.js';
import type { Forge } from '../../brain/forge/forge.js';
import type { RegistryStore } from '../../brain/registry/registry-store.js';
import type { TaskRecord } from '../../brain/registry/registry-schema.js';
import type { Harness } from '../../brain/core/vocabulary.js';
import type { TaskTool, TaskToolContext, TaskToolOutcome } from '../../brain/task-tools/types.js';
import type { WorkerSupervisor } from '../../workers/worker-turn.js';
import type { RecordedRequest } from '../../scripts/scripted-model/api-route.js';
import type { WorktreeManager } from '../../workers/git/worktree-manager.js';

export const SCRIPTED_KEY_ENV = 'POLLY_SCRIPTED_KEY';

/**
 * Files of a repository where {@link makeTask}'s `npm test` can run (dispatch refuses a command
 * whose program cannot exist in the repository, e.g. `npm test` without package.json).
 */
export const NPM_TEST_PROJECT: Record<string, string> = {
  'README.md': '# test\n',
  'package.json': `${JSON.stringify({ name: 'polly-test', version: '1.0.0', private: true, scripts: { test: 'node -e 0' } })}\n`,
};

/** A queued implement task. */
export function makeTask(id: string, worker: Harness, extra: Partial<TaskRecord> = {}): TaskRecord {
  const now = new Date().toISOString();
  return {
    id,
    planId: null,
    title: `Fix sum (${worker})`,
    purpose: 'implement',
    worker,
    model: null,
    reviewer: null,
    prompt: 'Make `npm test` pass: sum.js must add its arguments.',
    // npm test is red on the base until sum.js adds: this task is the one meant to make it pass.
    acceptance: { commands: ['npm test'], criteria: ['sum(2, 3) is 5'], knownRed: ['npm test'] },
    dependsOn: [],
    status: 'queued',
    statusReason: null,
    attempts: 0,
    reviewRounds: 0,
    branch: null,
    worktree: null,
    baseBranch: 'main',
    baseCommit: null,
    headCommit: null,
    checks: [],
    reviews: [],
    pr: null,
    backupRefs: [],
    sessionId: null,
    feedback: null,
    createdAt: now,
    updatedAt: now,
    ...extra,
  };
}

/** The default config with every harness pointed at the scripted model server at `url`. */
export function scriptedConfig(url: string, patch: (c: PollyConfig) => void = () => {}): PollyConfig {
  const c = structuredClone(DEFAULT_CONFIG);
  c.workers['claude-code'] = { command: 'claude', model: 'claude-sonnet-4-5', allow_root_sandbox: true };
  c.workers.codex = { command: 'codex', model: 'gpt-5.5', provider: { id: 'scripted', base_url: `${url}/v1`, env_key: SCRIPTED_KEY_ENV } };
  c.workers.pi = { command: 'pi', model: 'scripted', provider: null, base_url: `${url}/v1`, api: 'openai-completions', api_key_env: SCRIPTED_KEY_ENV };
  c.acceptance.timeout = 60;
  patch(c);
  return c;
}

/** Env for the agents: the scripted endpoint, dummy keys, and the test git identity (no global git config). */
export function scriptedAgentEnv(url: string): Record<string, string> {
  const gitEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(gitTestEnv({}))) if (v !== undefined) gitEnv[k] = v;
  return { ...gitEnv, ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: 'sk-scripted-dummy-key', [SCRIPTED_KEY_ENV]: 'scripted-dummy-key-123' };
}

/** A Forge that fails the test on any use (the worker tools never touch the forge). */
export const UNUSED_FORGE = new Proxy(
  {},
  {
    get(_t, prop) {
      throw new Error(`the forge was used (${String(prop)}) by a tool that must not use it`);
    },
  },
) as Forge;

export interface ToolRig {
  repoRoot: string;
  store: RegistryStore;
  config: PollyConfig;
  worktrees: WorktreeManager;
  supervisor: WorkerSupervisor;
  agentEnv: Record<string, string>;
}

/** Run `tool` for task `taskId` as order `orderId` (attempt 1), with a fresh read of the task. */
export async function runTool(rig: ToolRig, tool: TaskTool, taskId: string, orderId: string, progress: string[] = []): Promise<TaskToolOutcome> {
  const task = (await rig.store.read()).tasks[taskId];
  if (!task) throw new Error(`no task ${taskId}`);
  const ctx: TaskToolContext = {
    repoRoot: rig.repoRoot,
    store: rig.store,
    config: rig.config,
    task,
    order: { id: orderId, kind: 'effect', tool: 'x', attempt: 1 },
    worktrees: rig.worktrees,
    supervisor: rig.supervisor,
    forge: UNUSED_FORGE,
    agentEnv: rig.agentEnv,
    progress: (line) => progress.push(line),
    signal: new AbortController().signal,
    clock: () => new Date(),
  };
  return tool(ctx);
}

/** Texts of the human (non-tool-result) user messages in a model request, for any of the three APIs. */
export function humanMessages(body: unknown): string[] {
  const b = (body ?? {}) as { messages?: unknown[]; input?: unknown[] };
  const items = (Array.isArray(b.messages) ? b.messages : Array.isArray(b.input) ? b.input : []) as Array<Record<string, unknown>>;
  const out: string[] = [];
  for (const m of items) {
    if (m.role !== 'user') continue;
    const content = m.content;
    if (typeof content === 'string') {
      out.push(content);
      continue;
    }
    if (!Array.isArray(content)) continue;
    const blocks = content as Array<Record<string, unknown>>;
    if (blocks.some((x) => x.type === 'tool_result')) continue;
    const text = blocks
      .filter((x) => x.type === 'text' || x.type === 'input_text')
      .map((x) => String(x.text ?? ''))
      .join('\n');
    if (text) out.push(text);
  }
  return out;
}

/** Model requests of one scripted session. */
export function sessionRequests(requests: RecordedRequest[], session: string): RecordedRequest[] {
  return requests.filter((r) => r.session === session);
}

/** Live processes (`<pid> <args>`) whose command line holds `needle` (zombies excluded). */
export function processWith(needle: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim().match(/^(\d+)\s+(\S+)\s+(.*)$/))
    .filter((m): m is RegExpMatchArray => m !== null && !m[2]!.startsWith('Z') && m[3]!.includes(needle) && !m[3]!.includes('ps -eo'))
    .map((m) => `${m[1]} ${m[3]}`);
}

/** `git` output in `dir` (scrubbed test env). */
export { git } from './git-repo.js';

/** The worker directory root of a rig. */
export const workersDir = (repoRoot: string): string => join(repoRoot, '.polly', 'workers');
