/**
 * The worker runner: a small detached process that runs ONE agent turn for the worker supervisor
 * and leaves everything it learns in files, so that the turn survives a Brain crash.
 *
 * `node dist/workers/supervisor/worker-runner.js <dir>/spec.json`
 *
 * 1. writes `runner.pid`, then touches `heartbeat` (its mtime, and an ISO time as content) every
 *    `spec.heartbeatMs` ms;
 * 2. builds the adapter for `spec.harness` from `spec.config` (workers/agent-factory.ts), installs
 *    the gate (`prepareGate(harness, {role, context, stateDir: <dir>/gate, socket:
 *    <dir>/gate/gate.sock, policy: config.policies})`) and serves its decisions itself
 *    (gate/hooks/gate-server.ts): the hooks, the pi extension and the shims inside the sandbox only
 *    ask; this process decides and appends to `spec.journalPath`, which no sandbox mount can write,
 *    every line stamped with `task` and `worker`;
 * 3. decides the sandbox (workers/sandbox/agent-turn-sandbox.ts: fail closed unless
 *    `workers.allow_unconfined`, whose warning becomes an `error` event) and starts the agent in it
 *    (its own process group) with the environment variables named in `spec.envKeys` and
 *    `workers.env_passthrough` (their values come from the runner's own environment: secrets never
 *    go to disk), and records its pid in `agent.json`;
 * 4. appends every normalised {@link AgentEvent} as one JSON line to `events.jsonl`;
 * 5. when the turn ends writes `result.json` (an {@link AgentRunResult}) atomically (temp file +
 *    rename) and exits 0.
 *
 * SIGTERM / SIGINT / SIGHUP cancel the agent's whole process group and the result is `cancelled`.
 * Any fault of the runner itself (bad spec, gate not built, bad config) still ends in a
 * `result.json` whose status says so (`agent_refused` for configuration, `agent_exited` otherwise).
 */
import { isReadOnlyRole } from '../../brain/core/vocabulary.js';
import { appendFileSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isPollyError } from '../../brain/core/errors.js';
import { createFileJournal } from '../../gate/decision-log.js';
import { startGateServer, type GateServer } from '../../gate/hooks/gate-server.js';
import { prepareGate } from '../../gate/hooks/harness-gate.js';
import { forgeApiHostsFromBaseUrl } from '../../gate/shell/forge-http.js';
import type { GatePolicy } from '../../gate/types.js';
import type { WorkerTurnRequest } from '../worker-turn.js';
import type { AgentEvent, AgentRunResult, AgentRunStatus } from '../agents/agent-adapter.js';
import { createAgentAdapter, type AgentOptionsByHarness } from '../agents/agent-factory.js';
import { claudeCodeSandboxSettings } from '../agents/claude-code-sandbox.js';
import { resolveWorktreesDir } from '../git/worktrees-dir.js';
import { agentTurnSandbox } from '../sandbox/agent-turn-sandbox.js';
import { appliedMounts, type WorkerSandboxOptions } from '../sandbox/sandbox-spec.js';
import { probeSandbox, warmSandbox, type WarmedSandbox } from '../sandbox/sandbox.js';
import { probeBoundsMechanism } from '../sandbox/resource-bounds.js';
import { startTurnMeter, unmeteredReason, type TurnMeter } from '../metering/turn-meter.js';
import { faultResult, workerFiles, writeJsonAtomic } from './worker-files.js';
import type { ModelPrice } from '../metering/api-usage.js';
import type { RemoteTurnSpec } from '../hosts/remote-turn.js';
import type { WorkerHostsOptions } from '../hosts/host-config.js';

/** The part of `.polly/config.yaml` a runner reads: the gate's policies and each harness's options (a PollyConfig satisfies it). */
export interface WorkerRunConfig {
  policies: GatePolicy;
  workers: AgentOptionsByHarness & WorkerSandboxOptions & WorkerHostsOptions;
  /** `forge.github.base_url` (GitHub Enterprise): its host is a forge API for the gate (GateContext.forgeApiHosts). */
  forge?: { github?: { base_url?: string | null } };
  /** `worktrees.dir` (workers/git/worktrees-dir.ts): the sandbox hides it but for the turn's own worktree. */
  worktrees?: { dir?: string | null };
  /** `prices` (USD per million tokens by model id): the metering proxy's cost (workers/metering/). */
  prices?: Record<string, ModelPrice>;
}

/**
 * What the supervisor writes to `<dir>/spec.json` for one turn: the turn request (workers/worker-turn.ts)
 * without its env values (no secrets on disk: only their names) plus where the runner keeps things.
 */
export interface WorkerSpec extends Omit<WorkerTurnRequest, 'env' | 'timeoutMs' | 'host' | 'base'> {
  version: 1;
  workerId: string;
  /** Names of the environment variables passed to the agent as `AgentRunOptions.env`. */
  envKeys: string[];
  timeoutMs: number | null;
  /** The agent's private state (sessions, CLI config): per task and harness, so follow-ups resume. */
  agentStateDir: string;
  /** Where the gate's files go (`<dir>/gate`). */
  gateDir: string;
  /** Gate decision log, appended to by the runner only (null: none; undefined in older specs: `<repoRoot>/.polly/gate-decisions.jsonl`). */
  journalPath: string | null;
  heartbeatMs: number;
  config: WorkerRunConfig;
  /** Set when the supervisor placed the turn on a remote host: this runner relays it (workers/hosts/remote-turn.ts). */
  host?: RemoteTurnSpec | null;
}

/** Run the turn described by `specPath` (see the module doc). Never throws; resolves with the result written. */
export async function runWorker(specPath: string): Promise<AgentRunResult> {
  const started = Date.now();
  const files = workerFiles(dirname(specPath));
  writeFileSync(files.runnerPid, `${process.pid}\n`);
  const beat = (): void => {
    try {
      writeFileSync(files.heartbeat, `${new Date().toISOString()}\n`);
    } catch {
      /* the directory went away: the supervisor will see no heartbeat */
    }
  };
  beat();
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, stop);

  const events: AgentEvent[] = [];
  const record = (event: AgentEvent): void => {
    events.push(event);
    try {
      appendFileSync(files.events, `${JSON.stringify(event)}\n`);
    } catch {
      /* keep running: the result still carries every event */
    }
  };

  let result: AgentRunResult;
  let timer: NodeJS.Timeout | null = null;
  let gateServer: GateServer | null = null;
  let meter: TurnMeter<WorkerRunConfig['workers']> | null = null;
  try {
    const spec = JSON.parse(readFileSync(specPath, 'utf8')) as WorkerSpec;
    timer = setInterval(beat, Math.max(50, spec.heartbeatMs || 2000));
    if (spec.host) {
      // Placed on a remote host: this runner is the turn's local end (workers/hosts/remote-turn.ts),
      // loaded only then (a local turn's runner boots without it).
      const { runRemoteTurn } = await import('../hosts/remote-turn.js');
      result = await runRemoteTurn(spec as WorkerSpec & { host: RemoteTurnSpec }, record, controller.signal);
      clearInterval(timer);
      beat();
      writeJsonAtomic(files.result, result);
      return result;
    }
    const explicitEnv: Record<string, string> = {};
    for (const key of [...spec.envKeys, ...(spec.config.workers.env_passthrough ?? [])]) {
      const value = process.env[key];
      if (value !== undefined) explicitEnv[key] = value;
    }
    // The metering proxy (workers/metering/): every model base URL of the turn points at it, so
    // the sandbox's only route to a model is through Polly's count and budget.
    const meterSpec = spec.meter ?? { budget: null, prices: spec.config.prices ?? {} };
    try {
      meter = await startTurnMeter({
        env: explicitEnv,
        processEnv: process.env,
        workers: spec.config.workers,
        spec: meterSpec,
        who: { by: spec.workerId, task: spec.taskId },
        onRequest: (request) => record({ type: 'metered', request }),
        onRefused: (refused) => {
          record({ type: 'metering_refused', refused });
          // The budget is spent: end the turn now rather than wait for the CLI's retries.
          controller.abort();
        },
      });
    } catch (error) {
      const message = `could not start the metering proxy: ${(error as Error).message}`;
      record({ type: 'error', message });
      throw Object.assign(new Error(message), { status: 'agent_refused' as AgentRunStatus });
    }
    record({ type: 'metering', upstreams: meter.upstreams, budget: meterSpec.budget, ...(meterSpec.goal ? { goal: meterSpec.goal } : {}) });
    // A budget on a harness the proxy cannot count never holds: said at run time, never silent
    // (the plan gate refuses such a plan; read-only work outside a plan can still get here).
    const limited = (b: { tokens?: number | null; usd?: number | null } | null | undefined) => typeof b?.tokens === 'number' || typeof b?.usd === 'number';
    const unmetered = limited(meterSpec.budget) || limited(meterSpec.goal?.limit) ? unmeteredReason(spec.harness, spec.config.workers, { ...process.env, ...explicitEnv }) : null;
    if (unmetered) {
      const message = `this turn's budget is not enforced: ${unmetered}`;
      process.stderr.write(`[polly] ${message}\n`);
      record({ type: 'error', message });
    }
    const env = meter.env;
    const config: WorkerRunConfig = { ...spec.config, workers: meter.workers };
    let adapter: ReturnType<typeof createAgentAdapter>;
    try {
      adapter = createAgentAdapter(spec.harness, config, { model: spec.model });
    } catch (error) {
      const message = isPollyError(error) ? error.message : `could not configure the ${spec.harness} worker: ${(error as Error).message}`;
      record({ type: 'error', message });
      throw Object.assign(new Error(message), { status: 'agent_refused' as AgentRunStatus });
    }
    // Decided by the Brain (spec.readOnly); a spec written before that field existed: the one answer's default.
    const readOnly = typeof spec.readOnly === 'boolean' ? spec.readOnly : isReadOnlyRole(spec.role);
    let confinement: Awaited<ReturnType<typeof agentTurnSandbox>>;
    try {
      confinement = await agentTurnSandbox({
        repoRoot: spec.gateContext.repoRoot,
        cwd: spec.cwd,
        readOnly,
        agentStateDir: spec.agentStateDir,
        gateDir: spec.gateDir,
        env,
        configuredUrls: [config.workers.codex.provider?.base_url, config.workers.pi.base_url],
        allowUnconfined: spec.config.workers.allow_unconfined ?? false,
        realHome: spec.gateContext.home,
        worktreesDir: resolveWorktreesDir(spec.gateContext.repoRoot, spec.config.worktrees?.dir),
        limits: spec.config.workers.limits ?? {},
        toolPaths: spec.config.workers.tool_paths ?? [],
      });
    } catch (error) {
      const message = isPollyError(error) ? error.message : `could not set up the sandbox: ${(error as Error).message}`;
      record({ type: 'error', message });
      throw Object.assign(new Error(message), { status: 'agent_refused' as AgentRunStatus });
    }
    if (confinement.sandbox) {
      const net = confinement.sandbox.spec.network;
      const reach = net.mode === 'endpoints' ? net.endpoints.map((e) => `${e.host}:${e.port}`).join(', ') || 'nothing' : net.mode;
      process.stderr.write(
        `[polly] sandbox: ${spec.harness} runs in bubblewrap (${confinement.sandbox.bwrap}); writable: ${confinement.sandbox.spec.writable.join(', ')}; network: ${reach}\n`,
      );
    }
    if (confinement.notice) {
      // Said at run time: the sandbox holds, but this turn's commands could reach the agent's process.
      process.stderr.write(`[polly] ${confinement.notice}\n`);
      record({ type: 'error', message: confinement.notice });
    }
    if (confinement.warning) {
      process.stderr.write(`[polly] ${confinement.warning}\n`);
      record({ type: 'error', message: confinement.warning });
    }
    const socketPath = join(spec.gateDir, 'gate.sock');
    const gate = await prepareGate(spec.harness, {
      role: spec.role,
      // HTTP writes to the configured GitHub Enterprise API get the gate's readable forge_write denial too;
      // inside bubblewrap the gate leaves what it cannot resolve to the sandbox (gate/sandbox-leeway.ts),
      // unconfined (workers.allow_unconfined) it stays strict
      context: { ...spec.gateContext, forgeApiHosts: forgeApiHostsFromBaseUrl(spec.config.forge?.github?.base_url), sandboxed: confinement.sandbox !== null },
      stateDir: spec.gateDir,
      socket: socketPath,
      policy: spec.config.policies,
      claudeSandbox: spec.harness === 'claude-code' ? claudeCodeSandboxSettings({ confined: confinement.sandbox !== null, gitDir: join(spec.gateContext.repoRoot, '.git') }) : null,
    });
    const journalPath = spec.journalPath === undefined ? join(spec.gateContext.repoRoot, '.polly', 'gate-decisions.jsonl') : spec.journalPath;
    if (journalPath) mkdirSync(dirname(journalPath), { recursive: true });
    try {
      gateServer = await startGateServer({
        socketPath,
        config: gate.config,
        journal: journalPath ? createFileJournal(journalPath) : null,
        stamp: { task: spec.taskId, worker: spec.workerId },
      });
    } catch (error) {
      const message = `could not start the gate's decider on ${socketPath}: ${(error as Error).message}`;
      record({ type: 'error', message });
      throw Object.assign(new Error(message), { status: 'agent_refused' as AgentRunStatus });
    }
    const run = adapter.start({
      cwd: spec.cwd,
      prompt: spec.prompt,
      resumeSessionId: spec.resumeSessionId,
      model: spec.model,
      readOnly,
      gate: { args: gate.args, env: gate.env },
      env,
      stateDir: spec.agentStateDir,
      sandbox: confinement.sandbox,
      ...(spec.timeoutMs ? { timeoutMs: spec.timeoutMs } : {}),
      onEvent: record,
      signal: controller.signal,
    });
    if (run.pid > 0) writeJsonAtomic(files.agent, { pid: run.pid, startedAt: new Date().toISOString() });
    result = await run.result;
    await meter.close();
    // The events as recorded (the agent's and the proxy's, in the order they happened: events.jsonl's order).
    result = { ...result, events: [...events] };
    if (confinement.warning) result = { ...result, unconfined: confinement.warning };
    if (confinement.sandbox) result = { ...result, sandboxMounts: appliedMounts(confinement.sandbox.spec, existsSync) };
  } catch (error) {
    const status = ((error as { status?: AgentRunStatus }).status ?? 'agent_exited') as AgentRunStatus;
    const message = status === 'agent_refused' ? (error as Error).message : `the worker runner failed before the agent ran: ${(error as Error).message}`;
    if (status !== 'agent_refused') record({ type: 'error', message });
    result = faultResult(controller.signal.aborted ? 'cancelled' : status, message, started, events);
  }
  if (timer) clearInterval(timer);
  await gateServer?.close();
  await meter?.close();
  beat();
  writeJsonAtomic(files.result, result);
  return result;
}

const isMain = process.argv[1] !== undefined && existsSync(process.argv[1]) && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);

/** One line of what a standby runner's probes answered (its log, `<stateRoot>/standby.log`). Pure. */
export function describeWarmed(warmed: WarmedSandbox | null): string {
  if (!warmed) return 'a sandbox probe failed; it is retried when the turn starts';
  const sandbox = warmed.sandbox.ok ? `sandbox ${warmed.sandbox.bwrap}` : `no sandbox (${warmed.sandbox.reason})`;
  const shells = warmed.toolShells.ok ? `tool shells on (Landlock ABI ${warmed.toolShells.abi})` : `tool shells off (${warmed.toolShells.why})`;
  return `${sandbox}; ${shells}; bounds ${warmed.bounds.kind}`;
}

/**
 * Standby mode (`worker-runner.js --standby <tag>`): a runner started ahead of need, with its
 * modules loaded and the sandbox probed (workers/sandbox/sandbox.ts `warmSandbox`), that waits on
 * stdin for ONE claim line `{"specPath", "env"}` from its supervisor;
 * it then sets `env` in its own environment (never on disk) and runs that turn. EOF without a claim
 * (the supervisor exited, or died: the kernel closes the pipe) ends it at once: nothing idles on.
 */
async function standby(): Promise<void> {
  // The sandbox's one-time probes (bubblewrap, bounds, seccomp) are paid while waiting, not by the
  // dispatch that claims this runner; a turn whose PATH differs is probed again below.
  const probedPath = process.env.PATH;
  const warmed = warmSandbox();
  process.stderr.write(`[polly] standby ${process.argv[3] ?? ''} (pid ${process.pid}) ready: ${describeWarmed(warmed)}\n`);
  let buffer = '';
  const claim = await new Promise<{ specPath: string; env: Record<string, string> } | null>((resolve) => {
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => {
      buffer += chunk;
      const nl = buffer.indexOf('\n');
      if (nl < 0) return;
      try {
        resolve(JSON.parse(buffer.slice(0, nl)) as { specPath: string; env: Record<string, string> });
      } catch {
        resolve(null);
      }
    });
    process.stdin.on('end', () => resolve(null));
    process.stdin.on('error', () => resolve(null));
  });
  process.stdin.destroy();
  if (!claim || !existsSync(claim.specPath)) process.exit(0);
  for (const [k, v] of Object.entries(claim.env ?? {})) process.env[k] = v;
  if (process.env.PATH !== probedPath) {
    probeSandbox({ refresh: true });
    probeBoundsMechanism({ refresh: true });
  }
  await runWorker(claim.specPath);
  process.exit(0);
}

if (isMain && process.argv[2] === '--standby') {
  await standby();
} else if (isMain) {
  const specPath = process.argv[2];
  if (!specPath || !existsSync(specPath)) {
    process.stderr.write(`usage: worker-runner.js <spec.json> (got ${JSON.stringify(specPath ?? null)}, which does not exist)\n`);
    process.exit(2);
  }
  await runWorker(specPath);
  process.exit(0);
}
