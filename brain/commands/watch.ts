/**
 * `polly watch [--once] [--json]`: issues in (issue 30). Every config `intake.watch_seconds` it
 * reads the repository's open issues that carry config `intake.label` (one conditional request on
 * GitHub: 304 when nothing changed) and makes a goal of each one a maintainer labelled
 * (brain/forge/issue-intake.ts), starting the Brain for it. While no Brain runs, it keeps the
 * issues of earlier goals current itself (brain/forge/issue-gate.ts: answers, the progress
 * comment, the all-merged notice), after one PR watcher pass and one after-merge pass, as
 * `polly pr sync` does. Polly never merges and closes no issue.
 */
import { parseCommandArgs } from './args.js';
import { writeLine, type Command } from './command.js';
import { isPollyError } from '../core/errors.js';
import { openRepoContext } from '../registry/repo-context.js';
import { openForge } from '../forge/forge-select.js';
import { createIssueIntake } from '../forge/issue-intake.js';
import { issueGatePass, newIssueGateMemory } from '../forge/issue-gate.js';
import { DEFAULT_CONFIG } from '../config/config-schema.js';
import { ensureBrain } from '../process/daemon.js';
import { pidAlive } from '../../workers/proc/process-liveness.js';
import { watchMerges } from '../forge/after-merge.js';
import { syncLandingOrder } from '../forge/landing-sync.js';
import { createGitRunner } from '../../workers/git/git.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';

const USAGE = `Usage: polly watch [--once] [--json]

Issues in: every intake.watch_seconds (default 60) Polly reads the open issues labelled
intake.label (default polly) and makes a goal of each one that an account with write, maintain
or admin permission labelled (an issue labelled only by others is ignored, journaled
issue.ignored). The issue's title and body become the goal's text, quoted as data. The Brain
starts for the goal, posts its plan on the issue and takes a maintainer's "/polly approve",
"/polly reject" or "/polly cancel TASK" comment as the answer; the terminal and the dashboard
answer too (the first answer wins). Each PR says Fixes #N; Polly never merges and closes no
issue. While no Brain runs, watch keeps the issues of earlier goals current itself.

On GitHub every read is a conditional request (an unchanged list answers 304, free against
the rate limit) through the throttling plugin. On the local forge, issues come from
polly issue add "…" --label polly.

  --once   one pass, then exit
  --json   print each pass's report as one JSON line on stdout`;

export const command: Command = {
  summary: 'take labelled issues in as goals; keep their issues current (plan, answers, progress)',
  usage: USAGE,
  async run(argv, io) {
    const { values } = parseCommandArgs('watch', argv, { once: { type: 'boolean' }, json: { type: 'boolean' } }, 0);
    const ctx = await openRepoContext(io.cwd, io.env);
    const intakeConfig = ctx.config.intake ?? DEFAULT_CONFIG.intake!;
    const { forge, watcher, issues, selection } = await openForge({ repoRoot: ctx.repo.root, config: ctx.config, store: ctx.store, env: io.env });
    const intake = createIssueIntake({ store: ctx.store, tracker: issues, label: intakeConfig.label });
    const memory = newIssueGateMemory();
    const worktrees = createWorktreeManager({ repoRoot: ctx.repo.root, ...(ctx.config.worktrees.dir ? { worktreesDir: ctx.config.worktrees.dir } : {}) });
    const where = selection.kind === 'github' ? `${selection.owner}/${selection.repo} on GitHub` : 'the local forge';
    io.stderr.write(`[polly] watching ${where} for open issues labelled ${intakeConfig.label} (every ${intakeConfig.watch_seconds} s)\n`);
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    let failures = 0;
    try {
      for (let pass = 1; !stop.signal.aborted; pass++) {
        const started = Date.now();
        try {
          const report = await intake.pass();
          const goals: string[] = [];
          for (const t of report.taken) {
            io.stderr.write(`[polly] issue #${t.number} labelled ${intakeConfig.label} by ${t.labelledBy.map((l) => `@${l}`).join(', ')}: goal ${t.goalId}\n`);
            goals.push(t.goalId);
          }
          for (const i of report.ignored)
            io.stderr.write(`[polly] issue #${i.number} ignored: labelled by ${i.labelledBy.map((l) => `@${l}`).join(', ') || 'nobody known'}, none with write access\n`);
          let brainPid: number | null = null;
          if (report.taken.length > 0) {
            const brain = await ensureBrain(ctx.store, ctx.repo.root, ctx.repo.pollyDir, io.env);
            brainPid = brain.pid;
            io.stderr.write(`[polly] Brain ${brain.started ? 'started' : 'running'} (pid ${brain.pid}); log in .polly/brain.log\n`);
          }
          // No Brain: this watch keeps the earlier goals' PRs and issues current itself.
          const owner = (await ctx.store.read()).brain;
          const brainless = owner === null || !pidAlive(owner.pid);
          let gate = null;
          if (brainless) {
            if (watcher) await watcher.pass();
            await watchMerges({ store: ctx.store, forge, worktrees, progress: (l) => io.stderr.write(`${l}\n`), githubWatched: watcher !== null });
            await syncLandingOrder({ store: ctx.store, forge, git: createGitRunner(), repoRoot: ctx.repo.root });
            gate = await issueGatePass({ store: ctx.store, tracker: issues, config: ctx.config }, memory);
            for (const e of gate.errors) io.stderr.write(`[polly] issue #${e.number}: ${e.message}\n`);
          }
          const stats = issues.stats();
          const line = {
            pass,
            changed: report.changed,
            taken: report.taken,
            ignored: report.ignored,
            retry: report.retry,
            brainPid,
            gate,
            requests: stats.requests,
            notModified: stats.notModified,
          };
          if (values.json) io.stdout.write(`${JSON.stringify(line)}\n`);
          else if (report.taken.length > 0) writeLine(io.stdout, report.taken.map((t) => `#${t.number} → ${t.goalId}`).join('\n'));
          failures = 0;
        } catch (error) {
          if (values.once) throw error;
          failures += 1;
          io.stderr.write(`[polly] the watch pass failed (next pass retries): ${isPollyError(error) ? error.message : String((error as Error)?.message ?? error)}\n`);
        }
        if (values.once) break;
        const wait = Math.max(0, intakeConfig.watch_seconds * 1000 * Math.min(2 ** failures, 8) - (Date.now() - started));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          stop.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              resolve();
            },
            { once: true },
          );
        });
      }
    } finally {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    }
    if (!values.once && !values.json) writeLine(io.stdout, 'stopped');
    return 0;
  },
};
