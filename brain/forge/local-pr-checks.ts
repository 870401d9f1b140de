/**
 * The local forge's CI: Polly's own check of an open PR merged with its base's current tip.
 *
 * GitHub Actions runs a pull request's checks on the merge of head and base (`refs/pull/N/merge`,
 * https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/events-that-trigger-workflows#pull_request),
 * so a base that moves under the PR can break it without a textual conflict (a function renamed on
 * the base, still called by the PR). The local forge has no CI; this is it. One {@link LocalPrChecks.pass}:
 *
 * 1. For each open local PR whose task is `ready` (its run watches the PR), fetch the base and take
 *    its tip. Nothing to do when the tip is already in the head (the task's own acceptance run
 *    covered it), when this (head, base) pair was checked before (`pr.localCheck`), or when the two
 *    conflict (that is `pr.conflicts`, brain/forge/pr-mergeability.ts).
 * 2. Otherwise merge them in memory (`git merge-tree --write-tree`), check the merged tree out into
 *    a scratch directory through a temporary index (`GIT_INDEX_FILE`, `git read-tree`,
 *    `git checkout-index --prefix`: no worktree registration, no ref, nothing in the task's
 *    worktree or branch), copy the `.worktreeinclude` files and the main checkout's `node_modules`
 *    (workers/git/dependency-reuse.ts), run `worktrees.setup` unless that made it redundant, then
 *    the task's acceptance commands: each in Polly's OS sandbox with an allowlisted environment,
 *    exactly as `run_acceptance` runs them (workers/acceptance.ts, workers/sandbox/command-sandbox.ts).
 * 3. Record the outcome in `pr.localCheck` and, when red, journal `pr.checks_failed` {forge:
 *    'local', number, taskId, headCommit, base, baseCommit, checks: [{name, conclusion: 'failure',
 *    summary, logExcerpt}]} in the same registry write, once per (head, base) pair. The Brain routes
 *    it (brain/process/pr-events.ts) as BASE_CHECKS_FAILED: a fix round that merges the base in,
 *    then has the same worker session fix the break.
 *
 * A command that exits 127 (not found) is the environment, not the PR: the pass records it and
 * reports it in `errors`, but journals no `pr.checks_failed`, so no agent turn is spent on it.
 *
 * The Brain runs a pass after every after-merge pass (every 30 s) and `polly pr sync` runs one now.
 * Red is data (the report and the event), never an exception.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { isPollyError } from '../core/errors.js';
import { visibleLine, visibleText } from '../core/visible-text.js';
import { classifyCannotRun } from '../../workers/check-runner.js';
import type { PollyConfig } from '../config/config-schema.js';
import type { LocalPrCheckRecord, Registry } from '../registry/registry-schema.js';
import { runAcceptance, runCheck } from '../../workers/acceptance.js';
import { isNpmInstallOnly, reuseNodeModules } from '../../workers/git/dependency-reuse.js';
import { createGitRunner, firstLine, type GitRunner } from '../../workers/git/git.js';
import { copyWorktreeIncludes } from '../../workers/git/worktree-include.js';
import { resolveWorktreesDir } from '../../workers/git/worktrees-dir.js';
import { repoStateDir } from '../../workers/sandbox/agent-state-dir.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { checkMergeability } from './pr-mergeability.js';

/** The part of `RegistryStore` the checks use. */
export interface LocalPrChecksStore {
  read(): Promise<Registry>;
  update<T>(fn: (draft: Registry, tx: { emit(kind: string, data: Record<string, unknown>): void }) => T | Promise<T>): Promise<T>;
}

export interface LocalPrChecksDeps {
  /** The repository's main checkout. */
  repoRoot: string;
  store: LocalPrChecksStore;
  /** Read: `acceptance` (commands, timeout, network), `worktrees` (dir, setup, setup_network), `workers` (allow_unconfined, env_passthrough). */
  config: Pick<PollyConfig, 'acceptance' | 'worktrees' | 'workers'>;
  git?: GitRunner;
  /** The remote the PR branches live on (default `origin`). */
  remote?: string;
  /** Where scratch checkouts go (default `<repo state dir>/pr-checks`, workers/sandbox/agent-state-dir.ts). */
  scratchRoot?: string;
  now?: () => Date;
  /** One line per check run, for the Brain's log or stderr. */
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

/** What one pass did, per PR looked at. */
export interface LocalPrChecksReport {
  /** PRs checked in this pass, with the outcome. */
  checked: Array<{ number: number; taskId: string; headCommit: string; baseCommit: string; conclusion: 'success' | 'failure' }>;
  /** PRs left alone, and why (`base in head`, `checked before`, `conflicts`, …). */
  skipped: Array<{ number: number; reason: string }>;
  /** PRs whose check could not run (git failed, the sandbox is unavailable); the next pass tries again. */
  errors: Array<{ number: number; message: string }>;
}

export interface LocalPrChecks {
  /** One pass over the open local PRs (see the module doc). Never throws for a red check. */
  pass(): Promise<LocalPrChecksReport>;
}

const OPEN = new Set(['draft', 'open', 'ready']);
/** Characters of a failing command's output kept as `logExcerpt` (its tail). */
export const LOG_EXCERPT_CHARS = 4000;

/** Create the local forge's check runner over `deps.repoRoot`. */
export function createLocalPrChecks(deps: LocalPrChecksDeps): LocalPrChecks {
  const git = deps.git ?? createGitRunner();
  const remote = deps.remote ?? 'origin';
  const cwd = deps.repoRoot;
  const now = () => (deps.now ? deps.now() : new Date()).toISOString();
  const scratchRoot = deps.scratchRoot ?? join(repoStateDir(cwd), 'pr-checks');

  const revParse = async (ref: string): Promise<string | null> => {
    const r = await git.run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd, okExitCodes: [1, 128] });
    return r.exitCode === 0 ? firstLine(r) : null;
  };

  /** Write `tree` into `dir` (created empty) through a temporary index; no ref, no worktree registration. */
  const checkoutTree = async (tree: string, dir: string): Promise<void> => {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const env = { GIT_INDEX_FILE: `${dir}.index` };
    try {
      await git.run(['read-tree', tree], { cwd, env });
      await git.run(['checkout-index', '--all', '--force', `--prefix=${dir}/`], { cwd, env });
    } finally {
      await rm(`${dir}.index`, { force: true });
    }
  };

  /** Run the setup and the acceptance commands in `dir`; the sandbox as run_acceptance builds it. */
  const runChecks = async (dir: string, commands: string[]) => {
    const { config } = deps;
    const worktreesDir = resolveWorktreesDir(cwd, config.worktrees.dir);
    const rel = relative(cwd, worktreesDir);
    await copyWorktreeIncludes({ git, repoRoot: cwd, worktreePath: dir, excludePrefixes: rel.startsWith('..') ? [] : [`${rel}/`] });
    const reuse = await reuseNodeModules(cwd, dir);
    const box = (network: boolean) =>
      commandSandbox({
        repoRoot: cwd,
        worktree: dir,
        worktreesDir,
        network,
        allowUnconfined: config.workers.allow_unconfined ?? false,
        passthrough: config.workers.env_passthrough ?? [],
        toolPaths: config.workers.tool_paths ?? [],
        limits: config.workers.limits ?? {},
      });
    const setup = config.worktrees.setup;
    if (setup && !(reuse.reused && isNpmInstallOnly(setup))) {
      const s = await box(config.worktrees.setup_network ?? false);
      const r = await runCheck(setup, { cwd: dir, timeoutSeconds: config.acceptance.timeout, env: s.env, sandbox: s.sandbox, ...(deps.signal ? { signal: deps.signal } : {}) });
      if (r.exitCode !== 0) return { green: false, results: [{ ...r, command: `setup: ${setup}` }] };
    }
    const a = await box(config.acceptance.network ?? false);
    return runAcceptance({ cwd: dir, commands, timeoutSeconds: config.acceptance.timeout, env: a.env, sandbox: a.sandbox, ...(deps.signal ? { signal: deps.signal } : {}) });
  };

  return {
    async pass() {
      const report: LocalPrChecksReport = { checked: [], skipped: [], errors: [] };
      const reg = await deps.store.read();
      const prs = Object.values(reg.pullRequests).filter((p) => OPEN.has(p.state) && p.taskId && reg.tasks[p.taskId]?.status === 'ready');
      const fetched = new Set<string>();
      for (const pr of prs) {
        const task = reg.tasks[pr.taskId!]!;
        const skip = (reason: string) => void report.skipped.push({ number: pr.number, reason });
        try {
          if (!fetched.has(pr.base)) {
            fetched.add(pr.base);
            await git.run(['fetch', '--quiet', '--no-tags', remote, `+refs/heads/${pr.base}:refs/remotes/${remote}/${pr.base}`], { cwd, okExitCodes: [1, 128] });
          }
          const baseTip = (await revParse(`refs/remotes/${remote}/${pr.base}`)) ?? (await revParse(`refs/heads/${pr.base}`));
          const head = pr.headCommit;
          if (!baseTip) {
            skip(`base ${pr.base} not found`);
            continue;
          }
          const contained = await git.run(['merge-base', '--is-ancestor', baseTip, head], { cwd, okExitCodes: [1] });
          if (contained.exitCode === 0) {
            skip(`${pr.base} (${baseTip.slice(0, 12)}) is already in the head`);
            continue;
          }
          if (pr.localCheck?.headCommit === head && pr.localCheck.baseCommit === baseTip) {
            skip(`checked before: ${pr.localCheck.conclusion}`);
            continue;
          }
          const merge = await checkMergeability(git, cwd, { baseCommit: baseTip, headCommit: head });
          if (merge.state === 'conflicts') {
            skip(`conflicts in ${merge.files.join(', ')}`);
            continue;
          }
          const commands = task.acceptance.commands.length > 0 ? task.acceptance.commands : deps.config.acceptance.commands;
          if (commands.length === 0) {
            skip('no acceptance commands');
            continue;
          }
          const dir = join(scratchRoot, `pr-${pr.number}`);
          deps.progress?.(`[polly] PR #${pr.number}: ${pr.base} moved to ${baseTip.slice(0, 12)}; running the acceptance checks on the merge with ${head.slice(0, 12)}`);
          let outcome: Awaited<ReturnType<typeof runChecks>>;
          try {
            await checkoutTree(merge.tree, dir);
            outcome = await runChecks(dir, commands);
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
          // A check that cannot run (workers/check-runner.ts: a program not found, not installed under the
          // HOME the sandbox hides, a runner's module or dependencies missing) is the environment, not the
          // PR: recorded and reported, but no fix round (no agent can install it).
          const missing = outcome.results.map((r) => ({ r, why: classifyCannotRun(r) })).find((x) => x.why !== null);
          const conclusion = outcome.green ? 'success' : 'failure';
          const record: LocalPrCheckRecord = {
            headCommit: head,
            baseCommit: baseTip,
            conclusion,
            checks: outcome.results.map((r) => ({
              name: r.command,
              conclusion: r.exitCode === 0 && !r.timedOut ? 'success' : 'failure',
              summary: r.timedOut ? `timed out after ${Math.round(r.durationMs / 1000)} s` : `exit code ${r.exitCode ?? 'none: it could not start'}`,
            })),
            checkedAt: now(),
          };
          const failed = outcome.results.filter((r) => r.exitCode !== 0 || r.timedOut);
          await deps.store.update((draft, tx) => {
            const p = draft.pullRequests[String(pr.number)];
            if (!p || !OPEN.has(p.state) || p.headCommit !== head) return;
            // Once per (head, base) pair, even when two passes ran at once (the Brain and `polly pr sync`).
            if (p.localCheck?.headCommit === head && p.localCheck.baseCommit === baseTip) return;
            p.localCheck = record;
            p.updatedAt = record.checkedAt;
            if (conclusion === 'failure' && !missing) {
              tx.emit('pr.checks_failed', {
                forge: 'local',
                number: p.number,
                taskId: p.taskId,
                headCommit: head,
                base: p.base,
                baseCommit: baseTip,
                checks: failed.map((r) => ({
                  name: r.command,
                  conclusion: r.timedOut ? 'timed_out' : 'failure',
                  summary: `${r.command} ${r.timedOut ? 'timed out' : `exited ${r.exitCode ?? 'without starting'}`} on ${p.head} (${head.slice(0, 12)}) merged with ${p.base} (${baseTip.slice(0, 12)})`,
                  logExcerpt: r.output.slice(-LOG_EXCERPT_CHARS),
                })),
              });
            }
          });
          deps.progress?.(`[polly] PR #${pr.number}: the checks on the merge with ${pr.base} are ${outcome.green ? 'green' : `red (${failed.map((r) => r.command).join(', ')})`}`);
          report.checked.push({ number: pr.number, taskId: task.id, headCommit: head, baseCommit: baseTip, conclusion });
          if (missing) {
            report.errors.push({
              number: pr.number,
              message: `the check "${visibleLine(missing.r.command).slice(0, 200)}" cannot run here (exit ${missing.r.exitCode}: ${visibleText(missing.why!.missing)} is missing): ${missing.why!.fix}; or run \`polly doctor\`; no fix round was started`,
            });
          }
        } catch (error) {
          report.errors.push({ number: pr.number, message: isPollyError(error) ? error.message : String((error as Error)?.message ?? error) });
        }
      }
      return report;
    },
  };
}
