/**
 * The base check: before an implement task's first agent turn, Polly runs the task's acceptance
 * commands that are project checks (in config `acceptance.commands`: a command only the plan
 * names may run the test the task is to write, red before it by design) on the base (the worktree as `worktrees.setup` left it, before any agent change), in the
 * checks' sandbox and environment, exactly as `run_acceptance` runs them. A command red on the base
 * would be red after any agent turn too: the task then waits as `base_red` (brain/task-tools/dispatch.ts)
 * and no agent turn is spent on it.
 *
 * Results are cached per (base commit, command) in `.polly/base-checks/<sha256>.json`, one file per
 * pair, written atomically (temp file, fsync, rename): N tasks on one base run each command once,
 * a restarted Brain reuses what the last one found, and concurrent tasks in one process share one
 * run of each pair (an in-flight promise per key).
 *
 * Config `acceptance.known_red` lists commands known to be red on the base: they are still run and
 * reported, but red on the base they do not block the task; after the agent they are required
 * green like every other acceptance command (the task may be the one that makes them pass).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeJsonAtomic } from '../../workers/supervisor/worker-files.js';
import type { CommandResult } from '../../workers/proc/shell-command.js';

/** One cached base-check result: the command, how it ended on `baseCommit`, and its output tail. */
export interface BaseCheckResult {
  /** Format version of the cache file. */
  v: 1;
  baseCommit: string;
  command: string;
  /** Exit code; null when it could not start or was killed. */
  exitCode: number | null;
  timedOut: boolean;
  /** The last lines of its output (at most {@link TAIL_LINES} lines, 4000 characters). */
  outputTail: string;
  durationMs: number;
  /** ISO-8601 time it ran. */
  at: string;
}

/** Lines of output kept in a cached result (and shown in a `base_red` reason). */
export const TAIL_LINES = 20;

/** A command is green on the base when it exited 0 within its time. */
export function baseGreen(r: Pick<BaseCheckResult, 'exitCode' | 'timedOut'>): boolean {
  return r.exitCode === 0 && !r.timedOut;
}

/** The cache file of (`baseCommit`, `command`) under `repoRoot/.polly/base-checks/`. */
export function baseCheckFile(repoRoot: string, baseCommit: string, command: string): string {
  const key = createHash('sha256').update(`${baseCommit}\0${command}`).digest('hex');
  return join(repoRoot, '.polly', 'base-checks', `${key}.json`);
}

/** The cached result of (`baseCommit`, `command`), or null when none is stored or the file is unreadable. */
export function readBaseCheck(repoRoot: string, baseCommit: string, command: string): BaseCheckResult | null {
  const file = baseCheckFile(repoRoot, baseCommit, command);
  if (!existsSync(file)) return null;
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as BaseCheckResult;
    return r.v === 1 && r.baseCommit === baseCommit && r.command === command ? r : null;
  } catch {
    return null;
  }
}

/** Store `result` atomically (the directory is made when missing). */
export function writeBaseCheck(repoRoot: string, result: BaseCheckResult): void {
  const file = baseCheckFile(repoRoot, result.baseCommit, result.command);
  mkdirSync(join(repoRoot, '.polly', 'base-checks'), { recursive: true });
  writeJsonAtomic(file, result);
}

/** The last `lines` lines of `output`, at most 4000 characters (the end kept). */
export function outputTail(output: string, lines = TAIL_LINES): string {
  const tail = output.trimEnd().split('\n').slice(-lines).join('\n');
  return tail.length > 4000 ? tail.slice(-4000) : tail;
}

const inFlight = new Map<string, Promise<BaseCheckResult>>();

/**
 * The base-check result of each of `commands` on `baseCommit`, in order: from the cache, else run
 * now by `run` (one command, the checks' sandbox; it never throws for a red command) and stored.
 * Stops after the first red command that is not in `knownRed` (the task waits on it; the rest are
 * not needed). With `recheckRed` a cached red result is run again. `canRun` false (the worktree no longer shows the base, e.g. an agent turn began
 * before a crash) skips commands not yet cached: they are not in the result.
 * @returns the results found or run, `ran` counting the commands run now (0 when all were cached).
 */
export async function checkBase(input: {
  repoRoot: string;
  baseCommit: string;
  commands: readonly string[];
  knownRed: readonly string[];
  canRun: boolean;
  /** Run a cached red result again (a retry of a `base_red` task: the user may have fixed the environment). */
  recheckRed?: boolean;
  run: (command: string) => Promise<CommandResult>;
  /** The clock a result's time comes from (the task tools' `clock`). */
  now: () => Date;
}): Promise<{ results: BaseCheckResult[]; ran: number }> {
  const results: BaseCheckResult[] = [];
  let ran = 0;
  for (const command of input.commands) {
    let result = readBaseCheck(input.repoRoot, input.baseCommit, command);
    if (result && input.recheckRed && input.canRun && !baseGreen(result)) result = null;
    if (!result) {
      if (!input.canRun) continue;
      const key = baseCheckFile(input.repoRoot, input.baseCommit, command);
      let pending = inFlight.get(key);
      if (!pending) {
        ran++;
        pending = (async () => {
          const r = await input.run(command);
          const stored: BaseCheckResult = {
            v: 1,
            baseCommit: input.baseCommit,
            command,
            exitCode: r.exitCode,
            timedOut: r.timedOut,
            outputTail: outputTail(r.output),
            durationMs: r.durationMs,
            at: input.now().toISOString(),
          };
          writeBaseCheck(input.repoRoot, stored);
          return stored;
        })().finally(() => inFlight.delete(key));
        inFlight.set(key, pending);
      }
      result = await pending;
    }
    results.push(result);
    if (!baseGreen(result) && !input.knownRed.includes(command)) break;
  }
  return { results, ran };
}

/** The first result red on the base whose command is not known-red, or null. */
export function blockingBaseRed(results: readonly BaseCheckResult[], knownRed: readonly string[]): BaseCheckResult | null {
  return results.find((r) => !baseGreen(r) && !knownRed.includes(r.command)) ?? null;
}

/**
 * The `base_red` reason of task `taskId` for `red`: the command, how it ended on the base, its
 * output tail, and the next step (fix the base then `polly retry`, or mark it known-red). Pure.
 */
export function baseRedReason(taskId: string, red: BaseCheckResult, baseBranch: string | null): string {
  const how = red.timedOut ? 'timed out' : `exited ${red.exitCode ?? 'without starting'}`;
  const on = `${baseBranch ? `${baseBranch} at ` : ''}${red.baseCommit.slice(0, 12)}`;
  return [
    `base red: acceptance command "${red.command}" ${how} on the base (${on}) before any agent change; the agent was not started and no attempt was spent.`,
    ...(red.outputTail ? ['Last lines:', red.outputTail] : []),
    `Fix: make "${red.command}" pass on the base${baseBranch ? ` (${baseBranch})` : ''}, then polly retry ${taskId}; or, if the task is meant to make it pass, list it under acceptance.known_red in .polly/config.yaml (or in the plan task's acceptance for plans to come), then polly retry ${taskId}.`,
  ].join('\n');
}
