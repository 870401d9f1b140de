/**
 * `polly pr list|show|diff <number> [--json]`: the local forge's pull requests.
 *
 * Reading a PR first refreshes it (a branch pushed again moves its head; a human merge — merge
 * commit, fast-forward, squash or rebase — marks it merged). There is no `polly pr merge`: the
 * human merges with git.
 */
import { existsSync } from 'node:fs';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { PollyError } from '../core/errors.js';
import { createLocalForge, localPullRequestUrl, type LocalForge } from '../forge/local-forge.js';
import type { LocalPullRequest } from '../registry/registry-schema.js';
import { createFileRegistryStore, type RegistryStore } from '../registry/registry-store.js';
import { ensureBrain } from '../process/daemon.js';
import { reconcileDeadBrain } from '../process/resume.js';
import { FINAL_TASK_STATUSES } from '../core/vocabulary.js';
import { findRepo } from '../../workers/git/repo.js';
import { formatTable } from './table.js';
import { githubPullRequestStatus, pullRequestStatus, reviewText, type PullRequestStatus } from '../forge/pr-status.js';
import type { Registry } from '../registry/registry-schema.js';
import { visibleLine } from '../core/visible-text.js';
import { loadConfig } from '../config/config.js';
import { agentEnvFrom } from '../process/agent-env.js';
import { FIX_ROUND_NOT_STARTED, fixRoundBlocker } from '../process/pr-events.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { createGitRunner } from '../../workers/git/git.js';
import { computeLanding } from '../forge/landing-order.js';
import { landingCandidates, syncLandingOrder } from '../forge/landing-sync.js';

/** One row of `polly pr list`: a local forge PR, or a GitHub PR as the PR watcher last saw it. */
interface PullRequestRow {
  forge: 'local' | 'github';
  number: number;
  state: LocalPullRequest['state'];
  title: string;
  head: string | null;
  base: string | null;
  headCommit: string | null;
  taskId: string | null;
  url: string;
  status: PullRequestStatus;
  /** GitHub: reviews and comments from accounts without write access, not acted on (the watcher's count). */
  untrustedFeedback?: number;
}

function localRow(p: LocalPullRequest, registry: Registry): PullRequestRow {
  return {
    forge: 'local',
    number: p.number,
    state: p.state,
    title: p.title,
    head: p.head,
    base: p.base,
    headCommit: p.headCommit,
    taskId: p.taskId,
    url: localPullRequestUrl(p.number),
    status: statusOf(p, registry),
  };
}

/** The tasks' GitHub PRs (open ones, or all), newest first, with the watcher's last verdicts (no network: the Brain's watcher keeps them fresh). */
function githubRows(registry: Registry, all: boolean): PullRequestRow[] {
  const open = new Set(['draft', 'open', 'ready']);
  return Object.values(registry.tasks)
    .filter((t) => t.pr?.forge === 'github' && (all || open.has(t.pr.state)))
    .map((t) => {
      const pr = t.pr!;
      return {
        forge: 'github' as const,
        number: pr.number,
        state: pr.state,
        title: t.title,
        head: t.branch,
        base: pr.watch?.base ?? t.baseBranch,
        headCommit: pr.watch?.headCommit ?? t.headCommit,
        taskId: t.id,
        url: pr.url,
        status: githubPullRequestStatus(pr.watch, pr.state),
        ...(pr.watch?.untrusted ? { untrustedFeedback: pr.watch.untrusted } : {}),
      };
    })
    .sort((a, b) => b.number - a.number);
}

/** `N comments from non-collaborators, not acted on` (the human's view of `pr.untrusted_feedback`). */
export function untrustedText(n: number): string {
  return `${n} comment${n === 1 ? '' : 's'} from non-collaborators, not acted on`;
}

/** The status of `pr` with its task's last acceptance results from `registry`. */
function statusOf(pr: LocalPullRequest, registry: Registry): PullRequestStatus {
  return pullRequestStatus(pr, pr.taskId ? (registry.tasks[pr.taskId]?.checks ?? []) : []);
}

const USAGE = `Usage: polly pr list [--all] [--json]
       polly pr order [--json]
       polly pr show <number> [--json]
       polly pr diff <number> [--json]
       polly pr comment <number> [--file <path> [--line <n>]] "<text>" [--json]
       polly pr request-changes <number> [--file <path> [--line <n>]] "<text>" [--json]
       polly pr check <number> --name <name> --conclusion success|failure|timed_out [--summary <text>] [--log-file <path>] [--json]
       polly pr sync [--json]

Pull requests on the local forge (recorded in .polly/registry.json, branches on origin).
  list   open PRs (draft or ready); --all includes merged and closed ones
  order  the order to merge the open PRs in with the fewest conflicts: which pairs conflict
         (git merge-tree of their heads), what each must land after, and stacked PRs after
         the PR they target (docs/landing-order.md)
  show   one PR: state, branches, commits, body, reviews and their line comments
  diff   what the PR changes: git diff <base>...<head> (after a merge: from the base it was opened on)
  comment          add a comment to the PR (on one line of a file with --file/--line: the new
                   side of the diff); journaled as pr.feedback
  request-changes  ask for changes, the same way; the PR's REVIEW becomes changes_requested.
                   A change request or a line comment on a ready task's PR starts a fix round in
                   the task's own worker session: with no Brain running, this starts one
                   (detached, as polly run does; it exits when done); stderr says what happens
  check  report a check run on the PR's current head, as a CI would with GitHub's check-runs API
         (name, conclusion, summary; --log-file: its tail becomes the log excerpt). failure or
         timed_out journals pr.checks_failed: the task's worker gets a fix round with the log
         (a Brain is started if none runs); a later success on the same head clears it
  sync   notice human merges now: merged tasks become done and their worktrees are removed
         after a backup under refs/polly/backup/ (a running Brain does this every 30 s); on
         GitHub it first reads every open PR's reviews, comments, checks and mergeability (the
         Brain's PR watcher, every 60 s) and journals what is new; on the local forge it runs
         Polly's own check of each ready PR whose base moved: the acceptance commands on the
         head merged with the base's tip, once per (head, base); red journals pr.checks_failed.
         Then stacked PRs whose parent merged are retargeted to its base, and the landing order
         is recomputed and written into each PR's body ("Land after #N")

Polly never merges: review the diff, then merge with git (merge, fast-forward, squash or
rebase) and push; Polly notices and marks the PR merged.

Options:
  --json   machine output: list → [{forge, number, state, title, head, base, headCommit, taskId,
           url, review, checks, conflicts, conflictFiles}], show → the PR record with url and status,
           diff → {number, diff}, comment/request-changes → {number, id, event, fixRound,
           brain: {pid, started} | null}, check → {number, name, conclusion, headCommit, fixRound, brain}

  list shows each open PR's REVIEW (changes_requested|approved|commented|none), CHECKS (the
  task's acceptance commands: passing|failing|none; failing also when Polly's check of the head
  merged with its moved base is red) and CONFLICTS (clean|conflicts|unknown:
  Polly merges the head into the base's current tip in memory, git merge-tree, on every read;
  merged|closed once the PR is no longer open).
  Tasks' GitHub PRs are listed too (gh#N), as the Brain's PR watcher last saw them on GitHub:
  CHECKS are the head's check runs and statuses (passing|failing|pending|none), CONFLICTS GitHub's
  mergeable (unknown while GitHub computes it); "polly pr sync" reads them now.

Exit codes: 0 ok; 1 unknown PR number or not initialised; 2 bad arguments.`;

function parseNumber(raw: string | undefined, sub: string): number {
  if (raw === undefined) throw new PollyError('bad_input', `polly pr ${sub}: missing the PR number. Usage: polly pr ${sub} <number>.`);
  const n = Number(raw.replace(/^#/, ''));
  if (!Number.isInteger(n) || n < 1) {
    throw new PollyError('bad_input', `polly pr ${sub}: ${JSON.stringify(raw)} is not a PR number (a positive integer, e.g. 3). Run "polly pr list".`, {
      details: { argument: raw },
    });
  }
  return n;
}

async function openLocalForge(
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<LocalForge & { readRegistry(): Promise<Registry>; store: RegistryStore; repoRoot: string; pollyDir: string }> {
  const repo = await findRepo(cwd, env);
  if (!existsSync(repo.pollyDir)) {
    throw new PollyError('not_initialized', `Polly is not initialised in ${repo.root} (no .polly/ directory). Run "polly init" there first.`, {
      details: { repoRoot: repo.root },
    });
  }
  const store = createFileRegistryStore(repo.pollyDir);
  return Object.assign(createLocalForge({ repoRoot: repo.root, store }), { readRegistry: () => store.read(), store, repoRoot: repo.root, pollyDir: repo.pollyDir });
}

/** What happens to feedback just recorded: whether a fix round follows, and the Brain that runs it. */
interface FeedbackNext {
  /** True when the PR's task will get a fix round for it (now, or after the round in progress). */
  fixRound: boolean;
  /** The Brain that acts on it: `started` when this command started it; null when none is needed. */
  brain: { pid: number; started: boolean } | null;
  /** One sentence for stderr: what will happen, and the command to run when nothing will. */
  message: string;
}

/**
 * Make sure feedback is acted on: a change request, or a comment on a line, on the PR of a task
 * that is ready (its run watches the PR) or in a fix round is routed by the Brain
 * (brain/process/pr-events.ts). With no Brain running, start one detached, as `polly run` and
 * `polly resume` do (brain/process/daemon.ts `ensureBrain`: `polly brain --exit-when-idle`, log in
 * `.polly/brain.log`); it exits once the round is done. Otherwise say why nothing will happen.
 * A Brain started here inherits `env`: when the task's worker could not start with it (root
 * without allow_root_sandbox, no model key; brain/process/pr-events.ts {@link fixRoundBlocker}),
 * no Brain is started, the task stays ready with that reason (journaled as
 * `task.fix_round_not_started`) and the message says what to set.
 */
async function actOnFeedback(
  forge: { readRegistry(): Promise<Registry>; store: RegistryStore; repoRoot: string; pollyDir: string },
  number: number,
  actionable: boolean,
  env: NodeJS.ProcessEnv,
): Promise<FeedbackNext> {
  const reg = await forge.readRegistry();
  const pr = reg.pullRequests[String(number)]!;
  const task = pr.taskId ? reg.tasks[pr.taskId] : undefined;
  if (!actionable) {
    return {
      fixRound: false,
      brain: null,
      message: `a comment without --file starts no fix round (the Brain's inbox shows it); to have the code changed, use "polly pr request-changes ${number} …" or "polly pr comment ${number} --file F --line L …".`,
    };
  }
  if (!task) return { fixRound: false, brain: null, message: `PR #${number} belongs to no Polly task: the feedback is recorded for whoever works on ${pr.head}.` };
  const inRound = !FINAL_TASK_STATUSES.has(task.status);
  if (task.status !== 'ready' && !inRound) {
    return {
      fixRound: false,
      brain: null,
      message: `task ${task.id} is ${task.status}${task.statusReason ? ` (${task.statusReason})` : ''}: no fix round starts for this feedback; it is yours to act on (polly status shows the task).`,
    };
  }
  await reconcileDeadBrain(forge.store);
  const running = (await forge.readRegistry()).brain;
  if (!inRound && !(running && pidAlive(running.pid))) {
    const config = await loadConfig(forge.repoRoot);
    const blocker = fixRoundBlocker(task, config, agentEnvFrom(env, config));
    if (blocker) {
      // The PR event just recorded: the Brain journals the same reason for it only once.
      const journalSeq = (await forge.store.journal()).filter((e) => e.kind.startsWith('pr.') && e.data.taskId === task.id).at(-1)?.seq ?? 0;
      await forge.store.update((draft, tx) => {
        const t = draft.tasks[task.id];
        if (t?.status !== 'ready') return;
        t.statusReason = blocker;
        t.updatedAt = new Date().toISOString();
        tx.emit(FIX_ROUND_NOT_STARTED, { taskId: t.id, number, journalSeq, reason: blocker });
      });
      return { fixRound: false, brain: null, message: `task ${task.id}: ${blocker}` };
    }
  }
  // Feedback given through Polly on this PR is an ask: whichever Brain runs acts on the task's goal's
  // PR events, though the goal was another run's (brain/process/pr-events.ts, issue 35 item 6).
  const goalId = task.planId ? reg.plans[task.planId]?.goalId : null;
  if (goalId) {
    await forge.store.update((draft) => {
      const g = draft.goals[goalId];
      if (g) g.actOnPrs = true;
    });
  }
  const brain = await ensureBrain(forge.store, forge.repoRoot, forge.pollyDir, env);
  const when = inRound ? `after the fix round in progress (task ${task.id} is ${task.status})` : 'now';
  return {
    fixRound: true,
    brain,
    message: brain.started
      ? `no Brain was running: started one (pid ${brain.pid}) to start a fix round of task ${task.id} ${when}; it exits when done. Its log: .polly/brain.log; follow with polly status.`
      : `the Brain (pid ${brain.pid}) starts a fix round of task ${task.id} ${when}; follow with polly status.`,
  };
}

/** The human-readable lines of one PR (pure). */
export function formatPullRequest(pr: LocalPullRequest): string[] {
  const out = [
    `#${pr.number} ${pr.title}`,
    `state:   ${pr.state}${pr.state === 'merged' && pr.mergeCommit ? ` (in ${pr.mergeCommit.slice(0, 12)})` : ''}`,
    `branch:  ${pr.head} → ${pr.base}`,
    `head:    ${pr.headCommit}`,
    `task:    ${pr.taskId ?? '-'}`,
    `opened:  ${pr.createdAt}   updated: ${pr.updatedAt}`,
    '',
    ...pr.body
      .trimEnd()
      .split('\n')
      .map((l) => `    ${l}`.trimEnd()),
  ];
  for (const [i, r] of pr.reviews.entries()) {
    out.push(
      '',
      `review ${i + 1}: ${r.event} at ${r.at}`,
      ...r.body
        .trimEnd()
        .split('\n')
        .map((l) => `    ${l}`.trimEnd()),
    );
    for (const c of r.comments) out.push(`  ${c.file}:${c.line}: ${c.message.replace(/\s+/g, ' ')}`);
  }
  for (const r of pr.checkRuns ?? []) {
    if (r.headCommit !== pr.headCommit) continue;
    out.push(`check run ${r.name}: ${r.conclusion} on ${r.headCommit.slice(0, 12)} at ${r.at} — ${r.summary.replace(/\s+/g, ' ')}`);
  }
  const lc = pr.localCheck;
  if (lc) {
    out.push('', `check on the merge with ${pr.base} (${lc.baseCommit.slice(0, 12)}) of ${lc.headCommit.slice(0, 12)}: ${lc.conclusion} at ${lc.checkedAt}`);
    for (const c of lc.checks) out.push(`  ${c.conclusion === 'success' ? 'ok  ' : 'FAIL'} ${c.name} (${c.summary})`);
  }
  // Bodies, reviews, comments and check summaries hold text workers and others wrote: shown, never obeyed, on a terminal.
  return out.map(visibleLine);
}

export const command: Command = {
  summary: 'list, show, diff or order pull requests on the local forge',
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub === 'list') {
      const args = parseCommandArgs('pr list', rest, { json: { type: 'boolean' }, all: { type: 'boolean' } }, 0);
      const forge = await openLocalForge(io.cwd, io.env);
      const records = await forge.records({ state: args.values.all ? 'all' : 'open' });
      const registry = await forge.readRegistry();
      const rows = [...records.map((p) => localRow(p, registry)), ...githubRows(registry, args.values.all === true)];
      if (args.values.json) {
        writeJson(
          io.stdout,
          rows.map(({ status, ...r }) => ({ ...r, ...status })),
        );
      } else if (rows.length === 0) {
        writeLine(io.stdout, args.values.all ? 'no pull requests' : 'no open pull requests (polly pr list --all shows merged and closed ones)');
      } else {
        for (const line of formatTable(
          [
            { header: '#', value: (p: PullRequestRow) => (p.forge === 'github' ? `gh#${p.number}` : p.number) },
            { header: 'STATE', value: (p) => p.state },
            { header: 'BRANCH', value: (p) => `${p.head ?? '?'} → ${p.base ?? '?'}`, max: 50 },
            {
              header: 'REVIEW',
              value: (p) =>
                `${reviewText(p.status.review, p.taskId ? (registry.tasks[p.taskId]?.reviews ?? []) : [])}${p.untrustedFeedback ? `; ${untrustedText(p.untrustedFeedback)}` : ''}`,
              max: 80,
            },
            { header: 'CHECKS', value: (p) => p.status.checks },
            {
              header: 'CONFLICTS',
              value: (p) => (p.status.conflicts === 'conflicts' ? `conflicts${p.status.conflictFiles.length ? `: ${p.status.conflictFiles.join(',')}` : ''}` : p.status.conflicts),
              max: 40,
            },
            { header: 'TITLE', value: (p) => p.title, max: 60 },
          ],
          rows,
        ))
          writeLine(io.stdout, line);
      }
      return 0;
    }
    if (sub === 'order') {
      const args = parseCommandArgs('pr order', rest, { json: { type: 'boolean' } }, 0);
      const forge = await openLocalForge(io.cwd, io.env);
      // Refresh the local records first (heads pushed again, human merges), then order one forge's open PRs.
      await forge.records({ state: 'open' });
      const registry = await forge.readRegistry();
      const { prs } = landingCandidates(registry);
      const plan = await computeLanding(createGitRunner(), forge.repoRoot, prs);
      const byNumber = new Map(prs.map((r) => [r.number, r]));
      const filesWith = (a: number, b: number): string[] => plan.pairs.find((c) => (c.a === a && c.b === b) || (c.a === b && c.b === a))?.files ?? [];
      if (args.values.json) {
        writeJson(io.stdout, {
          order: plan.order,
          conflicting: plan.conflicts,
          exact: plan.exact,
          pairs: plan.pairs,
          prs: plan.order.map((n) => ({
            number: n,
            title: byNumber.get(n)!.title,
            after: plan.after[n] ?? [],
            stackedOn: plan.stackedOn[n] ?? null,
          })),
        });
        return 0;
      }
      if (plan.order.length === 0) {
        writeLine(io.stdout, 'no open pull requests to order');
        return 0;
      }
      writeLine(
        io.stdout,
        `Landing order for ${plan.order.length} open PR${plan.order.length === 1 ? '' : 's'}: ${plan.conflicts === 0 ? 'none conflicts with another' : `${plan.conflicts} will meet a conflict${plan.exact ? ' (the fewest possible)' : ''}`}. Polly never merges: merge them in this order.`,
      );
      plan.order.forEach((n, i) => {
        const before = plan.after[n] ?? [];
        const parent = plan.stackedOn[n];
        const why =
          parent !== undefined
            ? `after #${parent}: stacked on it (targets ${byNumber.get(n)!.base}); once #${parent} merges, Polly retargets it to #${parent}'s base and merges that in`
            : before.length
              ? `after ${before.map((b) => `#${b}`).join(', ')}: conflicts in ${[...new Set(before.flatMap((b) => filesWith(n, b)))].join(', ')}; once those merge, its base is merged in by a fix round`
              : 'lands clean';
        writeLine(io.stdout, `  ${i + 1}. #${n} ${visibleLine(byNumber.get(n)!.title)} — ${why}`);
      });
      return 0;
    }
    if (sub === 'show' || sub === 'diff') {
      const args = parseCommandArgs(`pr ${sub}`, rest, { json: { type: 'boolean' } }, 1);
      const number = parseNumber(args.positionals[0], sub);
      const forge = await openLocalForge(io.cwd, io.env);
      if (sub === 'show') {
        const pr = await forge.record(number);
        const registry = await forge.readRegistry();
        const st = statusOf(pr, registry);
        if (args.values.json) writeJson(io.stdout, { ...pr, url: localPullRequestUrl(number), status: st });
        else {
          for (const line of formatPullRequest(pr)) writeLine(io.stdout, line);
          writeLine(io.stdout, '');
          writeLine(
            io.stdout,
            `review: ${reviewText(st.review, pr.taskId ? (registry.tasks[pr.taskId]?.reviews ?? []) : [])}   checks: ${st.checks}   conflicts: ${st.conflicts}${st.conflictFiles.length ? ` (${st.conflictFiles.join(', ')})` : ''}`,
          );
        }
      } else {
        const diff = await forge.diff(number);
        if (args.values.json) writeJson(io.stdout, { number, diff });
        else io.stdout.write(diff);
      }
      return 0;
    }
    if (sub === 'comment' || sub === 'request-changes') {
      const args = parseCommandArgs(`pr ${sub}`, rest, { json: { type: 'boolean' }, file: { type: 'string' }, line: { type: 'string' } }, 2);
      const number = parseNumber(args.positionals[0], sub);
      const body = args.positionals[1];
      if (body === undefined || body.trim() === '') {
        throw new PollyError('bad_input', `polly pr ${sub}: missing the text. Usage: polly pr ${sub} <number> "what should change".`);
      }
      const values = args.values as { json?: boolean; file?: string; line?: string };
      let line: number | undefined;
      if (values.line !== undefined) {
        line = Number(values.line);
        if (!/^\d+$/.test(values.line) || line < 1)
          throw new PollyError('bad_input', `polly pr ${sub}: --line ${JSON.stringify(values.line)} is not a line number (a positive integer).`, {
            details: { argument: values.line },
          });
      }
      const forge = await openLocalForge(io.cwd, io.env);
      const event = sub === 'comment' ? 'COMMENT' : 'REQUEST_CHANGES';
      const { id } = await forge.addFeedback(number, { event, body, ...(values.file !== undefined ? { file: values.file } : {}), ...(line !== undefined ? { line } : {}) });
      const next = await actOnFeedback(forge, number, event === 'REQUEST_CHANGES' || values.file !== undefined, io.env);
      io.stderr.write(`[polly] ${next.message}\n`);
      if (values.json) writeJson(io.stdout, { number, id, event, fixRound: next.fixRound, brain: next.brain });
      else
        writeLine(
          io.stdout,
          `PR #${number}: ${event === 'COMMENT' ? 'comment' : 'change request'} recorded${values.file ? ` on ${values.file}${line ? `:${line}` : ''}` : ''} (journal: pr.feedback).`,
        );
      return 0;
    }
    if (sub === 'check') {
      const args = parseCommandArgs(
        'pr check',
        rest,
        { json: { type: 'boolean' }, name: { type: 'string' }, conclusion: { type: 'string' }, summary: { type: 'string' }, 'log-file': { type: 'string' } },
        1,
      );
      const number = parseNumber(args.positionals[0], sub);
      const values = args.values as { json?: boolean; name?: string; conclusion?: string; summary?: string; 'log-file'?: string };
      if (!values.name) throw new PollyError('bad_input', "polly pr check: missing --name (the check's name, e.g. --name ci/test).");
      const conclusion = values.conclusion;
      if (conclusion !== 'success' && conclusion !== 'failure' && conclusion !== 'timed_out') {
        throw new PollyError('bad_input', `polly pr check: --conclusion ${JSON.stringify(conclusion ?? '')} is not one of success, failure, timed_out.`, {
          details: { argument: conclusion ?? null },
        });
      }
      let logExcerpt: string | undefined;
      if (values['log-file'] !== undefined) {
        const { readFile } = await import('node:fs/promises');
        const { resolve } = await import('node:path');
        try {
          logExcerpt = (await readFile(resolve(io.cwd, values['log-file']), 'utf8')).slice(-4000);
        } catch (error) {
          throw new PollyError('bad_input', `polly pr check: cannot read --log-file ${values['log-file']}: ${(error as Error).message}. Give the path of the check's log.`, {
            details: { argument: values['log-file'] },
          });
        }
      }
      const forge = await openLocalForge(io.cwd, io.env);
      const summary = values.summary ?? `${values.name}: ${conclusion}`;
      const { headCommit } = await forge.addCheckRun(number, { name: values.name, conclusion, summary, ...(logExcerpt !== undefined ? { logExcerpt } : {}) });
      const next = conclusion === 'success' ? null : await actOnFeedback(forge, number, true, io.env);
      if (next) io.stderr.write(`[polly] ${next.message}\n`);
      if (values.json) writeJson(io.stdout, { number, name: values.name, conclusion, headCommit, fixRound: next?.fixRound ?? false, brain: next?.brain ?? null });
      else
        writeLine(
          io.stdout,
          `PR #${number}: check ${values.name} ${conclusion} recorded on ${headCommit.slice(0, 12)}${conclusion === 'success' ? '' : ' (journal: pr.checks_failed)'}.`,
        );
      return 0;
    }
    if (sub === 'sync') {
      // One after-merge pass (the Brain runs one every 30 s while it runs).
      const args = parseCommandArgs('pr sync', rest, { json: { type: 'boolean' } }, 0);
      const { openRepoContext } = await import('../registry/repo-context.js');
      const { openForge } = await import('../forge/forge-select.js');
      const { watchMerges } = await import('../forge/after-merge.js');
      const { createWorktreeManager } = await import('../../workers/git/worktree-manager.js');
      const ctx = await openRepoContext(io.cwd, io.env);
      const { forge, watcher } = await openForge({ repoRoot: ctx.repo.root, config: ctx.config, store: ctx.store, env: io.env });
      // GitHub: one PR watcher pass first (reviews, comments, checks, mergeability → journal events).
      const watch = watcher ? await watcher.pass() : null;
      const report = await watchMerges({
        store: ctx.store,
        forge,
        worktrees: createWorktreeManager({ repoRoot: ctx.repo.root, ...(ctx.config.worktrees.dir ? { worktreesDir: ctx.config.worktrees.dir } : {}) }),
        // A merged task's worktree on its remote host goes too (workers.hosts).
        hosts: (ctx.config.workers.hosts ?? []).length > 0 ? (await import('../../workers/hosts/host-cleanup.js')).createHostCleanup(ctx.repo.root, ctx.config.workers) : null,
        // Each merge is a result, printed once on stdout below; with --json (stdout is the JSON) also as a line on stderr.
        progress: (l) => (args.values.json ? io.stderr.write(`${l}\n`) : undefined),
      });
      // Local forge: its CI, Polly's own check of each ready PR merged with its moved base (pr.checks_failed when red).
      const { createLocalPrChecks } = await import('../forge/local-pr-checks.js');
      const checks =
        forge.kind === 'local'
          ? await createLocalPrChecks({ repoRoot: ctx.repo.root, store: ctx.store, config: ctx.config, progress: (l) => io.stderr.write(`${l}\n`) }).pass()
          : null;
      // The landing order of what is still open, into the registry (the dashboard) and each PR's body.
      const landing = await syncLandingOrder({ store: ctx.store, forge, git: createGitRunner(), repoRoot: ctx.repo.root });
      if (args.values.json)
        writeJson(io.stdout, {
          ...report,
          ...(watch ? { watch } : {}),
          ...(checks ? { localChecks: checks } : {}),
          landing: { order: landing.landing?.order ?? [], after: landing.landing?.after ?? {}, updated: landing.updated, errors: landing.errors },
        });
      else {
        if (watch) {
          const events = Object.entries(watch.events).map(([k, n]) => `${n} ${k}`);
          writeLine(
            io.stdout,
            `GitHub: ${watch.watched.length} open PR(s) read (${watch.notModified} of ${watch.requests} requests unchanged, 304)${events.length ? `; new: ${events.join(', ')}` : '; nothing new'}`,
          );
          for (const e of watch.errors) writeLine(io.stdout, `PR #${e.number}: ${e.message}`);
        }
        for (const d of report.done) writeLine(io.stdout, `${d.taskId}: PR #${d.number} merged by a human → done; worktree removed after backup ${d.backupRef ?? '(none needed)'}`);
        for (const c of report.closed) writeLine(io.stdout, `${c}: PR closed without merging`);
        for (const e of report.errors) writeLine(io.stdout, `${e.taskId}: ${e.message}`);
        for (const r of report.retargeted ?? [])
          writeLine(
            io.stdout,
            `${r.taskId}: stacked on ${r.parentTaskId}, which merged: ${r.number !== null ? `PR #${r.number} retargeted` : 'base moved'} from ${r.from} to ${r.to}`,
          );
        if (landing.updated.length)
          writeLine(
            io.stdout,
            `landing order ${landing.landing!.order.map((n) => `#${n}`).join(' → ')}: written into the body of PR ${landing.updated.map((n) => `#${n}`).join(', ')}`,
          );
        for (const e of landing.errors) writeLine(io.stdout, `PR #${e.number}: its landing order could not be written: ${e.message}`);
        for (const c of checks?.checked ?? [])
          writeLine(
            io.stdout,
            `PR #${c.number}: checks on ${c.headCommit.slice(0, 12)} merged with its base at ${c.baseCommit.slice(0, 12)}: ${c.conclusion === 'success' ? 'passing' : 'failing (journal: pr.checks_failed)'}`,
          );
        for (const e of checks?.errors ?? []) writeLine(io.stdout, `PR #${e.number}: the check on the merge with its base could not run: ${e.message}`);
        if (!report.done.length && !report.closed.length && !report.errors.length) writeLine(io.stdout, `no merges since the last check (${report.checked.length} PR(s) checked)`);
      }
      return report.errors.length || watch?.errors.length || checks?.errors.length || landing.errors.length ? 1 : 0;
    }
    if (sub === 'merge') {
      throw new PollyError('bad_input', 'polly pr has no merge: Polly never merges. Review with "polly pr diff <number>", then merge with git yourself.');
    }
    throw new PollyError(
      'bad_input',
      `polly pr: unknown subcommand ${JSON.stringify(sub ?? '')}. Use list, order, show <number>, diff <number>, comment <number>, request-changes <number>, check <number> or sync.`,
      { details: { argument: sub ?? null } },
    );
  },
};
