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
import { createFileRegistryStore } from '../registry/registry-store.js';
import { findRepo } from '../../workers/git/repo.js';
import { formatTable } from './table.js';
import { githubPullRequestStatus, pullRequestStatus, type PullRequestStatus } from '../forge/pr-status.js';
import type { Registry } from '../registry/registry-schema.js';

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
      };
    })
    .sort((a, b) => b.number - a.number);
}

/** The status of `pr` with its task's last acceptance results from `registry`. */
function statusOf(pr: LocalPullRequest, registry: Registry): PullRequestStatus {
  return pullRequestStatus(pr, pr.taskId ? (registry.tasks[pr.taskId]?.checks ?? []) : []);
}

const USAGE = `Usage: polly pr list [--all] [--json]
       polly pr show <number> [--json]
       polly pr diff <number> [--json]
       polly pr comment <number> [--file <path> [--line <n>]] "<text>" [--json]
       polly pr request-changes <number> [--file <path> [--line <n>]] "<text>" [--json]
       polly pr sync [--json]

Pull requests on the local forge (recorded in .polly/registry.json, branches on origin).
  list   open PRs (draft or ready); --all includes merged and closed ones
  show   one PR: state, branches, commits, body, reviews and their line comments
  diff   what the PR changes: git diff <base>...<head> (after a merge: from the base it was opened on)
  comment          add a comment to the PR (on one line of a file with --file/--line: the new
                   side of the diff); journaled as pr.feedback
  request-changes  ask for changes, the same way; the PR's REVIEW becomes changes_requested
  sync   notice human merges now: merged tasks become done and their worktrees are removed
         after a backup under refs/polly/backup/ (a running Brain does this every 30 s); on
         GitHub it first reads every open PR's reviews, comments, checks and mergeability (the
         Brain's PR watcher, every 60 s) and journals what is new

Polly never merges: review the diff, then merge with git (merge, fast-forward, squash or
rebase) and push; Polly notices and marks the PR merged.

Options:
  --json   machine output: list → [{forge, number, state, title, head, base, headCommit, taskId,
           url, review, checks, conflicts, conflictFiles}], show → the PR record with url and status,
           diff → {number, diff}, comment/request-changes → {number, id, event}

  list shows each open PR's REVIEW (changes_requested|approved|commented|none), CHECKS (the
  task's acceptance commands: passing|failing|none) and CONFLICTS (clean|conflicts|unknown:
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

async function openLocalForge(cwd: string, env: NodeJS.ProcessEnv): Promise<LocalForge & { readRegistry(): Promise<Registry> }> {
  const repo = await findRepo(cwd, env);
  if (!existsSync(repo.pollyDir)) {
    throw new PollyError('not_initialized', `Polly is not initialised in ${repo.root} (no .polly/ directory). Run "polly init" there first.`, {
      details: { repoRoot: repo.root },
    });
  }
  const store = createFileRegistryStore(repo.pollyDir);
  return Object.assign(createLocalForge({ repoRoot: repo.root, store }), { readRegistry: () => store.read() });
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
  return out;
}

export const command: Command = {
  summary: 'list, show or diff pull requests on the local forge',
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
            { header: 'REVIEW', value: (p) => p.status.review },
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
    if (sub === 'show' || sub === 'diff') {
      const args = parseCommandArgs(`pr ${sub}`, rest, { json: { type: 'boolean' } }, 1);
      const number = parseNumber(args.positionals[0], sub);
      const forge = await openLocalForge(io.cwd, io.env);
      if (sub === 'show') {
        const pr = await forge.record(number);
        const st = statusOf(pr, await forge.readRegistry());
        if (args.values.json) writeJson(io.stdout, { ...pr, url: localPullRequestUrl(number), status: st });
        else {
          for (const line of formatPullRequest(pr)) writeLine(io.stdout, line);
          writeLine(io.stdout, '');
          writeLine(io.stdout, `review: ${st.review}   checks: ${st.checks}   conflicts: ${st.conflicts}${st.conflictFiles.length ? ` (${st.conflictFiles.join(', ')})` : ''}`);
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
      if (values.json) writeJson(io.stdout, { number, id, event });
      else
        writeLine(
          io.stdout,
          `PR #${number}: ${event === 'COMMENT' ? 'comment' : 'change request'} recorded${values.file ? ` on ${values.file}${line ? `:${line}` : ''}` : ''} (journal: pr.feedback).`,
        );
      return 0;
    }
    if (sub === 'sync') {
      // One after-merge pass (the Brain runs one every 30 s while it runs).
      const args = parseCommandArgs('pr sync', rest, { json: { type: 'boolean' } }, 0);
      const { openRepoContext } = await import('./repo-context.js');
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
        progress: (l) => io.stderr.write(`${l}\n`),
      });
      if (args.values.json) writeJson(io.stdout, watch ? { ...report, watch } : report);
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
        if (!report.done.length && !report.closed.length && !report.errors.length) writeLine(io.stdout, `no merges since the last check (${report.checked.length} PR(s) checked)`);
      }
      return report.errors.length || watch?.errors.length ? 1 : 0;
    }
    if (sub === 'merge') {
      throw new PollyError('bad_input', 'polly pr has no merge: Polly never merges. Review with "polly pr diff <number>", then merge with git yourself.');
    }
    throw new PollyError(
      'bad_input',
      `polly pr: unknown subcommand ${JSON.stringify(sub ?? '')}. Use list, show <number>, diff <number>, comment <number>, request-changes <number> or sync.`,
      { details: { argument: sub ?? null } },
    );
  },
};
