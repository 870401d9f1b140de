/**
 * The gate's data shapes: requests, context, decisions. Type-only module (no runtime cost), shared
 * by the pure decision function and every enforcement adapter.
 */
import type { GatePolicy } from './policy-types.js';

export type { GatePolicy } from './policy-types.js';

/** Who is asking: the Brain, an implementer, or a read-only worker. */
export type GateRole = 'brain' | 'implement' | 'review' | 'explore' | 'search';
/** The gate's own tool vocabulary; each harness maps its tools onto these. */
export type GateTool = 'bash' | 'write' | 'edit' | 'read';
export type GateHarness = 'claude-code' | 'codex' | 'pi' | 'shim' | 'cli' | 'brain';

/** Where the request happens. All paths are absolute. */
export interface GateContext {
  /** The main checkout of the repository (e.g. `/repo`). */
  repoRoot: string;
  /** The worker's worktree (e.g. `/repo/.worktrees/t1`); for the Brain, the repo root. */
  worktree: string;
  /** The branch checked out in the worktree (e.g. `polly/t1`); `HEAD` in a refspec resolves to it. */
  branch: string;
  /** The repository's default branch (e.g. `main`): nothing is ever pushed to it. */
  defaultBranch: string;
  /** The user's home directory (`~`, `$HOME`). */
  home: string;
  /** Extra directories nobody may write into (the gate's own state directory). */
  protectedDirs?: string[];
  /** Directories where scratch writes are allowed (default `/tmp`, `/var/tmp`). */
  tempDirs?: string[];
  /**
   * Host names of forge APIs beyond the ones the gate knows (`api.github.com`, `uploads.github.com`,
   * `api.<name>.ghe.com`, any `/api/v3/` path): e.g. a GitHub Enterprise Server host from
   * `forge.github.base_url`. An HTTP client writing to one is denied (`blast_radius.forge_write`).
   */
  forgeApiHosts?: string[];
  /**
   * True when the worker runs inside Polly's OS sandbox (workers/sandbox/): set by the worker runner
   * (workers/supervisor/worker-runner.ts) once bubblewrap confines the turn. An implementer's write
   * target the gate cannot resolve, or an interpreter one-liner, is then left to the sandbox, while
   * the seed's named policies stay denied in every spelling the gate can see (gate/sandbox-leeway.ts).
   * False or absent (`workers.allow_unconfined`, the Brain, `polly gate decide`): the strict gate.
   */
  sandboxed?: boolean;
}

export interface DispatchRequest {
  type: 'dispatch';
  purpose: string;
  model: string | null;
  /**
   * Where the dispatch comes from: `plan` (an approved plan's schedule, after the plan gate) or
   * `brain` (the LLM brain's `sys_session_send`, which may start read-only work only). Anything
   * but `plan` is judged as `brain` (fail closed).
   */
  source: 'plan' | 'brain';
  /** Dispatches already made in this Brain turn (before this one). */
  dispatchesThisTurn: number;
}

export interface ToolRequest {
  type: 'tool';
  harness?: GateHarness;
  tool: GateTool;
  /** The command line (bash) or the path (write, edit, read). */
  input: string;
  /** Absolute working directory of the call. */
  cwd: string;
  role: GateRole;
}

export interface ForgeRequest {
  type: 'forge';
  /** e.g. `open_pr`, `mark_ready`, `comment`, `review`, `read_pr`; any merge operation is denied. */
  operation: string;
  role?: GateRole;
  [key: string]: unknown;
}

export type GateRequest = DispatchRequest | ToolRequest | ForgeRequest;

/**
 * The gate's answer. `rule` names the policy and, after a dot, the sub-rule that fired
 * (e.g. `blast_radius.force_push`, `purpose_guard.read_only`), or `allow` / `internal_error`.
 */
export interface GateDecision {
  decision: 'allow' | 'ask' | 'deny';
  rule: string;
  reason: string;
}

/** A finding of the analysis: a reason to deny or ask. */
export interface GateFinding {
  decision: 'deny' | 'ask';
  rule: string;
  reason: string;
}

/** How an argv reaches the analyser. */
export interface ExecFlags {
  /** More arguments arrive at run time (xargs, parallel, find -exec `{}`): the argv is incomplete. */
  argsFromStdin?: boolean;
  /** Standard input comes from a pipe (a shell reading it runs unseen commands). */
  stdinFromPipe?: boolean;
  /** Text of a here-document or here-string fed to the command, if any. */
  stdinText?: string | null;
}

/**
 * The collector the command analysers report to (implemented in shell-analysis.ts). Analysers are
 * pure: they only call these methods.
 */
export interface Analyzer {
  readonly context: GateContext;
  readonly policy: GatePolicy;
  readonly role: GateRole;
  finding(f: GateFinding): void;
  /**
   * A file the command writes or deletes (`path` absolute, or null when unresolved); `cwd` is the
   * directory a relative `raw` is resolved against (null: unknown), used when `path` is null.
   */
  write(raw: string, path: string | null, cwd?: string | null): void;
  /** The command changes something (denied for read-only roles and the Brain). */
  mutate(what: string): void;
  /** Analyse shell source that will run (sh -c, eval, git `!` aliases, watch). */
  script(source: string, cwd: string | null, depth: number, origin: string): void;
  /** Analyse one resolved argv (wrappers are stripped here). */
  exec(argv: string[], cwd: string | null, depth: number, flags: ExecFlags): void;
  /**
   * Judge `source` as a command line on its own (a command embedded in interpreter code) without
   * reporting it: the first denial of a seed policy it draws (gate/sandbox-leeway.ts
   * `isNamedPolicyRule`), writes included, or null.
   */
  probe(source: string, cwd: string | null, depth: number): GateFinding | null;
}
