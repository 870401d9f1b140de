/**
 * The shared process runner for agent CLIs (Claude Code, Codex, pi): start one headless run,
 * turn its stdout JSON lines into normalised {@link AgentEvent}s, and classify how it ended with an
 * {@link AgentRunStatus} (orchestration case 1 in test/workers/supervisor/orchestration-workers.test.ts: a missing CLI, an instant exit, a blocking prompt
 * each end as a named state within seconds).
 *
 * - The child runs detached in its own process group; `cancel()` (and a timeout, an abort signal,
 *   a detected prompt) send SIGTERM to the whole group, then SIGKILL after 3 s. When the CLI
 *   exits, whatever it left running in its group is terminated too: nothing outlives the run.
 * - stdin is a pipe, fed with `stdin` or closed at once: never a TTY, so a headless agent cannot
 *   wait on a keyboard.
 * - stdout is split into lines; each is JSON-parsed and handed to `parseLine`. Non-JSON lines, and
 *   lines `parseLine` cannot handle (it throws), become `unknown` events — never a crash
 *   (test/workers/agents/agent-process.test.ts).
 * - stdout is bounded (`workers.limits` of the sandbox spec, defaults when unconfined): a line
 *   longer than `output_line_kib` is kept cut, with a marker, and never buffered whole; a line
 *   that long, or more than `output_total_mib` in all, stops the run as `bound_exceeded` naming
 *   the bound; so does a bound its sandbox's cgroup or rlimits counted (./../sandbox/resource-bounds.ts).
 * - stderr is kept as a bounded tail (16 KiB); every string in `redact` is replaced by `[redacted]`
 *   in stderr, stdout lines and the reported command line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { redactSecrets } from '../../brain/core/redact.js';
import { signalGroupOrPid } from '../proc/kill.js';
import { confineCommand, type ConfinedCommand } from '../sandbox/sandbox.js';
import type { AgentEvent, AgentRun, AgentRunResult, AgentRunStatus, AgentSandbox } from './agent-adapter.js';
import { boundHit, resolveLimits } from '../sandbox/resource-bounds.js';

/** Output that means the CLI waits for a human (trust dialog, login, first-run questions). */
export const DEFAULT_PROMPT_PATTERNS: readonly RegExp[] = [
  /trust (this|the) (folder|files|directory|workspace)/i,
  /do you want to/i,
  /press enter/i,
  /\(y\/n\)|\[y\/n\]|\[Y\/n\]|\[y\/N\]/,
  /please (log ?in|sign ?in)|log ?in to continue|select (a )?login method/i,
  /choose (the|a) (text )?style|select (a )?theme/i,
];

export interface SpawnAgentProcessOptions {
  /** The executable (absolute path or a name on `env.PATH`). */
  command: string;
  args: string[];
  cwd: string;
  /** The COMPLETE environment of the child (nothing is inherited); see {@link scrubbedProcessEnv}. */
  env: Record<string, string>;
  /** Written to the child's stdin, which is then closed. Without it stdin is closed at once. */
  stdin?: string;
  /** Kill the run (status `timed_out`) after this many ms. Default: no limit. */
  timeoutMs?: number;
  /** Aborting cancels the run (status `cancelled`). */
  signal?: AbortSignal;
  /**
   * Normalise one stdout line. `json` is the parsed value (undefined if the line is not JSON:
   * then the runner emits `unknown` itself and does not call this). Throwing makes the line `unknown`.
   */
  parseLine(json: unknown, line: string): AgentEvent[];
  /** Secrets to replace by `[redacted]` in everything the result carries. */
  redact: string[];
  /** Called for every event, in order. */
  onEvent?: (event: AgentEvent) => void;
  /** Output patterns that mean "waiting for a human". Default {@link DEFAULT_PROMPT_PATTERNS}. */
  promptPatterns?: readonly RegExp[];
  /** After prompt-like output, how long to wait for real progress before killing. Default 2000 ms. */
  promptGraceMs?: number;
  /**
   * Adapter hook to refine the final status, e.g. map a refusal text on stderr to `agent_refused`.
   * Return null to keep the runner's classification.
   */
  classify?: (outcome: AgentOutcome) => { status: AgentRunStatus; message: string } | null;
  /**
   * Run the CLI inside Polly's OS sandbox (workers/sandbox/): bubblewrap with this spec, the model
   * endpoints bridged in. Null or absent: unconfined (only with `workers.allow_unconfined`).
   */
  sandbox?: AgentSandbox | null;
}

/** What the runner saw, handed to {@link SpawnAgentProcessOptions.classify}. */
export interface AgentOutcome {
  status: AgentRunStatus;
  message: string;
  exitCode: number | null;
  signal: string | null;
  stderr: string;
  events: AgentEvent[];
}

const STDERR_TAIL_BYTES = 16 * 1024;
const KILL_GRACE_MS = 3000;
const DRAIN_AFTER_EXIT_MS = 1500;

/**
 * `env` (default `process.env`) without the variables that would leak the caller's git context
 * into a worker (all `GIT_*`: a test or a git hook may have set GIT_DIR/GIT_INDEX_FILE), plus `extra`.
 */
export function scrubbedProcessEnv(extra: Record<string, string> = {}, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !k.startsWith('GIT_')) out[k] = v;
  return { ...out, ...extra };
}

/** Replace every secret value (length ≥ 4) in `text` by `[redacted]` (brain/core/redact.ts, values only). */
export function redactText(text: string, secrets: readonly string[]): string {
  return redactSecrets(text, { values: secrets, shapes: false });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A run that never started (e.g. refused before spawning): resolves at once with `status`. */
export function refusedRun(status: AgentRunStatus, message: string, command: string[], onEvent?: (e: AgentEvent) => void): AgentRun {
  const events: AgentEvent[] = [{ type: 'error', message }];
  onEvent?.(events[0]!);
  const result: AgentRunResult = {
    status,
    message,
    exitCode: null,
    signal: null,
    sessionId: null,
    finalText: '',
    events,
    stderr: '',
    durationMs: 0,
    command,
  };
  return { pid: 0, result: Promise.resolve(result), cancel: async () => {} };
}

/**
 * Start an agent CLI and follow it to the end. Never throws for runtime failures: every outcome
 * is an {@link AgentRunResult} with a status (the promise never rejects). See the module doc.
 */
export function spawnAgentProcess(options: SpawnAgentProcessOptions): AgentRun {
  const started = Date.now();
  const command = [options.command, ...options.args].map((a) => redactText(a, options.redact));
  const events: AgentEvent[] = [];
  const patterns = options.promptPatterns ?? DEFAULT_PROMPT_PATTERNS;
  const graceMs = options.promptGraceMs ?? 2000;
  let stderr = '';
  let forced: { status: AgentRunStatus; message: string } | null = null;
  let spawnError: NodeJS.ErrnoException | null = null;
  let promptTimer: NodeJS.Timeout | null = null;
  let killTimer: NodeJS.Timeout | null = null;
  let timeoutTimer: NodeJS.Timeout | null = null;
  let exited = false;
  /** After the CLI exited: restart the drain wait (stdout still arrives: a large last line read under load). */
  let rearmDrain: (() => void) | null = null;

  if (!isDirectory(options.cwd)) {
    // spawn would report ENOENT, indistinguishable from a missing CLI: say what is really wrong.
    return refusedRun(
      'agent_exited',
      `the working directory ${JSON.stringify(options.cwd)} does not exist or is not a directory; create the worktree first`,
      command,
      options.onEvent,
    );
  }
  let child: ChildProcess;
  let confined: ConfinedCommand | null = null;
  try {
    confined = options.sandbox ? confineCommand(options.sandbox.bwrap, options.sandbox.spec, options.command, options.args, options.env) : null;
    child = spawn(confined?.command ?? options.command, confined?.args ?? options.args, {
      cwd: options.cwd,
      env: confined?.env ?? options.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    confined?.dispose();
    // spawn throws synchronously for e.g. a bad cwd type; report it like a missing CLI.
    const message = `could not start ${options.command}: ${(error as Error).message}`;
    return refusedRun('agent_missing', message, command, options.onEvent);
  }

  const emit = (e: AgentEvent): void => {
    events.push(e);
    options.onEvent?.(e);
  };

  const terminate = (status: AgentRunStatus, message: string): void => {
    if (forced || exited) return;
    forced = { status, message };
    signalGroupOrPid(child.pid, 'SIGTERM');
    killTimer = setTimeout(() => signalGroupOrPid(child.pid, 'SIGKILL'), KILL_GRACE_MS);
    killTimer.unref();
  };

  const sawProgress = (): void => {
    if (promptTimer) {
      clearTimeout(promptTimer);
      promptTimer = null;
    }
  };

  const checkPrompt = (text: string): void => {
    if (promptTimer || forced) return;
    const hit = patterns.find((p) => p.test(text));
    if (!hit) return;
    const excerpt = redactText(text.trim().slice(-300), options.redact);
    promptTimer = setTimeout(() => {
      terminate(
        'blocked_on_prompt',
        `${options.command} is waiting for interactive input and cannot run headless: "${excerpt}". ` +
          'Pre-configure the CLI (login, trust, first-run settings) in the worker state directory, then retry.',
      );
    }, graceMs);
    promptTimer.unref();
  };

  child.on('error', (error: NodeJS.ErrnoException) => {
    spawnError = error;
  });

  // stdin: feed or close; a closed stdin is never a TTY, so nothing can wait on a keyboard.
  child.stdin?.on('error', () => {
    /* EPIPE when the child exits without reading: its exit status tells the story */
  });
  if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  else child.stdin?.end();

  const limits = resolveLimits(options.sandbox?.spec.limits);
  const lineCap = limits.output_line_kib * 1024;
  const totalCap = limits.output_total_mib * 1024 * 1024;
  let total = 0;
  /** Characters of the current over-long line dropped so far (0: not cutting). */
  let cutting = 0;
  let partial = '';
  const handleLine = (raw: string): void => {
    const line = redactText(raw.replace(/\r$/, ''), options.redact);
    if (!line.trim()) return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      emit({ type: 'unknown', raw: line });
      checkPrompt(line);
      return;
    }
    let parsed: AgentEvent[];
    try {
      parsed = options.parseLine(json, line);
    } catch {
      parsed = [{ type: 'unknown', raw: json }];
    }
    sawProgress();
    for (const e of parsed) emit(e);
  };
  const overBound = (bound: 'output_line' | 'output_total'): void => {
    terminate('bound_exceeded', `${options.command}: ${boundHit(bound, limits).message}`);
  };
  const endCutLine = (): void => {
    handleLine(`${partial} [polly: line cut at ${limits.output_line_kib} KiB; ${cutting} more characters dropped]`);
    partial = '';
    cutting = 0;
  };
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    rearmDrain?.();
    if (forced?.status === 'bound_exceeded') return;
    total += chunk.length;
    if (total > totalCap) {
      overBound('output_total');
      return;
    }
    let rest = chunk;
    if (cutting > 0) {
      const nl = rest.indexOf('\n');
      if (nl < 0) {
        cutting += rest.length;
        return;
      }
      cutting += nl;
      endCutLine();
      rest = rest.slice(nl + 1);
    }
    partial += rest;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      if (line.length > lineCap) {
        // A whole over-long line in one read: kept cut like one that spans reads.
        handleLine(`${line.slice(0, lineCap)} [polly: line cut at ${limits.output_line_kib} KiB; ${line.length - lineCap} more characters dropped]`);
        partial = '';
        overBound('output_line');
        return;
      }
      handleLine(line);
    }
    if (partial.length > lineCap) {
      // Never buffer a line past the bound: keep its head, count the rest, fail the turn.
      cutting = partial.length - lineCap;
      partial = partial.slice(0, lineCap);
      overBound('output_line');
    }
    // A prompt usually has no trailing newline.
    if (partial && cutting === 0) checkPrompt(partial);
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
    if (stderr.length > STDERR_TAIL_BYTES * 2) stderr = stderr.slice(-STDERR_TAIL_BYTES);
    checkPrompt(chunk);
  });

  if (options.timeoutMs !== undefined && options.timeoutMs > 0) {
    const ms = options.timeoutMs;
    timeoutTimer = setTimeout(() => terminate('timed_out', `${options.command} ran longer than ${ms} ms and was stopped`), ms);
    timeoutTimer.unref();
  }
  const onAbort = (): void => terminate('cancelled', 'the run was cancelled');
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  const result = new Promise<AgentRunResult>((resolve) => {
    let settled = false;
    const finish = (exitCode: number | null, signal: string | null): void => {
      if (settled) return;
      settled = true;
      exited = true;
      // The bounds its sandbox counted (cgroup, rlimits), read before the cgroup is removed.
      const hits = confined?.boundHits({ exitCode, signal }, stderr) ?? [];
      confined?.dispose();
      if (hits.length > 0 && forced?.status !== 'bound_exceeded') forced = { status: 'bound_exceeded', message: `${options.command}: ${hits[0]!.message}` };
      if (cutting > 0) endCutLine();
      if (partial) handleLine(partial);
      partial = '';
      for (const t of [promptTimer, killTimer, timeoutTimer]) if (t) clearTimeout(t);
      options.signal?.removeEventListener('abort', onAbort);
      const tail = redactText(stderr.slice(-STDERR_TAIL_BYTES), options.redact);
      let outcome = classifyExit({ forced, spawnError, exitCode, signal, stderr: tail, events, commandName: options.command });
      const refined = options.classify?.({ ...outcome, exitCode, signal, stderr: tail, events });
      if (refined) outcome = refined;
      if (outcome.status !== 'ok') emit({ type: 'error', message: outcome.message });
      let sessionId: string | null = null;
      let finalText = '';
      let lastText = '';
      for (const e of events) {
        if (e.type === 'session') sessionId = e.sessionId;
        else if (e.type === 'result') finalText = e.text;
        else if (e.type === 'text') lastText = e.text;
      }
      resolve({
        status: outcome.status,
        message: outcome.message,
        exitCode,
        signal,
        sessionId,
        finalText: finalText || lastText,
        events,
        stderr: tail,
        durationMs: Date.now() - started,
        command,
      });
    };
    child.on('error', () => {
      // Spawn failures (ENOENT/EACCES) emit 'error' and maybe never 'exit'.
      if (child.pid === undefined) finish(null, null);
    });
    child.on('exit', (code, sig) => {
      // Reap whatever the CLI left in its group, then give stdout a moment to drain.
      signalGroupOrPid(child.pid, 'SIGTERM');
      setTimeout(() => signalGroupOrPid(child.pid, 'SIGKILL'), KILL_GRACE_MS).unref();
      // The wait restarts while stdout still arrives: a fixed wait cut a multi-MiB last line read
      // under load, and the run ended without its result.
      let drain = setTimeout(() => finish(code, sig), DRAIN_AFTER_EXIT_MS);
      drain.unref();
      rearmDrain = () => {
        clearTimeout(drain);
        drain = setTimeout(() => finish(code, sig), DRAIN_AFTER_EXIT_MS);
        drain.unref();
      };
      child.on('close', () => {
        clearTimeout(drain);
        finish(code, sig);
      });
    });
  });

  return {
    pid: child.pid ?? 0,
    result,
    cancel: async () => {
      terminate('cancelled', 'the run was cancelled');
      await result;
    },
  };
}

function classifyExit(x: {
  forced: { status: AgentRunStatus; message: string } | null;
  spawnError: NodeJS.ErrnoException | null;
  exitCode: number | null;
  signal: string | null;
  stderr: string;
  events: AgentEvent[];
  commandName: string;
}): { status: AgentRunStatus; message: string } {
  if (x.spawnError && (x.spawnError.code === 'ENOENT' || x.spawnError.code === 'EACCES' || x.spawnError.code === 'ENOTDIR')) {
    return {
      status: 'agent_missing',
      message: `${x.commandName} could not be started (${x.spawnError.code}): install it or set the worker's "command" in .polly/config.yaml to its path`,
    };
  }
  if (x.spawnError) return { status: 'agent_exited', message: `${x.commandName} failed to start: ${x.spawnError.message}` };
  if (x.forced) return x.forced;
  if (x.exitCode === 127) {
    return {
      status: 'agent_missing',
      message: `${x.commandName} exited 127 (command not found): install it or fix the worker's "command" in .polly/config.yaml. stderr: ${lastLines(x.stderr)}`,
    };
  }
  const result = x.events.find((e): e is Extract<AgentEvent, { type: 'result' }> => e.type === 'result');
  if (x.exitCode === 0 && result) {
    return result.ok ? { status: 'ok', message: '' } : { status: 'agent_exited', message: `${x.commandName} reported an error: ${result.text.slice(0, 500)}` };
  }
  if (x.exitCode === 0) {
    return { status: 'agent_exited', message: `${x.commandName} exited 0 without reporting a result. stderr: ${lastLines(x.stderr)}` };
  }
  const how = x.signal ? `was killed by ${x.signal}` : `exited ${x.exitCode}`;
  const detail = result && !result.ok ? ` It reported: ${result.text.slice(0, 500)}.` : '';
  return { status: 'agent_exited', message: `${x.commandName} ${how}.${detail} stderr: ${lastLines(x.stderr)}` };
}

function lastLines(text: string, n = 8): string {
  const lines = text.trim().split('\n');
  return lines.slice(-n).join('\n') || '(empty)';
}
