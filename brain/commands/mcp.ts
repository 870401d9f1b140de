/**
 * `polly mcp [--agent A] [--workspace W] [--registry DIR] [--workflows DIR]...` — the MCP workflow
 * server on stdio (stdout carries only JSON-RPC; diagnostics go to stderr).
 *
 * Areas: `--agent` names the agent area (a kind of agent: its workflow library; default
 * `default`), `--workspace` the instance area (whose runs; default `default`). Both are part of
 * every run id. The library is the built-in workflows (customer-brief, polly-task), then
 * `<repo>/.polly/workflows/<name>/workflow.yaml` when run inside a git repository (every agent
 * area), then the agent area's own library — `<store>/agents/<AGENT>/workflows/<name>/` and
 * `<repo>/.polly/agents/<AGENT>/workflows/<name>/` — then each `--workflows DIR`. A name already
 * loaded is refused for the later copy. Every workflow is checked at startup; stderr gets one line
 * per workflow (`[polly] admitted: NAME — paths explored: …` or `[polly] REFUSED: NAME` and why).
 *
 * `--brain` adds the Brain's dispatch tools (sys_session_send, sys_read_inbox, sys_cancel_task,
 * plan_propose, polly_status; brain/brain-tools.ts) over the repository's registry, config and gate
 * context; it needs a git repository (the working directory, or `--repo DIR`). The LLM brain's
 * `claude` starts the server this way (brain/llm-brain.ts).
 *
 * Store (the directory holding `registry.json`, `journal.jsonl` and the run store `runs/`): `--registry DIR` or
 * `$POLLY_HOME` (explicit: a pinned store), else — implicit — `<repo>/.polly` inside a git
 * repository, else `~/.polly`. stderr says at start which store is used and where that came from.
 * An implicit store is refused (`bad_input`, exit 2) in two unexpected cases, where the store
 * would follow whatever directory the host happened to start in:
 * - `--workspace` is given: a host entry that names a workspace must pin its store (`polly
 *   install` writes `--registry`), or the same workspace gets one store — one run per key — per
 *   starting directory;
 * - the working directory is inside a git repository without `.polly/` (never `polly init`ed):
 *   the server would create a new store there.
 * Point several workspaces at one store to share it, or at different ones to keep them apart.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { parseCommandArgs } from './args.js';
import type { Command, CommandIO } from './command.js';
import { PollyError, isPollyError } from '../core/errors.js';
import { admissionLines, createPollyMcpServer, newSessionId, type PollyToolDefinition } from '../mcp/mcp-server.js';
import { createJsonRpcStdioTransport, DEFAULT_MAX_LINE_BYTES } from '../mcp/stdio-transport.js';
import { createFileRegistryStore, type RegistryStore } from '../registry/registry-store.js';
import { openRunStore } from '../registry/run-storage.js';
import { findRepo } from '../../workers/git/repo.js';
import { createRuntime, type Runtime } from '../../workflows/run/runtime.js';
import { builtinWorkflowDirs, createWorkflowLibrary } from '../../workflows/workflow-library.js';
import { createFileAdmissionCache } from '../../workflows/check/admission-cache.js';
import { pollyStateRoot } from '../../workers/sandbox/agent-state-dir.js';
import { packageRoot } from '../core/install-paths.js';
import { readFileSync } from 'node:fs';

/** The package version (not imported from cli.ts: that module is mid-evaluation when commands load). */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

const AREA = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;

/** Where `polly mcp` keeps its registry, and which workflow sources it loads. */
export interface McpServerSetup {
  registryDir: string;
  /** Where the store came from: `--registry` and `POLLY_HOME` are pinned; `repository` and `home` are implicit. */
  storeSource: '--registry' | 'POLLY_HOME' | 'repository' | 'home';
  sources: string[];
  agentArea: string;
  instanceArea: string;
}

/**
 * Resolve the server's setup from its flags, environment and working directory.
 * @throws PollyError `bad_input` for an area name that is empty or has characters outside
 *         `[A-Za-z0-9._/-]`, or a `--workflows` path that does not exist.
 */
export async function resolveMcpSetup(
  values: { agent?: string; workspace?: string; registry?: string; workflows?: string[] },
  io: Pick<CommandIO, 'cwd' | 'env'>,
): Promise<McpServerSetup> {
  const agentArea = values.agent ?? 'default';
  const instanceArea = values.workspace ?? 'default';
  for (const [flag, v] of [
    ['--agent', agentArea],
    ['--workspace', instanceArea],
  ] as const) {
    if (!AREA.test(v) || v.split('/').some((seg) => seg === '' || seg === '.' || seg === '..'))
      throw new PollyError('bad_input', `polly mcp: ${flag} ${JSON.stringify(v)} is not a valid area name; use letters, digits and . _ / - (e.g. openworker/cowork).`, {
        details: { flag },
      });
  }
  let repoPolly: string | null = null;
  try {
    repoPolly = (await findRepo(io.cwd, io.env)).pollyDir;
  } catch (error) {
    if (!isPollyError(error)) throw error;
  }
  let registryDir: string;
  let storeSource: McpServerSetup['storeSource'];
  if (values.registry) {
    const r = resolve(io.cwd, values.registry);
    registryDir = basename(r) === 'registry.json' ? dirname(r) : r;
    storeSource = '--registry';
  } else if (io.env.POLLY_HOME) {
    registryDir = resolve(io.cwd, io.env.POLLY_HOME);
    storeSource = 'POLLY_HOME';
  } else {
    registryDir = repoPolly ?? join(homedir(), '.polly');
    storeSource = repoPolly ? 'repository' : 'home';
    const fix = 'Pin the store: pass --registry DIR (run "polly install" again: it writes one into the host entry) or set POLLY_HOME.';
    if (values.workspace !== undefined) {
      throw new PollyError(
        'bad_input',
        `polly mcp: --workspace ${values.workspace} names a workspace but no store, so its runs would live in ${registryDir} — a store chosen by the directory the host started in (${io.cwd}); started elsewhere, the same workspace would get another store and run every key again. ${fix}`,
        { details: { cwd: io.cwd, store: registryDir } },
      );
    }
    if (repoPolly && !existsSync(repoPolly)) {
      throw new PollyError(
        'bad_input',
        `polly mcp: the working directory ${io.cwd} is inside a git repository that has no ${repoPolly} (polly init was never run there), so an implicit store would be created there just because the host started in it. ${fix} Or run "polly init" in that repository to make its .polly the store.`,
        { details: { cwd: io.cwd, store: registryDir } },
      );
    }
  }
  const sources = [...builtinWorkflowDirs()];
  if (repoPolly && existsSync(join(repoPolly, 'workflows'))) sources.push(join(repoPolly, 'workflows'));
  // The agent area's own library (the store's, then the repository's), e.g. <store>/agents/openworker/cowork/workflows.
  for (const base of [registryDir, ...(repoPolly && repoPolly !== registryDir ? [repoPolly] : [])]) {
    const own = join(base, 'agents', ...agentArea.split('/'), 'workflows');
    if (existsSync(own)) sources.push(own);
  }
  for (const w of values.workflows ?? []) {
    const p = resolve(io.cwd, w);
    if (!existsSync(p))
      throw new PollyError(
        'bad_input',
        `polly mcp: --workflows ${JSON.stringify(w)} does not exist (resolved to ${p}). Pass a directory holding workflow.yaml, or a directory of such directories.`,
        { details: { flag: '--workflows', path: p } },
      );
    sources.push(p);
  }
  return { registryDir, storeSource, sources, agentArea, instanceArea };
}

/** Wrap a runtime so that the server can wait for calls in flight before it closes. */
function trackInFlight(inner: Runtime): { runtime: Runtime; drained(): Promise<void> } {
  let inFlight = 0;
  let waiters: Array<() => void> = [];
  const wrap =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      inFlight++;
      try {
        return await fn(...a);
      } finally {
        inFlight--;
        if (inFlight === 0) {
          const w = waiters;
          waiters = [];
          for (const f of w) f();
        }
      }
    };
  const runtime: Runtime = {
    agentArea: inner.agentArea,
    instanceArea: inner.instanceArea,
    start: wrap(inner.start),
    claim: wrap(inner.claim),
    report: wrap(inner.report),
    signal: wrap(inner.signal),
    state: wrap(inner.state),
    journal: wrap(inner.journal),
    list: wrap(inner.list),
    expireLeases: wrap(inner.expireLeases),
  };
  return {
    runtime,
    // A request read just before end-of-input starts a tick later, and a response is written a few
    // ticks after its handler returns: settle for a moment before and after the last call.
    drained: async () => {
      for (;;) {
        await new Promise((res) => setTimeout(res, 20));
        if (inFlight === 0) return;
        await new Promise<void>((res) => waiters.push(res));
      }
    },
  };
}

/**
 * The Brain's tools for `--brain`: over `store`, with the repository's config and the gate context
 * of its main checkout. @throws PollyError `not_a_git_repo` outside a repository; `config_invalid`.
 */
async function brainExtraTools(store: RegistryStore, io: Pick<CommandIO, 'cwd' | 'env'>, goalId: string | null): Promise<PollyToolDefinition[]> {
  const repo = await findRepo(io.cwd, io.env);
  const [{ createBrainTools }, { loadConfig }, { brainGateContext }] = await Promise.all([
    import('../mcp/brain-tools.js'),
    import('../config/config.js'),
    import('../llm/llm-brain.js'),
  ]);
  return createBrainTools({ store, config: await loadConfig(repo.root), gateContext: brainGateContext(repo.root, io.env), goalId });
}

export const command: Command = {
  summary: 'run the MCP workflow server on stdio',
  usage: `Usage: polly mcp [--agent AREA] [--workspace AREA] [--registry DIR] [--workflows DIR]... [--lease-seconds N] [--brain] [--repo DIR] [--goal ID]

Serve Polly's workflows to an MCP host over stdio (tools workflow_list, workflow_start,
workflow_report, workflow_state, workflow_signal, workflow_journal).

  --agent AREA      agent area: which kind of agent (default "default"); part of every run id;
                    its own library is <store>/agents/AREA/workflows and <repo>/.polly/agents/AREA/workflows
  --workspace AREA  instance area: whose runs (default "default"); part of every run id; needs a
                    pinned store (--registry or POLLY_HOME)
  --registry DIR    the store (default: $POLLY_HOME, else <repo>/.polly, else ~/.polly; an implicit
                    store is refused with --workspace, or in a git repository without .polly/)
  --workflows DIR   more workflows (a directory with workflow.yaml, or of such directories); repeatable
  --lease-seconds N lease of every work order handed to this session (default: each effect's lease_seconds)
  --brain           add the Brain's tools (sys_session_send, sys_read_inbox, sys_cancel_task,
                    plan_propose, polly_status) for the repository's registry and config
  --repo DIR        the repository to serve (default: the working directory)
  --goal ID         with --brain: the goal this Brain session serves (plan_propose's default goal_id)

Every workflow is model-checked at startup (a verdict is kept in $XDG_STATE_HOME/polly/admissions,
default ~/.local/state/polly/admissions, keyed by the workflow and the checker's code, so an
unchanged workflow is not searched again); stderr shows "[polly] admitted: …" or
"[polly] REFUSED: …" per workflow, and "[polly] store: DIR (from …)". A refused workflow cannot
be started. A request line over ${DEFAULT_MAX_LINE_BYTES} bytes is answered with JSON-RPC error -32600.
Register the server with a host: polly install --host claude-code|kiro|openworker|generic|nemo|registry.`,
  async run(argv, io) {
    const { values } = parseCommandArgs(
      'mcp',
      argv,
      {
        agent: { type: 'string' },
        workspace: { type: 'string' },
        registry: { type: 'string' },
        workflows: { type: 'string', multiple: true },
        'lease-seconds': { type: 'string' },
        brain: { type: 'boolean' },
        repo: { type: 'string' },
        goal: { type: 'string' },
      },
      0,
    );
    const where = values.repo ? { ...io, cwd: resolve(io.cwd, values.repo) } : io;
    let leaseSeconds: number | undefined;
    if (values['lease-seconds'] !== undefined) {
      leaseSeconds = Number(values['lease-seconds']);
      if (!Number.isInteger(leaseSeconds) || leaseSeconds < 1)
        throw new PollyError('bad_input', `polly mcp: --lease-seconds ${JSON.stringify(values['lease-seconds'])} is not a whole number of seconds >= 1.`, {
          details: { flag: '--lease-seconds' },
        });
    }
    const setup = await resolveMcpSetup(values, where);
    io.stderr.write(
      `[polly] store: ${setup.registryDir} (from ${setup.storeSource === 'repository' ? 'the repository of the working directory' : setup.storeSource === 'home' ? 'the home directory: no --registry, POLLY_HOME or repository' : setup.storeSource})\n`,
    );
    // Verdicts are kept by content (workflow + checker), so an unchanged library is not searched again.
    const library = createWorkflowLibrary(setup.sources, { admissions: createFileAdmissionCache(join(pollyStateRoot(io.env), 'admissions')) });
    for (const line of admissionLines(library)) io.stderr.write(`${line}\n`);
    const store = createFileRegistryStore(setup.registryDir);
    const runs = await openRunStore(setup.registryDir, store);
    if (runs.moved > 0) io.stderr.write(`[polly] moved ${runs.moved} workflow runs from registry.json into ${runs.where}\n`);
    const tracked = trackInFlight(createRuntime({ store: runs.store, library, agentArea: setup.agentArea, instanceArea: setup.instanceArea, leaseSeconds }));
    const extraTools = values.brain ? await brainExtraTools(store, where, values.goal ?? null) : [];
    const session = newSessionId();
    const server = createPollyMcpServer({ runtime: tracked.runtime, library, extraTools, version: packageVersion(), session });
    io.stderr.write(`[polly] serving agent area ${setup.agentArea}, workspace ${setup.instanceArea}, registry ${setup.registryDir}, session ${session}\n`);
    const transport = createJsonRpcStdioTransport(io.stdin as Readable, io.stdout as Writable);
    const closed = new Promise<void>((resolveClosed) => {
      server.server.onclose = () => resolveClosed();
      // The host closed stdin: answer what was already asked, then stop.
      const finish = (): void => void tracked.drained().then(() => server.close());
      io.stdin.once('end', finish);
      io.stdin.once('close', finish);
    });
    await server.connect(transport);
    await closed;
    await runs.store.close();
    return 0;
  },
};
