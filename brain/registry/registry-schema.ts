/**
 * The shape of `.polly/registry.json`, Polly's single source of truth, and of the journal lines
 * in `.polly/journal.jsonl`.
 *
 * Versioned: {@link REGISTRY_SCHEMA_VERSION} is written into every file; older files are migrated
 * step by step on read (see `registry-migrations.ts`). All maps are keyed by id. Times are ISO-8601
 * strings (UTC); durations are in seconds unless a field name says otherwise.
 */

/** Bump when the shape changes, and add a migration step from the previous version. */
export const REGISTRY_SCHEMA_VERSION = 2;

import type { GoalStatus, Harness, Purpose, TaskStatus } from '../core/vocabulary.js';
import type { RunRecord } from '../../workflows/run/run-records.js';
import type { ArchiveUnit } from './registry-archive.js';
import type { TaskLedger } from './cost-ledger.js';
import type { Budget, ResolvedBudgets } from '../plan/budgets.js';
import type { Violation } from '../../workflows/check/checker.js';

/** The runtime owns its records (workflows/run/run-records.ts); the registry stores them under `runs`. */
export type { RunRecord, WorkOrderRecord } from '../../workflows/run/run-records.js';
import type { WorkerRecord } from '../../workers/supervisor/worker-record-store.js';
import type { CommandResult } from '../../workers/proc/shell-command.js';
import type { SetupStamp } from '../../workers/git/setup-inputs.js';
import type { ReviewFinding } from '../../workers/review-findings.js';

export interface GoalRecord {
  id: string;
  text: string;
  createdAt: string;
  status: GoalStatus;
  planIds: string[];
  /** `llm`: the Brain's LLM plans it (polly goal); `plan`: a human-written plan (polly run). Default llm. */
  mode?: 'llm' | 'plan';
  /** The LLM brain's session (resumed after a Brain restart), its process and its last report. */
  brainSessionId?: string | null;
  brainPid?: number;
  brainReport?: string;
  /**
   * A command asked that this goal's PR events be acted on although no Brain runs for it
   * (`polly resume PLAN-ID`, `polly pr request-changes`): the Brain that runs, or the next one,
   * takes the goal as its own and clears the flag (brain/process/brain-process.ts `ownGoals`).
   */
  actOnPrs?: boolean;
  /** `prs`: a finished goal opened again only for its PRs' waiting events (`polly resume`): no LLM brain starts for it; cleared when it finishes again. */
  reopenedFor?: 'prs';
  /**
   * The goal's own LLM session's usage (role `brain`): one entry per model request, as the
   * Brain's metering proxy read it from the API's responses (`source: 'proxy'`,
   * brain/llm/brain-meter.ts). Absent: none yet (or a goal from before it was metered).
   */
  ledger?: TaskLedger;
  /**
   * The issue this goal came from (issue 30: `polly watch`, `polly goal --issue N`, the Brain's
   * intake), and what Polly has posted on it. Absent on a goal stated in a terminal.
   */
  issue?: GoalIssueLink;
}

/**
 * A goal's issue (brain/forge/issue-intake.ts) and Polly's memory of the conversation on it
 * (brain/forge/issue-gate.ts): which comments were read, the coalesced progress comment, the
 * all-merged notice. Times are ISO-8601.
 */
export interface GoalIssueLink {
  /** `github`: an issue of the repository's GitHub remote; `local`: a local forge issue (`polly issue add`). */
  forge: 'local' | 'github';
  number: number;
  url: string;
  title: string;
  /** Who opened the issue (a GitHub login; `local` on the local forge). */
  author: string | null;
  /** How it became a goal: `label` (a maintainer's label, by `polly watch` or the Brain's intake) or `hand` (`polly goal --issue N`). */
  via: 'label' | 'hand';
  /** The maintainers whose label took it in (empty when taken in by hand). */
  labelledBy: string[];
  /** Comment ids already read on the issue (answers, other talk, Polly's own), with each one's `updated_at` when read. */
  seenComments?: Record<string, string>;
  /** Comment ids Polly already answered (an answer, a refusal, an edit notice): each is answered once. */
  answered?: number[];
  /** The one progress comment, edited in place, and the text last written to it. */
  progressComment?: { id: number; text: string } | null;
  /** Set once Polly said every PR of the goal was merged. */
  mergedNotice?: { id: number; at: string } | null;
}

export interface AdmissionRecord {
  admitted: boolean;
  /** The checker's one-line verdict, e.g. `admitted: NAME — paths explored: …`. */
  line: string;
  /** Violated invariant names when refused. */
  violations: string[];
  pathsExplored: number;
  statesSeen: number;
  /**
   * Admitted plans: each compiled workflow as it was checked (schedule and implement tasks), by
   * its content hash (workflows/check/admission-cache.ts `admissionKey`: the checker's code and the
   * workflow with Polly's guarantees). A Brain that compiles the plan again reuses a verdict whose
   * hash matches and checks only a workflow that differs (another checker or compiler version);
   * that check's verdict replaces the entry here, so it runs once (brain/plan/plan-library.ts
   * `recordPlanAdded`). Absent on plans recorded before it existed (checked once, then recorded).
   */
  workflows?: AdmittedWorkflow[];
  /**
   * The fingerprint of the compiler and checker that produced `workflows`
   * (brain/plan/plan-compiler.ts `planCompilerFingerprint`): a Brain whose fingerprint differs
   * says in the journal that another compiler re-checked the workflows whose hash changed.
   * Absent on plans recorded before it existed.
   */
  compiler?: string;
}

/** One compiled workflow of an admitted plan, its content hash and the checker's verdict on it. */
export interface AdmittedWorkflow {
  /** The workflow's name, e.g. `plan-p1-t1`. */
  name: string;
  /** `admissionKey` of the workflow as checked (64 hex digits). */
  key: string;
  admitted: boolean;
  line: string;
  pathsExplored: number;
  statesSeen: number;
  terminalStates: number;
  exhaustive: boolean;
  /** Wall time of the check at admission, ms. */
  elapsedMs: number;
}

export interface PlanRecord {
  id: string;
  goalId: string | null;
  createdAt: string;
  /** The plan as proposed (tasks with purpose, worker, acceptance, dependencies). */
  tasks: PlanTaskSpec[];
  admission: AdmissionRecord | null;
  /** The plan gate: a human approves or rejects; an ask expires after ask_timeout seconds. */
  gate: 'pending' | 'approved' | 'rejected' | 'expired' | 'refused';
  /** Task key → the batch (turn) the plan pins it to (optional). */
  batches?: Record<string, number>;
  /**
   * The config the plan was admitted under, as far as it shapes the compiled workflows (spawn
   * bound, acceptance and review bounds, reviewer pairs): the Brain compiles the plan's runs and
   * trace validation rebuilds them from this, so a config edited after admission changes nothing
   * of an admitted plan. Absent on plans recorded before it existed (the current config is used).
   */
  admittedWith?: PlanShapingConfig;
  /**
   * The hard budgets the plan was proposed under (its own over the config's, brain/plan/budgets.ts):
   * what the human approves at the gate. Absent on plans recorded before budgets existed (no limit).
   */
  budgets?: ResolvedBudgets;
  /** When refused: each violated invariant with its shortest counterexample, as text. */
  counterexamples?: string[];
  /**
   * When refused: the same counterexamples as the checker's records (workflows/check/checker.ts
   * `Violation`: invariant `<part>/<name>`, kind, and each step's action, data, state changes and
   * emitted effects), for step-by-step views such as `polly ui`. Absent on plans recorded before it
   * existed (their text form above is all there is).
   */
  counterexampleTraces?: CounterexampleTrace[];
  /**
   * A retry plan (`polly retry`): task key → the id of the earlier task it runs again. The Brain
   * hands that task record to this plan on approval (worktree, branch and PR kept) instead of
   * creating `<plan id>-<key>`. Absent on every other plan.
   */
  retries?: Record<string, string>;
  /**
   * The plan's comment on its goal's issue (brain/forge/issue-gate.ts): posted once when the plan
   * is admitted; `decision` is the decision line last written into it (null while pending).
   */
  issueComment?: { id: number; postedAt: string; decision: string | null };
  /**
   * Set once when the plan's schedule run began before the plan gate was a step of the schedule
   * workflow (a run started by a Polly before commit 634d239) and the plan was approved before its
   * first step: trace validation replays APPROVED (`by`, `decidedAt`) before the run's journal
   * (brain/process/schedule-gate-upgrade.ts). `firstStepSeq`: the journal seq of the run's first
   * step, null when it had none yet. Absent on every other plan.
   */
  gatePassedBeforeUpgrade?: { run: string; by: string; decidedAt: string; firstStepSeq: number | null; recordedAt: string };
  askedAt: string | null;
  decidedAt: string | null;
  decidedBy: string | null;
}

/** One violated invariant of a refused plan with its shortest counterexample (see `PlanRecord.counterexampleTraces`). */
export type CounterexampleTrace = Violation & { part: string };

/** The part of the config that shapes a plan's compiled workflows (brain/plan/plan-compiler.ts). */
export interface PlanShapingConfig {
  maxDispatchesPerTurn: number;
  acceptance: { commands: string[]; timeout: number; max_attempts: number };
  review: { pairs: Record<Harness, Harness[]>; max_rounds: number };
  /** Config `pr` (absent on plans admitted before fix rounds existed: the default, 3 rounds). */
  pr?: { max_fix_rounds: number };
}

export interface PlanTaskSpec {
  /** Short stable id inside the plan, e.g. `t1`. */
  key: string;
  title: string;
  purpose: Purpose;
  worker: Harness;
  model: string | null;
  reviewer: Harness | null;
  /** What the worker is asked to do. */
  prompt: string;
  acceptance: AcceptanceContract;
  dependsOn: string[];
  /** The branch the task starts from and its PR targets; absent: the remote's default branch. */
  base?: string;
  /**
   * In a plan: the task's own hard budget (null: no limit; absent: the plan's per-task one). On a
   * task record: the budget in force, resolved when the task was created (brain/plan/budgets.ts
   * `taskBudget`); absent or null: no limit.
   */
  budget?: Budget | null;
  /** Protected paths this task may change (plan key `protected_paths`, git globs); absent: none. */
  protectedPaths?: string[];
  /**
   * The paths this task may change (plan key `paths`, git globs, workers/git/path-globs.ts), its
   * protected paths aside; absent: unbounded (any file but the protected paths).
   */
  paths?: string[];
  /**
   * In a plan: the key of the implement task this one is stacked on (plan key `stacked_on`). On a
   * task record: that task's id. The task branches from the parent's branch and its PR targets it
   * until the parent's PR merges; then the PR is retargeted to the parent's base
   * (brain/forge/after-merge.ts). Absent: not stacked.
   */
  stackedOn?: string;
}

export interface AcceptanceContract {
  /** Shell commands Polly runs in the worktree; all must exit 0. */
  commands: string[];
  /** Human-readable criteria shown to the implementer and the reviewer. */
  criteria: string[];
  /**
   * Project checks (config `acceptance.commands`) this task is meant to make pass: red on the base,
   * they do not stop it as `base_red` (brain/task-tools/base-check.ts); after the agent they must pass.
   * Plan key `acceptance.known_red`; absent in records written before it existed.
   */
  knownRed?: string[];
}

/** An acceptance command's result (owned by workers/proc/shell-command.ts). */
export type { CommandResult };

/** How many acceptance runs a task keeps in `checkRuns`. */
export const CHECK_RUNS_KEPT = 30;
/** How many characters of each command's output a kept run keeps (its tail). */
export const CHECK_RUN_OUTPUT_BYTES = 4096;

/** One acceptance run of a task: when, under which plan (a retry runs the task under its retry plan), at which attempt (and fix round after ready), green or not, each command's result. */
export interface CheckRun {
  at: string;
  planId: string | null;
  attempt: number;
  /** The fix round after the PR was ready, or null before ready. */
  fixRound: number | null;
  green: boolean;
  results: CommandResult[];
}
/** One review finding (owned by workers/review-findings.ts, the reviewer's answer format). */
export type { ReviewFinding };

export interface ReviewRecord {
  reviewer: Harness;
  round: number;
  blocking: ReviewFinding[];
  nonBlocking: ReviewFinding[];
  at: string;
}

export interface PullRequestRef {
  /** Forge kind: `local` (registry) or `github`. */
  forge: 'local' | 'github';
  number: number;
  url: string;
  state: 'draft' | 'open' | 'ready' | 'merged' | 'closed';
  /** What the GitHub PR watcher has seen of this PR (brain/forge/github-watch.ts); absent before its first pass and on the local forge. */
  watch?: GitHubPullWatch;
  /** The "Landing order" section last written into the PR's body (brain/forge/landing-sync.ts); absent: none yet. */
  landing?: string | null;
  /** The issue line last written into the PR's body (`Fixes #N` / `Refs #N`, brain/forge/issue-ref.ts); absent: none yet. */
  issueLine?: string | null;
}

/**
 * The GitHub PR watcher's durable memory of one PR, so that every event is journaled exactly once
 * across passes and restarts: the ETag of each resource it polls (sent as `If-None-Match`), the ids
 * of the reviews, review comments and issue comments already seen, the failing checks already
 * reported for the head commit, and the PR's last known review / checks / conflict state.
 */
export interface GitHubPullWatch {
  /** Resource key (`pull`, `reviews`, `review_comments`, `issue_comments`, `check_runs`, `status`) → last ETag. */
  etags: Record<string, string>;
  /** The head commit `check_runs` / `status` ETags belong to (they are per commit). */
  checksCommit: string | null;
  seen: { reviews: number[]; reviewComments: number[]; issueComments: number[] };
  /** Failing checks (`run:NAME` / `status:CONTEXT`) already reported in `pr.checks_failed` for `headCommit`. */
  reportedChecks: { headCommit: string; keys: string[] } | null;
  /** Reviews and comments by accounts that may not steer a worker, seen so far (journaled as `pr.untrusted_feedback`, not acted on). */
  untrusted?: number;
  /** The latest humans' review verdict. */
  review: 'changes_requested' | 'approved' | 'commented' | 'none';
  /** The head's checks: `failing` (any check run or status failed), `pending`, `passing`, or `none` (no check reported). */
  checks: 'passing' | 'failing' | 'pending' | 'none';
  /** GitHub's `mergeable`: `clean` (true), `conflicts` (false), `unknown` (null: GitHub is computing it, or not read yet). */
  conflicts: 'clean' | 'conflicts' | 'unknown';
  /** The PR's head and base commits and base branch as last read. */
  headCommit: string | null;
  baseCommit: string | null;
  base: string | null;
  /** Set once the watcher journaled `pr.merged` / `pr.closed` (it then stops reading the PR). */
  final: 'merged' | 'closed' | null;
  /** ISO time of the last pass that read this PR. */
  polledAt: string;
}

/** A task: its plan spec (minus the plan-local key, plus the registry id) and its lifecycle. */
export interface TaskRecord extends Omit<PlanTaskSpec, 'key'> {
  id: string;
  planId: string | null;
  status: TaskStatus;
  /**
   * Set when a turn of this task ran without Polly's sandbox (`workers.allow_unconfined: true`):
   * the warning, kept for the PR body and `polly status --json`. Absent when every turn was confined.
   */
  unconfined?: string | null;
  /** Why the task is in its status, when it is a failure or a stop (e.g. the agent's stderr). */
  statusReason: string | null;
  attempts: number;
  reviewRounds: number;
  branch: string | null;
  worktree: string | null;
  /**
   * The remote host (a `workers.hosts` name) that holds the task's remote worktree, where its
   * implement turns run; null or absent: this machine only (workers/hosts/).
   */
  host?: string | null;
  /**
   * With a shared run store (`runs.store: postgres`): the task's work claim (brain/process/work-queue.ts).
   * `mine`: this Polly holds it and runs the task; otherwise `holder` (another Polly's label) runs it
   * and this record follows the claim's outcome. Absent: no shared store, or not dispatched yet.
   */
  workClaim?: {
    key: string;
    holder: string;
    mine: boolean;
    /** This Polly settled its claim (its task ended), so the others may follow. */
    settled?: boolean;
    /** Why this Polly's claim was lost (another Polly took it over after it lapsed): the task is cancelled with it. */
    lost?: string;
  } | null;
  /** Base branch name and the commit the worktree was created from. */
  baseBranch: string | null;
  baseCommit: string | null;
  headCommit: string | null;
  /** The last acceptance run's results (outputs bounded to their tail). */
  checks: CommandResult[];
  /**
   * Every acceptance run of this task, oldest first (brain/registry/task-record.ts `recordChecks`):
   * the last {@link CHECK_RUNS_KEPT}, each output cut to its last {@link CHECK_RUN_OUTPUT_BYTES}
   * characters. Absent before the first run and on records written before it existed.
   */
  checkRuns?: CheckRun[];
  reviews: ReviewRecord[];
  pr: PullRequestRef | null;
  /** Backup refs under refs/polly/ made before any teardown. */
  backupRefs: string[];
  sessionId: string | null;
  /**
   * The follow-up the implementer gets next (red-check output, blocking review findings), written
   * by the tool that produced it and sent by `send_followup`; null once the checks are green.
   * Optional for records written before it existed.
   */
  feedback?: string | null;
  /** Every turn's tokens and cost (brain/registry/cost-ledger.ts); absent before the first turn. */
  ledger?: TaskLedger;
  /**
   * The last run of `worktrees.setup` in the task's worktree: command, success, lockfile digests
   * (workers/git/setup-inputs.ts); `polly retry` runs it again when one of them no longer holds.
   * Absent before the first setup, and on records written before it existed.
   */
  setup?: SetupStamp | null;
  /** Set by sys_cancel_task; the Brain process stops the worker, backs up the work and cancels the run. */
  cancelRequested?: boolean;
  /**
   * The earlier attempts of a retried task (`polly retry`, brain/plan/plan-retry.ts), oldest first:
   * the plan it ran under, the status it ended in and why, and when the retry took it over. Absent
   * on a task that was never retried.
   */
  /** How often a commit of this task was refused for its path contract: undeclared protected paths, or files outside its `paths` (brain/task-tools/run-acceptance.ts); absent: never. */
  protectedRefusals?: number;
  retriedFrom?: Array<{ planId: string | null; status: TaskStatus; reason: string | null; at: string }>;
  /**
   * The fix round in progress after the PR was ready (brain/process/pr-events.ts), kept after it ends
   * until the next one starts; absent before the first round.
   */
  fixRound?: FixRoundRecord | null;
  /**
   * PR events of this ready task that the running Brain leaves waiting because the task's goal is
   * not one it runs for (brain/process/pr-events.ts): the goal, the first event's action and line,
   * the journal seqs. Cleared when a fix round starts; absent/null when nothing waits.
   */
  prEventsWaiting?: { goalId: string | null; action: FixRoundRecord['action']; journalSeq: number; eventSeqs: number[]; line: string } | null;
  /** The agent's final report, for read-only tasks (explore, search). */
  report?: string | null;
  /** When the first worker of the task started and when the task reached a final state. */
  startedAt?: string | null;
  finishedAt?: string | null;
  createdAt: string;
  updatedAt: string;
}

/** One fix round of a ready PR: what started it and where the branch was (brain/process/pr-events.ts). */
export interface FixRoundRecord {
  /** 1-based, counted by the run's `fix_rounds` (config `pr.max_fix_rounds`). */
  round: number;
  /**
   * The signal that started it: `FEEDBACK`, `CHECKS_FAILED`, `CONFLICTS`, or `BASE_CHECKS_FAILED`
   * (the checks fail on the PR merged with its moved base: the local forge's own check,
   * brain/forge/local-pr-checks.ts).
   */
  action: 'FEEDBACK' | 'CHECKS_FAILED' | 'CONFLICTS' | 'BASE_CHECKS_FAILED';
  /** Registry journal seqs of the PR events it answers. */
  eventSeqs: number[];
  /** The events in one line each, for the reply on the PR (`file:line: text`, a check's name, conflicting files). */
  summary: string[];
  /** The task branch's tip when the round started: the reply lists the commits after it. */
  startHead: string | null;
  /** When the base was merged in: `origin/<base>`, its commit, and the files that conflicted (empty: a clean merge). */
  baseMerge?: { ref: string; commit: string; files: string[] } | null;
  startedAt: string;
}

export type { WorkerRecord };

/** One run of the local forge's check (see {@link LocalPullRequest.localCheck}). `checkedAt` is an ISO time. */
export interface LocalPrCheckRecord {
  headCommit: string;
  baseCommit: string;
  /** `success`: every command exited 0; `failure`: one did not (or timed out). */
  conclusion: 'success' | 'failure';
  /** One per command run: `name` is the command, `summary` its exit (`exit code 1`, `timed out after 300 s`). */
  checks: Array<{ name: string; conclusion: 'success' | 'failure'; summary: string }>;
  checkedAt: string;
}

/** One check run reported with `polly pr check` (see {@link LocalPullRequest.checkRuns}). `at` is an ISO time. */
export interface LocalCheckRun {
  name: string;
  /** The PR head the run is about (the head when it was reported). */
  headCommit: string;
  /** GitHub's check-run conclusions that Polly acts on, plus `success`. */
  conclusion: 'success' | 'failure' | 'timed_out';
  summary: string;
  /** The tail of the log the reporter gave (`--log-file`), at most 4000 characters. */
  logExcerpt?: string;
  at: string;
}

/**
 * The landing order of one forge's open PRs (brain/forge/landing-order.ts `computeLanding`): the
 * input it was computed from (`key`: `number:head:base` per PR, sorted) and the result.
 */
export interface LandingRecord {
  forge: 'local' | 'github';
  key: string;
  /** PR numbers, first to land first. */
  order: number[];
  /** PR number → the PRs it lands after (those it conflicts with, or the one it is stacked on). */
  after: Record<string, number[]>;
  /** PR number → the PR it is stacked on. */
  stackedOn: Record<string, number>;
  /** Conflicting pairs and their files. */
  pairs: Array<{ a: number; b: number; files: string[] }>;
  /** How many PRs meet a conflict in this order; whether that is the fewest (exact search). */
  conflicts: number;
  exact: boolean;
  /** PR number → its task id and title, for the dashboard. */
  prs: Record<string, { taskId: string | null; title: string; head: string | null; base: string | null }>;
  computedAt: string;
}

/** A pull request recorded by the local forge. */
export interface LocalPullRequest {
  number: number;
  taskId: string | null;
  title: string;
  body: string;
  head: string;
  base: string;
  headCommit: string;
  state: 'draft' | 'open' | 'ready' | 'merged' | 'closed';
  /** The base branch's commit when the PR was opened (the diff of a merged PR is taken from it). */
  baseCommit?: string | null;
  /** Once merged: the commit on the base that carries the work (merge, fast-forward or squash commit), when found. */
  mergeCommit?: string | null;
  /**
   * Reviews and comments, oldest first. `author`: `human` for feedback given with `polly pr comment`
   * / `polly pr request-changes`, `polly` for Polly's cross-review; absent on records written before
   * it existed (treated as `polly`).
   */
  reviews: Array<{ event: 'COMMENT' | 'APPROVE' | 'REQUEST_CHANGES'; body: string; comments: ReviewFinding[]; at: string; author?: 'human' | 'polly' }>;
  /**
   * Polly's last check that the head merges into the base's current tip (brain/forge/pr-mergeability.ts),
   * absent before the first check. `checkedAt` is an ISO time.
   */
  mergeability?: { state: 'clean' | 'conflicts'; files: string[]; baseCommit: string; headCommit: string; checkedAt: string };
  /**
   * Polly's own check of the PR merged with its base's current tip (the local forge's CI,
   * brain/forge/local-pr-checks.ts): the task's acceptance commands run on `headCommit` merged with
   * `baseCommit`, once per pair. Absent until the base first moves under the open PR.
   */
  localCheck?: LocalPrCheckRecord;
  /**
   * Check runs reported by a human or an outside CI with `polly pr check` (the local twin of
   * GitHub's check runs, https://docs.github.com/en/rest/checks/runs#create-a-check-run), oldest
   * first; the latest per (name, headCommit) counts. Absent until the first report.
   */
  checkRuns?: LocalCheckRun[];
  createdAt: string;
  updatedAt: string;
}

/**
 * An issue of the local forge (`polly issue add`, brain/forge/local-issues.ts): the local twin of a
 * GitHub issue, numbered in the same sequence as the local forge's PRs (as on GitHub).
 */
export interface LocalIssue {
  number: number;
  title: string;
  body: string;
  /** Labels, e.g. `polly` (config `intake.label`), which `polly watch` takes in. */
  labels: string[];
  state: 'open' | 'closed';
  /** Comments, oldest first: `author` is `local` (a human at this machine) or `polly`. */
  comments: Array<{ id: number; author: string; body: string; createdAt: string; updatedAt: string }>;
  createdAt: string;
  updatedAt: string;
}

/**
 * What the issue intake (brain/forge/issue-intake.ts) has decided per issue number, so each
 * labelled issue is taken in once: the goal it became, or why it was ignored (and who labelled it).
 */
export interface IntakeRecord {
  issues: Record<string, { goalId: string | null; ignored: string | null; labelledBy: string[]; at: string }>;
}

export interface Registry {
  schemaVersion: number;
  goals: Record<string, GoalRecord>;
  plans: Record<string, PlanRecord>;
  tasks: Record<string, TaskRecord>;
  /**
   * Workflow runs of registries before the run store (`brain/registry/run-storage.ts` moves them
   * into `.polly/runs/` when it opens); empty afterwards. New runs are never written here.
   */
  runs: Record<string, RunRecord>;
  workers: Record<string, WorkerRecord>;
  pullRequests: Record<string, LocalPullRequest>;
  /** Monotonic counters: next journal seq, next local PR number, id sequences. */
  counters: { journalSeq: number; pullRequest: number; task: number; plan: number; goal: number };
  /**
   * The Brain's current turn (one model turn: from the message that woke it to its result):
   * dispatches in it are counted against spawn_bounds.max_dispatches_per_turn. Optional for
   * registries written before it existed.
   */
  turn?: { seq: number; startedAt: string; dispatches: number };
  /** The journal seq up to which the Brain has read its inbox (sys_read_inbox's default cursor). */
  inboxCursor?: number;
  /**
   * The landing order of the open PRs as last computed (brain/forge/landing-sync.ts): shown by the
   * dashboard and written into each PR's body. Absent before the first computation.
   */
  landing?: LandingRecord | null;
  /** Local forge issues by number (`polly issue add`); absent until the first. */
  issues?: Record<string, LocalIssue>;
  /** The issue intake's decisions (brain/forge/issue-intake.ts); absent until the first. */
  intake?: IntakeRecord;
  /** The Brain currently owning this registry, if any. */
  brain: {
    pid: number;
    startedAt: string;
    heartbeatAt: string;
    /**
     * Set once a process outside this Brain found its pid gone with work pending and told the
     * human (journal `brain.died`, brain/notify/brain-death.ts): each death is announced once.
     */
    deathNoticedAt?: string;
  } | null;
  /**
   * Store-internal: the journal entries of the last committed transaction, written atomically with
   * the registry so that a crash between the registry rename and the journal append cannot lose
   * them (the store appends any missing ones before its next read or update). Never set by callers;
   * absent from what `RegistryStore.read()` returns.
   */
  pendingJournal?: JournalEntry[];
  /**
   * Store-internal: finished trees a migration took out of the registry (v1 → v2), not yet
   * journaled. The next update journals each as a `registry.archived` event and drops the field
   * (`registry-archive.ts`). Never set by callers; absent from what `RegistryStore.read()` returns.
   */
  pendingArchive?: ArchiveUnit[];
}

/** One line of `.polly/journal.jsonl`. `seq` is strictly increasing from 1. */
export interface JournalEntry {
  seq: number;
  /** ISO-8601 time the entry was written. */
  at: string;
  /** Event kind, dotted: `task.dispatched`, `gate.decision`, `worker.event`, `pr.opened`, … */
  kind: string;
  /** Kind-specific fields (never secrets). */
  data: Record<string, unknown>;
}

/** A fresh, empty registry at the current schema version. */
export function emptyRegistry(): Registry {
  return {
    schemaVersion: REGISTRY_SCHEMA_VERSION,
    goals: {},
    plans: {},
    tasks: {},
    runs: {},
    workers: {},
    pullRequests: {},
    counters: { journalSeq: 0, pullRequest: 0, task: 0, plan: 0, goal: 0 },
    brain: null,
  };
}
