/**
 * The local end of a remote turn: what the worker runner (workers/supervisor/worker-runner.ts) does
 * instead of starting the agent here when the supervisor placed the turn on a host (`spec.host`).
 * It is still the detached runner of this machine, so the supervisor follows, adopts, cancels and
 * reaps it exactly as a local one (its files, its registry row, its heartbeat).
 *
 * 1. The local worktree's state is made one commit (./worktree-transfer.ts) and pushed with git
 *    over the shared SSH connection to the repository's mirror on the host
 *    (`refs/polly/in/<clone>/<worker>`), after `polly host prepare` made sure the mirror exists (and that
 *    the host runs the same Polly build: exit 3 otherwise).
 * 2. Model endpoints only this machine reaches (a `*_BASE_URL` or configured base URL on
 *    loopback) get a port on the host's loopback forwarded here (`ssh -O forward -R 0:…`); the
 *    turn's env and config name the host's port.
 * 3. `polly host turn` runs the turn there (./host-turn.ts): each agent event comes back as a line
 *    and is recorded here (events.jsonl, as a local runner does), each gate decision is appended to
 *    this repository's gate log, and a heartbeat goes both ways.
 * 4. At the end the host's worktree state is fetched back (`refs/polly/out/<worker>` of this clone's
 *    repository on the host) and applied
 *    to the local worktree's files; the result is the host's, with `host` set and `sandboxMounts`
 *    `[]`: the host's sandbox could write nothing here.
 *
 * Lost host: no line from the host for the lease (`workers.host_lease_seconds`), or the SSH channel
 * closed without a result. The relay then waits out the lease before it reports `hostLost`
 * (started: true), by which time the host has stopped its worker on its own (it stops when it has
 * not heard from here for the lease): the task can be given to another host and never runs twice
 * at once. A host that never started the turn (unreachable, busy, refused) is reported at once.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { buildIdentity, describeBuild } from '../../brain/core/build-identity.js';
import { isPollyError } from '../../brain/core/errors.js';
import type { AgentEvent, AgentRunResult } from '../agents/agent-adapter.js';
import { openGoalLedger, type GoalLedger } from '../metering/goal-ledger.js';
import { createGitRunner } from '../git/git.js';
import type { WorkerSpec } from '../supervisor/worker-runner.js';
import type { ResolvedHost } from './host-config.js';
import type { HostTurnLine, HostTurnRequest } from './host-turn.js';
import { forwardToHost, gitSshCommand, hostCloneUrl, hostMirrorUrl, remotePollyCommand, runOnHost, sshArgv, sshEnv, sshFailure, type SshContext } from './ssh.js';
import { applyStateDiff, worktreeStateCommit } from './worktree-transfer.js';

/** What the supervisor puts in a remote turn's spec (`WorkerSpec.host`). */
export interface RemoteTurnSpec {
  host: ResolvedHost;
  /** `workers.ssh_config`. */
  sshConfig: string | null;
  /** The private directory of this user's control sockets (./ssh.ts `sshContext`). */
  controlDir: string;
  /** `workers.host_lease_seconds` in ms. */
  leaseMs: number;
  /** The repository's mirror key (./worktree-transfer.ts `repoKeyFor`). */
  repoKey: string;
  /** This clone's key on the host (brain/core/polly-identity.ts `pollyIdentity(repoRoot).id`): its worktrees, agent state and locks there. */
  clone: string;
  baseBranch: string | null;
  baseCommit: string | null;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How long the host's first line may take (its Polly starting on a loaded machine), when the lease is shorter. */
const FIRST_WORD_MS = 60_000;

/** A loopback URL's port (127.0.0.1, localhost, [::1]), or null. Pure. */
export function loopbackPort(url: string): number | null {
  const m = /^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(?::(\d+))?(\/|$)/i.exec(url);
  if (!m) return null;
  return m[2] ? Number(m[2]) : url.startsWith('https') ? 443 : 80;
}

/** `url` with its loopback host and port replaced by 127.0.0.1:`port`. Pure. */
export function withPort(url: string, port: number): string {
  return url.replace(/^(https?:\/\/)(127\.\d+\.\d+\.\d+|localhost|\[::1\])(?::\d+)?/i, `$1127.0.0.1:${port}`);
}

/** Host-lost or not-started results (see {@link AgentRunResult.hostLost}). */
function lostResult(spec: WorkerSpec, host: ResolvedHost, reason: string, started: boolean, began: number, events: AgentEvent[], busy = false): AgentRunResult {
  const message = started
    ? `host ${host.name} was lost during the turn (${reason}); its work there is not used, and the host stopped its worker when it stopped hearing from this machine`
    : `host ${host.name} did not take the turn: ${reason}`;
  return {
    status: 'agent_exited',
    message,
    exitCode: null,
    signal: null,
    sessionId: spec.resumeSessionId,
    finalText: '',
    events: [...events, { type: 'error', message }],
    stderr: '',
    durationMs: Date.now() - began,
    command: [],
    host: host.name,
    sandboxMounts: [],
    hostLost: { host: host.name, reason, started, ...(busy ? { busy: true } : {}) },
  };
}

/**
 * Run `spec`'s turn on `spec.host` (see the module doc). Never throws: every failure is a result.
 * @param record  appends an event to this worker's events.jsonl (the runner's own recorder).
 * @param signal  aborted when the runner is asked to stop (SIGTERM): the host cancels the turn.
 */
export async function runRemoteTurn(spec: WorkerSpec & { host: RemoteTurnSpec }, record: (e: AgentEvent) => void, signal: AbortSignal): Promise<AgentRunResult> {
  const began = Date.now();
  const remote = spec.host;
  const host = remote.host;
  const ctx: SshContext = { sshConfig: remote.sshConfig, controlDir: remote.controlDir };
  const git = createGitRunner();
  const events: AgentEvent[] = [];
  const keep = (e: AgentEvent): void => {
    events.push(e);
    record(e);
  };
  const build = buildIdentity();
  const url = hostMirrorUrl(host, remote.repoKey);
  // 1. The local worktree's state, into the host's mirror.
  let state: Awaited<ReturnType<typeof worktreeStateCommit>>;
  try {
    state = await worktreeStateCommit(git, spec.cwd, `task ${spec.taskId} for host ${host.name}`);
  } catch (error) {
    return { ...lostResult(spec, host, `its worktree here could not be read: ${(error as Error).message}`, false, began, events), hostLost: null, status: 'agent_refused' };
  }
  const prepared = await runOnHost(host, ctx, remotePollyCommand(host, ['prepare', '--dir', host.dir, '--repo', remote.repoKey, '--expect-build', build.build]), {
    timeoutMs: 60_000,
  });
  if (prepared.code === 3 || prepared.code === 127) {
    const said = prepared.stderr.trim().split('\n').at(-1) ?? '';
    const message = `host ${host.name} cannot run this turn: ${said || `it does not run Polly ${describeBuild(build)}`}`;
    keep({ type: 'error', message });
    return { ...lostResult(spec, host, said, false, began, events), status: 'agent_refused', message };
  }
  if (prepared.code !== 0) return lostResult(spec, host, `polly host prepare failed: ${sshFailure(prepared)}`, false, began, events);
  const push = await git.run(['push', '-q', '--no-verify', url, `${state.commit}:refs/polly/in/${remote.clone}/${spec.workerId}`], {
    cwd: spec.cwd,
    env: { GIT_SSH_COMMAND: gitSshCommand(host, ctx) },
    okExitCodes: [1, 128],
    timeoutMs: 600_000,
  });
  if (push.exitCode !== 0)
    return lostResult(spec, host, `git push to its mirror failed: ${push.stderr.trim().split('\n').filter(Boolean).slice(0, 2).join(' | ')}`, false, began, events);
  // 2. The turn's environment, with loopback model endpoints forwarded to the host.
  const env: Record<string, string> = {};
  for (const key of [...spec.envKeys, ...(spec.config.workers.env_passthrough ?? [])]) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  const config = structuredClone(spec.config);
  const forwarded = new Map<number, number>();
  const forward = async (value: string): Promise<string> => {
    const port = loopbackPort(value);
    if (port === null) return value;
    let there = forwarded.get(port);
    if (there === undefined) {
      there = await forwardToHost(host, ctx, port);
      forwarded.set(port, there);
    }
    return withPort(value, there);
  };
  try {
    for (const [k, v] of Object.entries(env)) if (/_BASE_URL$/.test(k)) env[k] = await forward(v);
    if (config.workers.codex.provider?.base_url) config.workers.codex.provider.base_url = await forward(config.workers.codex.provider.base_url);
    if (config.workers.pi.base_url) config.workers.pi.base_url = await forward(config.workers.pi.base_url);
  } catch (error) {
    return lostResult(spec, host, isPollyError(error) ? error.message : String(error), false, began, events);
  }
  // 3. The turn there.
  const heartbeatMs = Math.max(200, Math.min(2000, Math.floor(remote.leaseMs / 6)));
  // The goal's shared ledger is a file on this machine: the host's proxy gets its own ledger there,
  // seeded with the goal's total now, and each request it meters (a `metered` event) is charged
  // here as it streams in, so this machine's ledger stays the goal's one record.
  const goal = spec.meter?.goal ?? null;
  let goalLedger: GoalLedger | null = null;
  let goalCarried: HostTurnRequest['goalCarried'] = null;
  if (goal) {
    try {
      goalLedger = openGoalLedger(goal.ledger);
      const total = goalLedger.total();
      goalCarried = { tokens: total.tokens, usd: total.usd };
    } catch (error) {
      return lostResult(spec, host, `could not read goal ${goal.goalId}'s ledger ${goal.ledger}: ${(error as Error).message}`, false, began, events);
    }
  }
  const request: HostTurnRequest = {
    build: build.build,
    repoKey: remote.repoKey,
    clone: remote.clone,
    workerId: spec.workerId,
    taskId: spec.taskId,
    branch: spec.gateContext.branch,
    baseBranch: remote.baseBranch,
    baseCommit: remote.baseCommit,
    snapshot: state.commit,
    capacity: host.capacity,
    leaseMs: remote.leaseMs,
    heartbeatMs,
    spec: { ...spec, host: undefined, config } as WorkerSpec,
    env,
    goalCarried,
  };
  const child = spawn('ssh', sshArgv(host, ctx, remotePollyCommand(host, ['turn', '--dir', host.dir, '--expect-build', build.build])), {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: sshEnv(),
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-8000)));
  child.stdin.on('error', () => undefined);
  const send = (line: object): void => {
    try {
      child.stdin.write(`${JSON.stringify(line)}\n`);
    } catch {
      // the channel is gone: the loop below notices
    }
  };
  send(request);
  let lastHeard = Date.now();
  let heardAny = false;
  let started = false;
  let final: { result: AgentRunResult; out: string | null } | null = null;
  let notStarted: { reason: string; busy: boolean; refused: boolean } | null = null;
  let fencedThere: string | null = null;
  const journal = spec.journalPath;
  if (journal) mkdirSync(dirname(journal), { recursive: true });
  const rl = createInterface({ input: child.stdout });
  rl.on('line', (text) => {
    lastHeard = Date.now();
    heardAny = true;
    let line: HostTurnLine;
    try {
      line = JSON.parse(text) as HostTurnLine;
    } catch {
      return;
    }
    switch (line.t) {
      case 'started':
        started = true;
        break;
      case 'event':
        keep(line.e);
        if (goalLedger && line.e.type === 'metered') {
          const r = line.e.request;
          try {
            goalLedger.charge({ at: r.at, by: spec.workerId, task: spec.taskId, tokens: Math.max(0, r.inputTokens) + Math.max(0, r.outputTokens), usd: r.costUsd });
          } catch (error) {
            process.stderr.write(`[polly] remote turn: could not charge goal ${goal?.goalId}'s ledger: ${(error as Error).message}\n`);
          }
        }
        break;
      case 'gate':
        if (journal)
          try {
            appendFileSync(journal, `${line.line}\n`);
          } catch {
            // the log is best effort, as the runner's own
          }
        break;
      case 'busy':
        notStarted = { reason: line.reason, busy: true, refused: false };
        break;
      case 'refused':
        notStarted = { reason: line.message, busy: false, refused: true };
        break;
      case 'result':
        final = { result: line.result, out: line.out };
        break;
      case 'fenced':
        fencedThere = line.reason;
        break;
      default:
        break;
    }
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on('close', (code) => {
      // stdout has ended: no `metered` line is left to charge
      goalLedger?.close();
      resolve(code);
    });
    child.on('error', () => resolve(255));
  });
  let exitCode: number | null | undefined;
  void exited.then((c) => {
    exitCode = c;
  });
  let cancelledAt = 0;
  let lostReason: string | null = null;
  const beat = setInterval(() => send({ t: 'beat' }), heartbeatMs);
  try {
    for (;;) {
      if (final || notStarted) break;
      if (exitCode !== undefined) {
        // Let the last lines in.
        await sleep(50);
        if (final || notStarted) break;
        lostReason = exitCode === 255 ? `ssh: ${sshFailure({ code: 255, stderr, timedOut: false })}` : `its SSH session ended (exit ${exitCode}) without a result`;
        break;
      }
      // Until the host's first word (its Polly booting, under load), the longer of the lease and a minute.
      const silence = heardAny ? remote.leaseMs : Math.max(remote.leaseMs, FIRST_WORD_MS);
      if (Date.now() - lastHeard > silence) {
        lostReason = `no word from it for ${Math.round(silence / 1000)} s`;
        child.kill('SIGKILL');
        break;
      }
      if (signal.aborted && !cancelledAt) {
        cancelledAt = Date.now();
        send({ t: 'cancel' });
      }
      if (cancelledAt && Date.now() - cancelledAt > 15_000) {
        child.kill('SIGKILL');
        lostReason = 'cancelled, and it did not answer within 15 s';
        break;
      }
      await sleep(50);
    }
  } finally {
    clearInterval(beat);
    child.stdin.end();
  }
  if (notStarted) {
    const n = notStarted as { reason: string; busy: boolean; refused: boolean };
    if (n.refused) return { ...lostResult(spec, host, n.reason, false, began, events), status: 'agent_refused', hostLost: null, message: `host ${host.name}: ${n.reason}` };
    return lostResult(spec, host, n.reason, false, began, events, n.busy);
  }
  if (!final) {
    const reason = fencedThere ? `${lostReason}; it said: ${fencedThere}` : (lostReason ?? 'unknown');
    if (!started) {
      // The host had the request (it answered): it may have been about to start the worker when
      // the channel went. Wait out the lease (it stops any worker by then) before the turn is placed again.
      if (heardAny) await sleep(Math.max(0, remote.leaseMs - (Date.now() - lastHeard)) + 1000);
      return lostResult(spec, host, reason, false, began, events);
    }
    // Wait out the lease: by then the host has stopped the worker (it stops one it has not heard
    // about for the lease), so the task may go to another host without ever running twice at once.
    const waited = Math.max(0, remote.leaseMs - (Date.now() - lastHeard)) + 1000;
    await sleep(waited);
    return signal.aborted ? { ...lostResult(spec, host, reason, true, began, events), status: 'cancelled' } : lostResult(spec, host, reason, true, began, events);
  }
  // 4. The host's worktree state, back into the local worktree's files.
  const { result, out } = final as { result: AgentRunResult; out: string | null };
  const back: AgentRunResult = { ...result, events, host: host.name, sandboxMounts: [], hostSandboxMounts: result.sandboxMounts ?? null };
  if (!out) return back;
  try {
    const fetched = await git.run(['fetch', '-q', '--no-tags', '--no-write-fetch-head', hostCloneUrl(host, remote.repoKey, remote.clone), `refs/polly/out/${spec.workerId}`], {
      cwd: spec.cwd,
      env: { GIT_SSH_COMMAND: gitSshCommand(host, ctx) },
      timeoutMs: 600_000,
    });
    void fetched;
    await applyStateDiff(git, spec.cwd, state, out);
  } catch (error) {
    const message = `the turn ended ${result.status} on host ${host.name}, but its changes could not be brought back: ${(error as Error).message}`;
    keep({ type: 'error', message });
    return { ...back, status: 'agent_exited', message, events };
  }
  return back;
}
