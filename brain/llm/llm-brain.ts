/**
 * The LLM brain host: one long-lived `claude` process per goal, driven turn by turn over
 * stream-json, with Polly's brain tools over MCP, the Brain's system prompt and skills, and its own
 * tool calls gated with the `brain` role.
 *
 * Command line (flags from `claude --help`, Claude Code 2.1.197):
 * `claude -p --input-format stream-json --output-format stream-json --verbose
 *   --permission-mode bypassPermissions --strict-mcp-config --mcp-config <stateDir>/brain-mcp.json
 *   --allowedTools mcp__polly --append-system-prompt <brain prompt> [--model M] [--resume S]
 *   --settings <stateDir>/gate/claude-settings.json`, run in the repository root.
 * Each turn writes one line `{"type":"user","message":{"role":"user","content":[{"type":"text","text":…}]}}`
 * to stdin and ends at the next `result` line on stdout (claude emits `system/init` again at the
 * start of every turn; the session id stays the same). Closing stdin ends the process once the
 * current turn is done.
 *
 * The MCP config starts `node <cliPath> mcp --brain --repo <repoRoot> --registry <pollyDir>`.
 * Skills: Claude Code loads user skills from `$CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md`
 * (verified with 2.1.197: they appear in `system/init.skills`); the three are copied there and also
 * listed in the system prompt.
 *
 * Files under `stateDir`: `claude/` (CLAUDE_CONFIG_DIR: sessions, so a resume needs the same
 * stateDir), `brain-mcp.json`, `gate/` (the gate's config, hook settings and git/gh shims).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { InboxEvent } from '../mcp/inbox-events.js';
import { brainSystemPrompt, loadBrainSkills } from './brain-prompt.js';
import type { PollyConfig } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import { prepareGateSync } from '../../gate/hooks/harness-gate.js';
import type { GateContext } from '../../gate/types.js';
import type { AgentEvent } from '../../workers/agents/agent-adapter.js';
import { resolveAgentBinary } from '../../workers/agents/agent-binary.js';
import { redactText } from '../../workers/agents/agent-process.js';
import { signalGroup } from '../../workers/proc/kill.js';
import { claudeCodeEnv, isRootRefusal, secretsIn } from '../../workers/agents/claude-code-env.js';
import { parseClaudeStreamLine, prepareClaudeConfigDir, rootRefusalMessage } from '../../workers/agents/claude-code-adapter.js';
import { readRepoBranchContext } from '../../workers/git/repo.js';

export interface LlmBrainOptions {
  repoRoot: string;
  pollyDir: string;
  config: PollyConfig;
  goal: { id: string; text: string };
  /** e.g. `<pollyDir>/brain/<goalId>`: holds CLAUDE_CONFIG_DIR, the MCP config and the gate's files. */
  stateDir: string;
  /** Added to the process environment, e.g. ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY. */
  env: Record<string, string>;
  /** After a Brain restart: resume this session (same stateDir). */
  resumeSessionId: string | null;
  /** Absolute path of dist/brain/cli.js (the MCP server command). */
  cliPath: string;
  onEvent?: (e: AgentEvent) => void;
  /** The claude executable (default: `workers.claude-code.command` resolved like the adapter does). */
  binary?: string;
  /** close(): how long to wait for claude to exit after stdin closes before killing its group (ms, default 5000). */
  closeGraceMs?: number;
}

/** How the claude process ended. */
export interface LlmBrainExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last 4 KB of stderr, secrets redacted. */
  stderr: string;
}

export interface LlmBrain {
  pid: number;
  sessionId(): string | null;
  /**
   * Send one user message (a new turn); resolves when that turn's `result` arrives. Turns are
   * queued: a call while a turn runs starts after it. If claude exits first, resolves
   * `{ok: false, text: <why, with stderr's tail>}` (restart with `resumeSessionId`).
   */
  turn(text: string): Promise<{ ok: boolean; text: string; sessionId: string | null }>;
  /** Close stdin and wait for exit (kill the group after a grace period). */
  close(): Promise<void>;
  /** Resolves when the claude process has exited (also when it dies on its own). */
  exited: Promise<LlmBrainExit>;
}

/**
 * The gate context of the Brain's own checkout: the repository root is its worktree; branch and
 * default branch by the one rule of `readRepoBranchContext` (workers/git/repo.ts); home from `$HOME`.
 */
export function brainGateContext(repoRoot: string, env: NodeJS.ProcessEnv = process.env): GateContext {
  const where = readRepoBranchContext(repoRoot, env);
  return { repoRoot, worktree: repoRoot, branch: where?.branch ?? 'HEAD', defaultBranch: where?.defaultBranch ?? 'main', home: env.HOME ?? homedir() };
}

/**
 * The first message of a goal's session. Line 1 carries `[polly task=<goalId> role=brain]` (the
 * scripted model server matches sessions on it).
 */
export function firstBrainMessage(goal: { id: string; text: string }): string {
  return [
    `[polly task=${goal.id} role=brain] Goal ${goal.id}`,
    '',
    goal.text.trim(),
    '',
    `Start with polly_status and the investigate skill. When you know enough, propose the plan with plan_propose (goal_id "${goal.id}"); ` +
      'if it is refused, revise it from the counterexample and propose again. Then wait: sys_read_inbox blocks until something happens, or end your turn and Polly wakes you.',
  ].join('\n');
}

const DIGEST_FIELDS = ['taskId', 'planId', 'goalId', 'status', 'purpose', 'worker', 'title', 'line', 'reason', 'violations', 'pr', 'url'] as const;

function digestLine(e: InboxEvent): string {
  const parts: string[] = [];
  for (const k of DIGEST_FIELDS) {
    const v = e[k];
    if (v === undefined || v === null || v === '') continue;
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    parts.push(`${k}=${s.length > 80 ? `${s.slice(0, 77)}…` : s}`);
  }
  return `- #${e.seq} ${e.kind}${parts.length ? `: ${parts.join(' ')}` : ''}`;
}

/**
 * The message that wakes the Brain for inbox events: one line per event (at most 20, then a
 * count), ending with the instruction to call sys_read_inbox (which then returns at once).
 */
export function wakeMessage(events: InboxEvent[]): string {
  const shown = events.slice(0, 20).map(digestLine);
  const more = events.length > shown.length ? [`- … and ${events.length - shown.length} more`] : [];
  return [
    `[polly wake] ${events.length} new event(s) in your inbox:`,
    ...shown,
    ...more,
    '',
    'Call sys_read_inbox to read them in full (it returns at once), then integrate them and decide the next step.',
  ].join('\n');
}

/** The MCP config that starts Polly's MCP server with the brain tools. Written to `<stateDir>/brain-mcp.json`. */
export function writeBrainMcpConfig(stateDir: string, cliPath: string, repoRoot: string, pollyDir: string, goalId: string | null = null): string {
  const file = join(stateDir, 'brain-mcp.json');
  // alwaysLoad: claude -p connects --mcp-config servers in the background and starts the first turn
  // without them ("MCP server 'polly' is still connecting"); an alwaysLoad server is connected first.
  const config = {
    mcpServers: {
      polly: {
        type: 'stdio',
        command: process.execPath,
        args: [cliPath, 'mcp', '--brain', '--repo', repoRoot, '--registry', pollyDir, ...(goalId ? ['--goal', goalId] : [])],
        alwaysLoad: true,
      },
    },
  };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/** The argv (after the binary) of the Brain's claude. Pure. */
export function brainClaudeArgs(o: { mcpConfigPath: string; systemPrompt: string; model: string | null; resumeSessionId: string | null; gateArgs: string[] }): string[] {
  const args = [
    '-p',
    '--input-format',
    'stream-json',
    '--output-format',
    'stream-json',
    '--verbose',
    '--permission-mode',
    'bypassPermissions',
    '--strict-mcp-config',
    '--mcp-config',
    o.mcpConfigPath,
    '--allowedTools',
    'mcp__polly',
    '--append-system-prompt',
    o.systemPrompt,
  ];
  if (o.model) args.push('--model', o.model);
  if (o.resumeSessionId) args.push('--resume', o.resumeSessionId);
  args.push(...o.gateArgs);
  return args;
}

/**
 * A problem with Polly's MCP server in a `system/init` line of claude's stream-json
 * (`mcp_servers: [{name, status}]`, status `connected` | `failed` | `pending` | `needs-auth`, seen
 * in 2.1.197), or null when `polly` is connected or the line is not an init line.
 */
export function pollyMcpInitProblem(json: unknown): string | null {
  const j = json as { type?: unknown; subtype?: unknown; mcp_servers?: unknown } | null;
  if (j?.type !== 'system' || j.subtype !== 'init' || !Array.isArray(j.mcp_servers)) return null;
  const polly = (j.mcp_servers as Array<{ name?: unknown; status?: unknown }>).find((m) => m?.name === 'polly');
  if (polly?.status === 'connected') return null;
  return (
    `Polly's MCP server is ${polly ? String(polly.status) : 'missing'} in the Brain's claude, so it has none of Polly's tools. ` +
    'Run "node dist/brain/cli.js mcp --brain" in the repository to see why (a missing build, a broken .polly/config.yaml or registry).'
  );
}

/**
 * Start the Brain's claude for a goal (no turn yet: call `turn(firstBrainMessage(goal))`).
 * A `system/init` line without Polly's MCP server connected becomes an `error` event (once).
 * @throws PollyError `agent_refused` when run as root without `workers.claude-code.allow_root_sandbox`
 *         (Claude Code refuses bypassPermissions as root); `agent_missing` when claude cannot be
 *         spawned; `not_built` when cliPath, the gate or the skills are missing; `bad_input` for a relative path.
 */
export function startLlmBrain(options: LlmBrainOptions): LlmBrain {
  for (const [k, v] of Object.entries({ repoRoot: options.repoRoot, pollyDir: options.pollyDir, stateDir: options.stateDir, cliPath: options.cliPath })) {
    if (!v.startsWith('/')) throw new PollyError('bad_input', `startLlmBrain: ${k} must be an absolute path, got ${JSON.stringify(v)}`);
  }
  if (!existsSync(options.cliPath)) throw new PollyError('not_built', `the Brain's MCP server command ${options.cliPath} does not exist. Run "npm run build" first.`);
  const claudeConfig = options.config.workers['claude-code'];
  const isRoot = process.getuid?.() === 0;
  if (isRoot && !claudeConfig.allow_root_sandbox) throw new PollyError('agent_refused', `The Brain runs claude: ${rootRefusalMessage()}`);
  if (!options.env.ANTHROPIC_API_KEY && !options.env.ANTHROPIC_AUTH_TOKEN) {
    // claude would start, print "Not logged in" into its session log and wait: say it up front.
    throw new PollyError(
      'agent_refused',
      'The Brain runs claude with a private CLAUDE_CONFIG_DIR, so your own "claude login" is not used: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment of "polly goal". Without a key, try "npm run demo", or "polly try PLAN.yaml --script SCRIPT.yaml" (your own plan with a scripted model, docs/guide.md "Try it without API keys: polly try"); "polly run PLAN.yaml" needs no LLM Brain but its workers still need their keys.',
    );
  }
  const stateDir = resolve(options.stateDir);
  mkdirSync(stateDir, { recursive: true });
  const { configDir } = prepareClaudeConfigDir(stateDir);
  const skills = loadBrainSkills();
  for (const s of skills) {
    mkdirSync(join(configDir, 'skills', s.name), { recursive: true });
    writeFileSync(join(configDir, 'skills', s.name, 'SKILL.md'), s.text);
  }
  const mcpConfigPath = writeBrainMcpConfig(stateDir, options.cliPath, options.repoRoot, options.pollyDir, options.goal.id);
  const basePath = options.env.PATH ?? process.env.PATH ?? '/usr/bin:/bin';
  const gate = prepareGateSync('claude-code', {
    role: 'brain',
    context: brainGateContext(options.repoRoot, { ...process.env, ...options.env }),
    stateDir: join(stateDir, 'gate'),
    journalPath: join(options.pollyDir, 'gate-decisions.jsonl'),
    policy: options.config.policies,
    basePath,
  });
  const systemPrompt = brainSystemPrompt({ skills, maxDispatches: options.config.policies.spawn_bounds.max_dispatches_per_turn });
  const args = brainClaudeArgs({ mcpConfigPath, systemPrompt, model: options.config.brain.model, resumeSessionId: options.resumeSessionId, gateArgs: gate.args });
  const env = claudeCodeEnv({
    configDir,
    isRoot,
    allowRootSandbox: claudeConfig.allow_root_sandbox,
    // Connect MCP servers before the first turn (2.1.197 reads MCP_CONNECTION_NONBLOCKING; "false" blocks).
    // Even blocking, claude 2.1.197 waits only MCP_CONNECT_TIMEOUT_MS (default 5 s) before it starts the
    // turn with the server "pending" and keeps connecting in the background; `polly mcp --brain` needs
    // ~2 s on a quiet machine and more under load, so the Brain would run a turn without Polly's tools.
    // Wait up to 60 s (MCP_TIMEOUT, the server's own start-up limit, default 30 s, likewise): both
    // variables are in claude's settings env allowlist (https://docs.anthropic.com/en/docs/claude-code/settings).
    settings: { MCP_CONNECTION_NONBLOCKING: 'false', MCP_CONNECT_TIMEOUT_MS: '60000', MCP_TIMEOUT: '60000' },
    layers: [options.env, gate.env],
  });
  const redact = [...secretsIn(options.env)];
  const binary = options.binary ?? resolveAgentBinary('claude-code', claudeConfig, env, options.repoRoot);
  let child: ChildProcess;
  try {
    child = spawn(binary, args, { cwd: options.repoRoot, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (error) {
    throw new PollyError(
      'agent_missing',
      `cannot start claude (${binary}) for the Brain: ${(error as Error).message}. Install @anthropic-ai/claude-code or set workers.claude-code.command.`,
      { cause: error },
    );
  }
  if (child.pid === undefined) {
    // spawn reports ENOENT asynchronously; pid is undefined when it will.
    child.on('error', () => undefined);
    throw new PollyError(
      'agent_missing',
      `cannot start claude (${binary}) for the Brain: not found or not executable. Install @anthropic-ai/claude-code or set workers.claude-code.command.`,
    );
  }

  let session: string | null = options.resumeSessionId;
  let stderrTail = '';
  let exitInfo: LlmBrainExit | null = null;
  let pending: { resolve: (r: { ok: boolean; text: string; sessionId: string | null }) => void } | null = null;
  let queue: Promise<unknown> = Promise.resolve();

  const emit = (e: AgentEvent): void => {
    if (e.type === 'session') session = e.sessionId;
    options.onEvent?.(e);
    if (e.type === 'result' && pending) {
      const p = pending;
      pending = null;
      p.resolve({ ok: e.ok, text: redactText(e.text, redact), sessionId: session });
    }
  };

  let mcpProblemReported = false;
  let buffered = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line) continue;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        emit({ type: 'unknown', raw: redactText(line, redact) });
        continue;
      }
      const problem = pollyMcpInitProblem(json);
      if (problem && !mcpProblemReported) {
        mcpProblemReported = true;
        emit({ type: 'error', message: problem });
      }
      for (const e of parseClaudeStreamLine(json)) emit(e);
    }
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-4096);
  });
  child.stdin!.on('error', () => undefined); // EPIPE when claude has exited: the turn resolves from 'exit'

  const exited = new Promise<LlmBrainExit>((resolveExit) => {
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (exitInfo) return;
      exitInfo = { code, signal, stderr: redactText(stderrTail, redact) };
      // MCP servers and hooks started by claude share its process group: end whatever is left.
      signalGroup(child.pid, 'SIGTERM');
      if (pending) {
        const p = pending;
        pending = null;
        const why = exitInfo.stderr.trim().split('\n').slice(-3).join(' | ');
        const refused = isRootRefusal(exitInfo.stderr) ? ` ${rootRefusalMessage()}` : '';
        p.resolve({
          ok: false,
          text: `the Brain's claude exited (code ${code}, signal ${signal}) before the turn's result${why ? `: ${why}` : ''}.${refused} Start it again with resumeSessionId ${session ?? '(none yet)'}.`,
          sessionId: session,
        });
      }
      resolveExit(exitInfo);
    };
    // 'exit' can come before the last stdout lines are read (a result line written just before
    // exiting): finish once stdout has ended, or after 500 ms if a descendant keeps the pipe open.
    const stdoutEnded = new Promise<void>((r) => child.stdout!.once('close', () => r()));
    child.on('exit', (code, signal) => {
      void Promise.race([stdoutEnded, new Promise((r) => setTimeout(r, 500).unref())]).then(() => finish(code, signal));
    });
    child.on('error', (error) => {
      stderrTail += `\n${error.message}`;
      finish(null, null);
    });
  });

  const turn = (text: string): Promise<{ ok: boolean; text: string; sessionId: string | null }> => {
    const run = queue.then(
      () =>
        new Promise<{ ok: boolean; text: string; sessionId: string | null }>((resolveTurn) => {
          if (exitInfo) {
            resolveTurn({
              ok: false,
              text: `the Brain's claude has exited (code ${exitInfo.code}); start it again with resumeSessionId ${session ?? '(none yet)'}.`,
              sessionId: session,
            });
            return;
          }
          pending = { resolve: resolveTurn };
          child.stdin!.write(`${JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'text', text }] } })}\n`);
        }),
    );
    queue = run;
    return run;
  };

  const close = async (): Promise<void> => {
    if (!exitInfo) {
      child.stdin!.end();
      const grace = options.closeGraceMs ?? 5000;
      const timer = setTimeout(() => {
        signalGroup(child.pid, 'SIGTERM');
        setTimeout(() => signalGroup(child.pid, 'SIGKILL'), 2000).unref();
      }, grace);
      await exited;
      clearTimeout(timer);
    }
    signalGroup(child.pid, 'SIGKILL');
  };

  return { pid: child.pid, sessionId: () => session, turn, close, exited };
}
