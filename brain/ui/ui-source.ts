/**
 * What the dashboard reads and the one thing it writes, behind a narrow port so that the server
 * and its pages never open files themselves. The real source reads the same state as the CLI —
 * the registry (`.polly/registry.json` through the registry store), the journal
 * (`.polly/journal.jsonl`), the workers' `events.jsonl` files, the gate's decision log
 * (`.polly/gate-decisions.jsonl`, written by Polly's processes only), the workflow runs in the LMDB run store (`.polly/runs/`, read
 * through the run store's `listRuns`/`journal` as `polly check --run` reads them) and the local
 * forge's diffs — and keeps no copy of its own. It writes twice: the plan gate's decision, through
 * `decidePlan` exactly as `polly plan approve`, and a retry plan proposed for a task (`retryTask`),
 * exactly as `polly retry TASK --budget …` proposes it (brain/plan/plan-retry.ts), left at the gate.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { join } from 'node:path';
import type { PollyConfig } from '../config/config-schema.js';
import { decidePlan, expirePlanAsks, proposeValidPlan } from '../plan/plan-gate.js';
import { endGoal } from '../registry/goal-lifecycle.js';
import { parkCauses, pendingRetry, retryPlan, type ParkCause, type RetryBudgets } from '../plan/plan-retry.js';
import { createGoal } from '../registry/goal-record.js';
import { refuseRootAgents } from '../plan/plan-agents.js';
import type { JournalEntry, PlanRecord, Registry, WorkerRecord } from '../registry/registry-schema.js';
import type { RegistryStore } from '../registry/registry-store.js';
import { createLocalForge } from '../forge/local-forge.js';
import { createEventTail } from '../../workers/supervisor/worker-files.js';
import { workerFiles } from '../../workers/supervisor/worker-files.js';
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import { GATE_DECISIONS_FILE } from '../../gate/decision-log.js';
import type { RunStore } from '../../workflows/run/run-store.js';
import type { RunRecord } from '../../workflows/run/run-records.js';
import type { RunJournalEntry } from '../../workflows/run/run-store.js';
import { brainInstanceArea, createConfiguredRunStore, runStoreDir } from '../registry/run-storage.js';
import { brainAfterApproval, type BrainAfterApproval } from '../process/daemon.js';
import { noticeBrainDeath } from '../notify/brain-death.js';
import { progressStamp, taskNow, type TaskNow } from '../registry/task-progress.js';

/** One line of the gate's decision log (gate/decision-log.ts): `{at, kind: 'gate.decision', data}`. */
export interface GateLogEntry {
  at: string;
  kind: string;
  data: { decision?: string; rule?: string; reason?: string; tool?: string; input?: string; cwd?: string; role?: string; harness?: string } & Record<string, unknown>;
}

/** A workflow run with its journal (the run store's lines of that run, oldest first). */
export interface RunWithJournal {
  run: RunRecord;
  journal: RunJournalEntry[];
}

/** The dashboard's port onto Polly's state. */
export interface UiSource {
  /** The registry, after expiring plan-gate asks older than `ask_timeout` (as `polly plan` does). */
  readRegistry(): Promise<Registry>;
  /** The last `limit` journal entries, oldest first. */
  readJournal(limit: number): Promise<JournalEntry[]>;
  /**
   * A value that changes whenever the registry, the journal, the gate log or the run store changes
   * (sizes and modification times), or the registry's Brain process dies; the live pages poll it.
   */
  version(): string;
  /**
   * What each task that is in a long step does now (a setup, a check, an agent turn: phase, elapsed
   * time, current tool, last lines of output; brain/registry/task-progress.ts), by task id.
   * @param maxLines  lines of output per task.
   */
  tasksNow(reg: Registry, maxLines: number): Map<string, TaskNow>;
  /** An incremental reader of one worker's normalised events (its `events.jsonl`). */
  workerEvents(worker: WorkerRecord): { read(): AgentEvent[] };
  /**
   * A task's gate decisions, oldest first, at most `limit`: the lines the worker runner stamped
   * with `task: taskId` (gate/hooks/gate-server.ts: the task whose socket the request came in on,
   * whatever its `cwd`), and unstamped lines (the Brain's, `polly gate decide`, older Polly) whose
   * `cwd` lies in `dir` (the task's worktree). A line stamped for another task is never shown.
   */
  gateDecisions(task: { taskId: string; dir: string }, limit: number): Promise<GateLogEntry[]>;
  /**
   * The workflow runs whose input names task `taskId` (`input.task`, the runs the Brain starts per
   * plan task), oldest first, each with its journal (at most the last `limit` lines).
   * @throws PollyError `registry_corrupt` when the run store cannot be read.
   */
  taskRuns(taskId: string, limit: number): Promise<RunWithJournal[]>;
  /** A local forge PR's diff (`git diff base...head`, as `polly pr diff`). */
  pullRequestDiff(number: number): Promise<string>;
  /**
   * Decide a pending plan (the same record and journal event as `polly plan approve|reject`).
   * @throws PollyError `not_found` / `conflict` as `decidePlan`.
   */
  decidePlan(planId: string, decision: 'approve' | 'reject', by: string): Promise<PlanRecord>;
  /** Why task `taskId` is parked (brain/plan/plan-retry.ts `parkCauses` over the whole journal), or null when it is not. */
  parkCause(taskId: string): Promise<ParkCause | null>;
  /** Why each parked task is parked, by task id (the journal is read only when a task is parked). */
  parkCauses(): Promise<Map<string, ParkCause>>;
  /**
   * Propose a retry plan for one task, as `polly retry TASK [--budget B]` does (same checks, same
   * refusals), and leave it at the plan gate. A retry of exactly this task already proposed is
   * returned as it is (`existing: true`), not proposed twice.
   * @returns the plan's id and admission line.
   * @throws PollyError `not_found` / `conflict` as `polly retry`; `agent_refused` for claude-code as
   *   root without the opt-in (the agents' keys are checked by the command that starts the Brain).
   */
  retryTask(taskId: string, budgets: RetryBudgets): Promise<{ planId: string; admitted: boolean; line: string; violated: string[]; existing: boolean }>;
  /**
   * After an approval: the Brain that runs the plan — one already running, one started now (config
   * `brain.start_on_approve`), or none (brain/process/daemon.ts `brainAfterApproval`).
   */
  brainAfterApproval(): Promise<BrainAfterApproval>;
  /**
   * Notice a Brain that died with work pending and tell the human once per death
   * (brain/notify/brain-death.ts); cheap while the Brain lives (no read unless the registry changed).
   * @returns the notification's title when this call sent it, else null; sink failures are logged.
   */
  noticeBrainDeath(): Promise<string | null>;
  /** Release what the source holds open (the run store's database handle). */
  close(): Promise<void>;
}

/** Read the last `bytes` of a file as text, starting at a line boundary ('' when missing). */
function tailText(path: string, bytes: number): string {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return '';
  }
  try {
    const size = statSync(path).size;
    const start = Math.max(0, size - bytes);
    const buf = Buffer.alloc(size - start);
    readSync(fd, buf, 0, buf.length, start);
    const text = buf.toString('utf8');
    return start === 0 ? text : text.slice(text.indexOf('\n') + 1);
  } finally {
    closeSync(fd);
  }
}

function parseLines<T>(text: string): T[] {
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // a line being written: skipped, read again next time
    }
  }
  return out;
}

function stamp(path: string): string {
  try {
    const s = statSync(path);
    return `${s.size}.${s.mtimeMs}`;
  } catch {
    return '-';
  }
}

/**
 * The real source over a repository's `.polly/`.
 * @param deps.repoRoot  the main worktree's root; `pollyDir` is `<repoRoot>/.polly`.
 * @param deps.store     the registry store (the CLI's `openRepoContext` one).
 * @param deps.config    the repository's config (for `ask_timeout`, the agents a retry starts,
 *   `brain.start_on_approve` and the notification sinks).
 * @param deps.env       the environment a Brain started on approval gets (default `process.env`).
 * @param deps.log       diagnostics (default stderr).
 */
export function createRepoUiSource(deps: {
  repoRoot: string;
  pollyDir: string;
  store: RegistryStore;
  config: PollyConfig;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}): UiSource {
  const log = deps.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const journalPath = join(deps.pollyDir, 'journal.jsonl');
  const registryPath = join(deps.pollyDir, 'registry.json');
  const gateLogPath = join(deps.repoRoot, GATE_DECISIONS_FILE);
  const forge = createLocalForge({ repoRoot: deps.repoRoot, store: deps.store });
  const runsDir = runStoreDir(deps.pollyDir);
  const runsPath = join(runsDir, 'runs.mdb');
  // The store the config selects (LMDB in .polly/runs/, or Postgres), opened on first use (a
  // repository whose Brain never ran has no LMDB store yet). Runs left in an old registry.json are
  // moved by the next Brain (brain/registry/run-storage.ts), not by this reader.
  const onPostgres = deps.config.runs?.store === 'postgres';
  let runs: RunStore | null = null;
  const runStore = (): RunStore => (runs ??= createConfiguredRunStore(deps.pollyDir, deps.config.runs).store);
  // Whether the registry's Brain lives: a SIGKILLed Brain changes no file, so the live pages poll
  // its pid too. The pid is read again only when the registry file changed.
  // The workers' rows are read with it, for the progress of their turns (their events files).
  let brainOf = { stamp: '', pid: null as number | null, workers: [] as WorkerRecord[] };
  const readBrainOf = (registryStamp: string): void => {
    if (brainOf.stamp === registryStamp) return;
    let pid: number | null = null;
    let workers: WorkerRecord[] = [];
    try {
      const raw = JSON.parse(readFileSync(registryPath, 'utf8')) as { brain?: { pid?: number } | null; workers?: Record<string, WorkerRecord> };
      pid = raw.brain?.pid ?? null;
      workers = Object.values(raw.workers ?? {});
    } catch {
      // being replaced: read again next time
    }
    brainOf = { stamp: registryStamp, pid, workers };
  };
  const brainAlive = (registryStamp: string): boolean | null => {
    readBrainOf(registryStamp);
    return brainOf.pid === null ? null : pidAlive(brainOf.pid);
  };
  return {
    async readRegistry() {
      await expirePlanAsks(deps.store, deps.config);
      return deps.store.read();
    },
    async readJournal(limit) {
      // Journal lines are small (the store keeps them under a few KiB): 1 MiB holds far more than a page shows.
      return parseLines<JournalEntry>(tailText(journalPath, 1 << 20)).slice(-limit);
    },
    version() {
      const reg = stamp(registryPath);
      const alive = brainAlive(reg);
      // A long step's output moves no registry file: its progress record, log and the live turns' events are stamped too.
      return `${reg}|${stamp(journalPath)}|${stamp(gateLogPath)}|${stamp(runsPath)}|brain:${alive}|${progressStamp(deps.pollyDir, brainOf.workers)}`;
    },
    tasksNow(reg, maxLines) {
      const out = new Map<string, TaskNow>();
      const now = Date.now();
      for (const t of Object.values(reg.tasks)) {
        const n = taskNow(deps.pollyDir, reg, t.id, now, maxLines);
        if (n) out.set(t.id, n);
      }
      return out;
    },
    workerEvents(worker) {
      return createEventTail(workerFiles(worker.stateDir ?? join(deps.pollyDir, 'workers', worker.id)).events);
    },
    async gateDecisions({ taskId, dir }, limit) {
      const prefix = dir.endsWith('/') ? dir : `${dir}/`;
      const mine = (e: GateLogEntry): boolean => {
        if (e.kind !== 'gate.decision' || !e.data) return false;
        if (e.data.task !== undefined) return e.data.task === taskId;
        return typeof e.data.cwd === 'string' && (e.data.cwd === dir || e.data.cwd.startsWith(prefix));
      };
      return parseLines<GateLogEntry>(tailText(gateLogPath, 1 << 20))
        .filter(mine)
        .slice(-limit);
    },
    async taskRuns(taskId, limit) {
      if (!onPostgres && !existsSync(runsPath)) return [];
      const store = runStore();
      // On a shared Postgres store, only this clone's runs: another clone's plan numbers its tasks alike (docs/hosts.md).
      const area = onPostgres ? brainInstanceArea(deps.config.runs, deps.repoRoot) : null;
      const mine = (await store.listRuns())
        .filter((r) => r.input.task === taskId && (area === null || r.instanceArea === area))
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
      return Promise.all(mine.map(async (run) => ({ run, journal: (await store.journal(0, { run: run.id })).slice(-limit) })));
    },
    pullRequestDiff: (number) => forge.diff(number),
    decidePlan: (planId, decision, by) => decidePlan(deps.store, deps.config, planId, decision, { by }),
    async parkCause(taskId) {
      const t = (await deps.store.read()).tasks[taskId];
      return t?.status === 'parked' ? (parkCauses(await deps.store.journal()).get(taskId) ?? null) : null;
    },
    async parkCauses() {
      const parked = Object.values((await deps.store.read()).tasks).some((t) => t.status === 'parked');
      return parked ? parkCauses(await deps.store.journal()) : new Map();
    },
    async retryTask(taskId, budgets) {
      const reg = await deps.store.read();
      const pending = pendingRetry(reg, [taskId])?.follow;
      if (pending) return { planId: pending.id, admitted: true, line: pending.admission?.line ?? '', violated: [], existing: true };
      const retry = retryPlan(reg, [taskId], { ...budgets, parks: parkCauses(await deps.store.journal()) });
      // As root, claude-code needs the opt-in (config); the agents' keys are those of the command that starts the Brain.
      refuseRootAgents(retry.plan.tasks, deps.config);
      const { goal } = await createGoal(deps.store, retry.plan.goal!, 'plan');
      const proposed = await proposeValidPlan(deps.store, deps.config, retry.plan, { goalId: goal.id, source: `polly ui: retry ${taskId}`, retries: retry.retries });
      if (!proposed.admitted) {
        await deps.store.update((draft, tx) => {
          endGoal(draft.goals[goal.id]!, 'failed', tx, { reason: 'plan refused' });
        });
      }
      const violated = [...new Set(proposed.admission.violations.map((v) => v.invariant))];
      return { planId: proposed.planId, admitted: proposed.admitted, line: proposed.line, violated, existing: false };
    },
    brainAfterApproval: () => brainAfterApproval(deps.store, deps.config, deps.repoRoot, deps.pollyDir, deps.env ?? process.env),
    async noticeBrainDeath() {
      // Only a dead Brain can have died: the pid is looked at again only when the registry changed.
      if (brainAlive(stamp(registryPath)) !== false) return null;
      const { notification, failures } = await noticeBrainDeath({ store: deps.store, config: deps.config, pollyDir: deps.pollyDir, noticedBy: 'polly ui' });
      for (const f of failures) log(`[polly ui] notification: ${f}`);
      if (notification) log(`[polly ui] ${notification.title}: ${notification.text}`);
      return notification?.title ?? null;
    },
    async close() {
      const open = runs;
      runs = null;
      await open?.close();
    },
  };
}
