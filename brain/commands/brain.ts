/**
 * `polly brain [--exit-when-idle] [--no-llm] [--all-prs]`: run the Brain process of this repository in the
 * foreground (`polly goal` starts it detached when none runs). One Brain per repository.
 */
import { parseCommandArgs } from './args.js';
import type { Command } from './command.js';
import { createBrainDeps } from '../process/brain-deps.js';
import { runBrainProcess, goalStateDir } from '../process/brain-process.js';
import type { GoalBrain } from '../process/brain-deps.js';
import { openRepoContext } from '../registry/repo-context.js';
import { cliPath } from '../core/install-paths.js';
import type { GoalRecord } from '../registry/registry-schema.js';

export const command: Command = {
  summary: 'run the Brain process for this repository',
  usage: `Usage: polly brain [--exit-when-idle] [--no-llm] [--all-prs]

Run the Brain: it supervises workers (adopting or reaping those a previous Brain left), runs
the tasks of approved plans (worktree → worker → acceptance checks → push → draft PR →
cross-review → ready), runs read-only dispatches, honours cancels, expires plan asks, notices
human merges, and hosts the LLM brain of each open goal. "polly goal" starts it when none runs.

  --exit-when-idle  exit once no goal, plan or task is open
  --no-llm          do not start LLM brains (plans come from "polly run")
  --all-prs         act on the review feedback, failing checks and conflicts of every goal's
                    ready PRs (default: only those of the goals this Brain runs for; another
                    goal's PR events wait, shown in polly status, until polly resume PLAN-ID)

Diagnostics go to stderr. Exit codes: 0 stopped (idle, or SIGTERM/SIGINT: workers keep running
for the next Brain); 1 another Brain owns the repository (its pid is named), the registry was
deleted or corrupted while it ran (registry_corrupt: the restore command and its backup are
printed; workers keep running, polly resume adopts them after the restore), or a fault; 2 bad flags.`,
  async run(argv, io) {
    const { values } = parseCommandArgs('brain', argv, { 'exit-when-idle': { type: 'boolean' }, 'no-llm': { type: 'boolean' }, 'all-prs': { type: 'boolean' } }, 0);
    const ctx = await openRepoContext(io.cwd, io.env);
    const log = (line: string) => io.stderr.write(`${new Date().toISOString()} ${line}\n`);
    const deps = await createBrainDeps(ctx, io.env, log);
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    let startGoalBrain: ((goal: GoalRecord, resume: string | null) => Promise<GoalBrain>) | null = null;
    let messages: { first(goal: GoalRecord): string; wake(events: import('../mcp/inbox-events.js').InboxEvent[]): string } | undefined;
    if (!values['no-llm']) {
      const llm = await import('../llm/llm-brain.js');
      const { startBrainMeter } = await import('../llm/brain-meter.js');
      startGoalBrain = async (goal, resume) => {
        // The goal's own session goes through Polly's metering proxy like a worker's (docs/metering.md).
        const meter = await startBrainMeter({ store: ctx.store, repoRoot: ctx.repo.root, goalId: goal.id, env: deps.agentEnv, config: ctx.config, log });
        let brain: ReturnType<typeof llm.startLlmBrain>;
        try {
          brain = llm.startLlmBrain({
            repoRoot: ctx.repo.root,
            pollyDir: ctx.repo.pollyDir,
            config: ctx.config,
            goal: { id: goal.id, text: goal.text },
            stateDir: goalStateDir(ctx.repo.pollyDir, goal.id),
            env: meter.env,
            resumeSessionId: resume,
            cliPath: cliPath(),
          });
        } catch (error) {
          await meter.close();
          throw error;
        }
        void brain.exited.then(() => meter.close());
        return {
          pid: brain.pid,
          sessionId: () => brain.sessionId(),
          turn: async (text) => {
            await meter.refresh();
            return brain.turn(text);
          },
          close: async () => {
            await brain.close();
            await meter.close();
          },
        };
      };
      messages = { first: (goal) => llm.firstBrainMessage({ id: goal.id, text: goal.text }), wake: (events) => llm.wakeMessage(events) };
    }
    try {
      await runBrainProcess({
        ...deps,
        startGoalBrain: startGoalBrain ? (goal, resume) => startGoalBrain!(goal, resume) : null,
        ...(messages ? { messages } : {}),
        exitWhenIdle: Boolean(values['exit-when-idle']),
        allPrs: Boolean(values['all-prs']),
        signal: controller.signal,
      });
      if (controller.signal.aborted) log('[polly] stopped on request; workers keep running and the next Brain adopts them (polly resume, or any polly goal/run)');
      return 0;
    } finally {
      // In-flight work (a worker turn being waited on) is left to the next Brain: once the CLI has
      // printed and set the exit code, the process ends even though those waits are still pending.
      setTimeout(() => process.exit(), 1000).unref();
    }
  },
};
