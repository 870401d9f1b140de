/**
 * `.polly/config.yaml`: load, validate and merge over {@link DEFAULT_CONFIG}; render the commented
 * default file that `polly init` writes.
 *
 * Validation walks the YAML document (the `yaml` package's document API with a `LineCounter`), so
 * every error names `file:line:column`, the key path and what is accepted. Unknown keys, wrong
 * types and out-of-range values are `config_invalid` (exit 2); a missing key takes its default.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { Document, isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type Pair, type Scalar } from 'yaml';
import { DEFAULT_CONFIG, type PollyConfig } from './config-schema.js';
import { PollyError } from '../core/errors.js';
import { HARNESSES, PURPOSES } from '../core/vocabulary.js';
import { hostConfigProblems } from '../../workers/hosts/host-config.js';

/** The config file of a repository, relative to its root. */
export const CONFIG_RELATIVE_PATH = join('.polly', 'config.yaml');

/** A tiny schema language for the config tree (mirrors {@link PollyConfig}). */
export type Spec =
  | { t: 'object'; fields: Record<string, Spec> /** every field required (objects whose default is null) */; complete?: boolean }
  | { t: 'record'; keys: readonly string[]; of: Spec }
  /** A mapping with any plain-string keys (e.g. model ids), each value `of`; `keyName` says what a key is in messages. */
  | { t: 'map'; keyName: string; of: Spec }
  /** A string; `absolutePath`: one that starts with `/` (a host path). */
  | { t: 'string'; absolutePath?: boolean }
  | { t: 'int'; min: number; max?: number }
  /** A number (not only integers) greater than `gt` (or at least `min`, when given instead). */
  | { t: 'number'; gt: number; min?: number }
  | { t: 'bool' }
  | { t: 'enum'; values: readonly string[] }
  | { t: 'list'; of: Spec }
  | { t: 'nullable'; of: Spec }
  | { t: 'literal'; value: number };

const str: Spec = { t: 'string' };
const nullableStr: Spec = { t: 'nullable', of: str };
const int = (min: number, max?: number): Spec => (max === undefined ? { t: 'int', min } : { t: 'int', min, max });

/** A budget: `{usd?, tokens?}` (brain/config/config-schema.ts `Budget`), or null for no limit. */
const BUDGET_SPEC: Spec = { t: 'nullable', of: { t: 'object', fields: { usd: { t: 'nullable', of: { t: 'number', gt: 0 } }, tokens: { t: 'nullable', of: int(1) } } } };

/** USD per million tokens (brain/config/config-schema.ts `ModelPrice`): 0 or more. */
const USD_PER_MTOK: Spec = { t: 'number', gt: -1, min: 0 };
const PRICE_SPEC: Spec = {
  t: 'object',
  fields: { input: USD_PER_MTOK, output: USD_PER_MTOK, cache_read: { t: 'nullable', of: USD_PER_MTOK }, cache_write: { t: 'nullable', of: USD_PER_MTOK } },
};

/** The accepted shape of config.yaml. */
export const CONFIG_SPEC: Spec = {
  t: 'object',
  fields: {
    version: { t: 'literal', value: 1 },
    policies: {
      t: 'object',
      fields: {
        blast_radius: { t: 'object', fields: { gate_pushes: { t: 'bool' } } },
        spawn_bounds: { t: 'object', fields: { max_dispatches_per_turn: int(1, 100) } },
        purpose_guard: {
          t: 'object',
          fields: { allowed: { t: 'list', of: { t: 'enum', values: PURPOSES } }, read_only: { t: 'list', of: { t: 'enum', values: PURPOSES } } },
        },
        ask_timeout: int(1),
      },
    },
    workers: {
      t: 'object',
      fields: {
        'claude-code': { t: 'object', fields: { command: str, model: nullableStr, allow_root_sandbox: { t: 'bool' } } },
        codex: {
          t: 'object',
          fields: {
            command: str,
            model: nullableStr,
            provider: { t: 'nullable', of: { t: 'object', complete: true, fields: { id: str, base_url: str, env_key: str } } },
          },
        },
        pi: {
          t: 'object',
          fields: {
            command: str,
            model: nullableStr,
            provider: nullableStr,
            base_url: nullableStr,
            api: { t: 'enum', values: ['openai-completions', 'openai-responses', 'anthropic-messages'] },
            api_key_env: str,
          },
        },
        allow_unconfined: { t: 'bool' },
        env_passthrough: { t: 'list', of: str },
        tool_paths: { t: 'list', of: { t: 'string', absolutePath: true } },
        limits: {
          t: 'object',
          fields: {
            max_processes: int(16),
            memory_mib: int(64),
            tmp_mib: int(1),
            file_size_mib: int(1),
            output_line_kib: int(1),
            output_total_mib: int(1),
          },
        },
        hosts: {
          t: 'list',
          of: {
            t: 'object',
            fields: {
              name: str,
              ssh: str,
              port: { t: 'nullable', of: int(1, 65535) },
              capacity: int(1, 64),
              harnesses: { t: 'list', of: { t: 'enum', values: HARNESSES } },
              dir: str,
            },
          },
        },
        ssh_config: nullableStr,
        host_lease_seconds: int(5, 3600),
        local_fallback: { t: 'bool' },
      },
    },
    review: {
      t: 'object',
      fields: {
        pairs: { t: 'record', keys: HARNESSES, of: { t: 'list', of: { t: 'enum', values: HARNESSES } } },
        max_rounds: int(0, 20),
      },
    },
    acceptance: { t: 'object', fields: { commands: { t: 'list', of: str }, timeout: int(1), max_attempts: int(1, 20), network: { t: 'bool' }, known_red: { t: 'list', of: str } } },
    worktrees: { t: 'object', fields: { dir: str, setup: nullableStr, setup_network: { t: 'bool' }, protected_paths: { t: 'list', of: str } } },
    forge: {
      t: 'object',
      fields: {
        kind: { t: 'enum', values: ['auto', 'local', 'github'] },
        github: { t: 'object', fields: { base_url: nullableStr, watch_seconds: int(1, 3600), trusted_authors: { t: 'list', of: str } } },
      },
    },
    intake: { t: 'object', fields: { label: str, in_brain: { t: 'bool' }, watch_seconds: int(1, 3600) } },
    brain: { t: 'object', fields: { model: nullableStr, start_on_approve: { t: 'bool' } } },
    budgets: { t: 'object', fields: { per_task: BUDGET_SPEC, per_goal: BUDGET_SPEC } },
    prices: { t: 'map', keyName: 'a model id', of: PRICE_SPEC },
    notifications: { t: 'object', fields: { webhook_url: nullableStr, desktop: { t: 'bool' }, timeout_ms: int(100, 120_000), dashboard_url: nullableStr } },
    pr: { t: 'object', fields: { max_fix_rounds: int(0, 10) } },
    runs: { t: 'object', fields: { store: { t: 'enum', values: ['lmdb', 'postgres'] }, url_env: str, schema: str } },
  },
};

/** The comment written above each key of the default config (by key path). */
export const CONFIG_COMMENTS: Record<string, string> = {
  version: 'Format version of this file.',
  policies: "Gate policies (named as the gate's rules are: gate/decide.ts). Every dispatch and every tool call passes the gate.",
  'policies.blast_radius':
    "blast_radius: what a worker may destroy. Always denied whatever this says: force-push in any\nspelling, pushes to the default branch, deleting remote branches, any PR merge (Polly never\nmerges), rm -rf outside the worktree, reset --hard, clean -f, branch -D, writes into .git/,\nhooks, the agents' own settings (.claude/, .codex/, .pi/) and the gate's config.",
  'policies.blast_radius.gate_pushes': "true: every git push is an ask for a human; false: plain pushes of the task's own branch are allowed.",
  'policies.spawn_bounds': 'spawn_bounds: how much the Brain may start at once.',
  'policies.spawn_bounds.max_dispatches_per_turn': 'At most this many worker dispatches in one Brain turn (1-100).',
  'policies.purpose_guard': 'purpose_guard: every dispatch carries a purpose from a closed set.',
  'policies.purpose_guard.allowed': 'Purposes a dispatch may carry (subset of implement, review, explore, search).',
  'policies.purpose_guard.read_only':
    'Purposes whose workers may not write anything (gate, sandbox and dispatch ask the same question). review, explore and search never write, listed or not; list implement to make implementers read-only too.',
  'policies.ask_timeout': 'ask_timeout: seconds an ask (the plan gate, a gated call) stays open; then it counts as a deny.',
  workers: 'Worker CLIs. Each runs in its own worktree .worktrees/<id> on branch polly/<id>.',
  'workers.claude-code': 'Claude Code (claude -p --output-format stream-json).',
  'workers.claude-code.command': 'The CLI to run: a name on PATH or an absolute path.',
  'workers.claude-code.model': 'Model passed to the CLI; null lets the CLI choose.',
  'workers.claude-code.allow_root_sandbox':
    'Claude Code refuses --permission-mode bypassPermissions as root unless IS_SANDBOX=1.\ntrue: you assert this machine is a sandbox and Polly sets IS_SANDBOX=1 for its workers;\nfalse: a worker started as root fails with a clear agent_refused error.',
  'workers.codex': 'Codex (codex exec --json --sandbox workspace-write).',
  'workers.codex.command': 'The CLI to run: a name on PATH or an absolute path.',
  'workers.codex.model': 'Model passed to the CLI; null lets the CLI choose.',
  'workers.codex.provider': 'null, or a custom model provider {id, base_url, env_key} (a Responses-API endpoint).',
  'workers.pi': 'pi (pi --mode json --no-extensions -e <gate extension>).',
  'workers.pi.command': 'The CLI to run: a name on PATH or an absolute path.',
  'workers.pi.model': 'Model passed to the CLI; null lets the CLI choose.',
  'workers.pi.provider': "Provider name in pi's models.json (e.g. anthropic); null for pi's default.",
  'workers.pi.base_url': "null, or a custom endpoint (e.g. http://127.0.0.1:8080/v1) written as a provider into the worker's own models.json.",
  'workers.pi.api': 'API of that endpoint: openai-completions, openai-responses or anthropic-messages.',
  'workers.pi.api_key_env': "Name of the environment variable holding that endpoint's API key (never the key itself).",
  'workers.allow_unconfined':
    "Every worker, acceptance and setup command runs in Polly's OS sandbox (Linux bubblewrap).\nfalse: where it cannot start, Polly refuses to dispatch and says how to fix it;\ntrue: workers run WITHOUT it (a warning at every dispatch, recorded on the task).",
  'workers.env_passthrough':
    'Names of more environment variables workers get from yours; by default only PATH, LANG, LC_*, TERM, TZ and the model variables (ANTHROPIC_*, OPENAI_*). Never put tokens here.',
  'workers.hosts':
    "Other machines that run implement turns over SSH (docs/hosts.md): a list of {name, ssh: user@host, port?, capacity?, harnesses?, dir?}.\nThe identity comes from your ssh config or agent, never a password here. [] (default): every turn runs on this machine.\nEach host runs the same Polly build (polly hosts install NAME) and Polly's sandbox; polly doctor checks each one.",
  'workers.ssh_config': 'null (your ~/.ssh/config), or an ssh_config(5) file Polly passes to ssh with -F for its hosts.',
  'workers.host_lease_seconds':
    "Seconds a host's turn lives without hearing from this machine (5-3600): the host stops its worker then, and a host\nthat dropped is given up (its task re-offered to another host as a new attempt) only after waiting this out.",
  'workers.local_fallback': 'With hosts: true lets a turn that no host can take run on this machine; false (default) waits for a host, never running it here silently.',
  'workers.tool_paths':
    "Host paths every sandbox shows read-only besides the system dirs, /etc's basics and the toolchains on PATH (docs/security.md#the-sandbox): e.g. a toolchain under /opt that is not on PATH, or a config under /etc it needs. Absolute; never a directory holding credentials.",
  'workers.limits':
    'Resource bounds of each sandbox (agent turns, acceptance and setup commands; docs/resource-bounds.md). One that is hit fails its own task, naming the bound. `polly doctor` says which mechanism holds each here (cgroup v2, cgroup v1, or rlimits).',
  'workers.limits.max_processes': 'Processes and threads alive at once in one sandbox (a fork bomb stops here). Not enforceable as root without a cgroup: polly doctor says so.',
  'workers.limits.memory_mib': "Memory of one sandbox, MiB (with a cgroup the sandbox's sum; with rlimits each process's data).",
  'workers.limits.tmp_mib': "Size of the sandbox's private /tmp (a tmpfs in RAM), MiB.",
  'workers.limits.file_size_mib': 'Largest file a sandboxed process may write, MiB (RLIMIT_FSIZE; e.g. a huge fallocate in the worktree).',
  'workers.limits.output_line_kib': "Longest line of an agent's output stream Polly reads, KiB; a longer one is stored cut, with a marker, and fails the turn.",
  'workers.limits.output_total_mib': "All of one agent turn's output stream, MiB; more fails the turn.",
  review: 'Cross-vendor review: a reviewer sees only the diff and the acceptance contract, and never edits.',
  'review.pairs': 'Implementer -> reviewers that may review it (never the same vendor).',
  'review.max_rounds': 'Rounds of blocking findings sent back to the implementer before the task fails (0-20).',
  acceptance: "Acceptance: Polly itself runs these commands in the worktree; the agent's claim is never trusted.",
  'acceptance.commands': 'Default commands for implement tasks whose plan names none; all must exit 0.',
  'acceptance.timeout': 'Seconds each acceptance command may run.',
  'acceptance.max_attempts': 'Worker attempts (the first plus fix rounds on red checks) before a task fails (1-20).',
  'acceptance.known_red':
    'Acceptance commands known to be red on the base: the base check before the first agent turn does not stop the task for them (it waits as base_red otherwise); after the agent they must still pass. Default [].',
  'acceptance.network':
    'true: acceptance commands reach the outside network (in their own network namespace behind pasta, never the loopback services of this machine); false: loopback only, inside the sandbox.',
  worktrees: 'Worktrees: files listed in .worktreeinclude are copied into each new worktree.',
  'worktrees.dir':
    'Where task worktrees go (<dir>/<task id>), relative to the repository root or absolute. .worktrees (inside, hidden from git)\nor a directory beside the repository, e.g. ../NAME.polly-worktrees, which no test runner or linter of the repository crawls.',
  'worktrees.setup': 'Command run in a new worktree after that copy (e.g. npm ci); null for none.',
  'worktrees.setup_network':
    'true: the setup command reaches the outside network (npm ci needs it; its own network namespace behind pasta, never the loopback services of this machine); false: loopback only.',
  'worktrees.protected_paths':
    "Paths (git globs, e.g. .github/workflows/**) a task's commit may change only when its plan task names them in protected_paths (shown at the plan gate, flagged in the PR): Polly's config, CI and automation, hook managers, CODEOWNERS and .worktreeinclude by default. An undeclared change commits nothing and goes back to the worker once.",
  forge: 'Where pull requests go. Polly opens draft PRs and marks them ready; it never merges.',
  'forge.kind': 'auto: GitHub when origin is a GitHub URL, otherwise the local forge (polly pr list|show|diff); or local, github.',
  'forge.github': 'GitHub settings (token from GITHUB_TOKEN or gh auth token; it is never printed).',
  'forge.github.base_url': 'API base URL for GitHub Enterprise (e.g. https://ghe.example.com/api/v3); null for github.com.',
  'forge.github.trusted_authors':
    'GitHub logins (accounts or apps) whose reviews and comments may steer a worker besides the accounts with write, maintain or admin permission on the repository (default none).',
  'forge.github.watch_seconds': 'seconds between two passes of the PR watcher (reviews, comments, checks, mergeability of each open PR; 1-3600, default 60).',
  intake:
    'Issues in (docs/issues-intake.md): an open issue that an account with write, maintain or admin permission\nlabels with label becomes a goal; its plan is posted on the issue and a maintainer answers /polly approve.',
  'intake.label': 'The label that takes an issue in (polly watch, polly goal --issue N takes one by hand).',
  'intake.in_brain': "true: the Brain's loop takes labelled issues in too, besides polly watch.",
  'intake.watch_seconds': 'Seconds between two intake passes of polly watch and of the Brain (1-3600).',
  brain: 'The Brain: the LLM session that plans and integrates and never writes business code.',
  'brain.model': "The Brain's own (Claude) model; null lets the SDK choose.",
  'brain.start_on_approve':
    'true: approving a plan while no Brain runs (in polly ui or with polly plan approve) starts one, as polly resume --detach does;\nfalse (default): the approval says that nothing runs until polly resume.',
  budgets:
    "Hard budgets, enforced by Polly's metering proxy (docs/metering.md): once one is spent the next model\nrequest is refused, the worker stopped, its work kept in a backup ref, its task parked (polly status says why).\nA plan may set its own (budgets), a plan task its own (budget).",
  'budgets.per_task':
    'null (no limit), or {usd: N, tokens: N} (either or both) for each task: all its turns, reviews included.\nusd: priced from prices (a model without a price cannot take a usd budget); tokens: input (cache included) plus output.',
  'budgets.per_goal': 'null (no limit), or {usd: N, tokens: N} for all tasks of a goal (of a polly run plan) together.',
  prices:
    "Prices by model id (as the API names it), USD per million tokens: {input, output, cache_read?, cache_write?}.\nPolly's metering proxy prices every model request with them (docs/metering.md); a model without one\nhas an unknown cost, and a usd budget for a worker on it is refused at the plan gate.",
  notifications:
    'Notifications when something needs you or closed: plan at the gate or refused, task parked or failed,\nPR ready, PR feedback, goal done, budget reached, the Brain stopped with work pending (noticed by polly ui\nor polly status). They never carry tokens.',
  'notifications.webhook_url': 'null, or a Slack-compatible incoming webhook URL ({text, blocks} is POSTed; 3 attempts).',
  'notifications.desktop': 'true: desktop notifications where available (notify-send on Linux, osascript on macOS; polly doctor says which).',
  'notifications.timeout_ms': 'Milliseconds one webhook attempt may take (100-120000).',
  'notifications.dashboard_url': 'null, or the URL of your polly ui (e.g. http://127.0.0.1:8080 with polly ui --port 8080): notifications then link to its pages.',
  pr: "A PR's life after ready: a human's change request or line comment, a failing check, or a conflict\nwith the moved base goes back to the SAME worker session as a fix round (Polly merges the base\nin, re-runs acceptance, has it re-reviewed, pushes plainly and replies on the PR).",
  'pr.max_fix_rounds': 'Fix rounds (each send-back to the worker after ready) before the task is parked for a human (0-10).',
  runs: 'Where the workflow runs live: lmdb (.polly/runs/, this machine) or postgres (a database several Polly processes share).',
  'runs.store': 'lmdb or postgres.',
  'runs.url_env': 'With postgres: the environment variable holding the connection URL (never write the URL here: it may carry a password).',
  'runs.schema': "With postgres: the schema holding Polly's tables (lower-case letters, digits, _), one per repository sharing the database.",
};

/** Every key path of the config spec (objects and leaves), for the comment table and tests. */
export function configKeyPaths(spec: Spec = CONFIG_SPEC, prefix = ''): string[] {
  if (spec.t !== 'object') return [];
  const out: string[] = [];
  for (const [k, sub] of Object.entries(spec.fields)) {
    const path = prefix ? `${prefix}.${k}` : k;
    out.push(path, ...configKeyPaths(sub, path));
  }
  return out;
}

interface Where {
  file: string;
  lc: LineCounter;
}

function invalid(where: Where, node: Node | Pair | null | undefined, path: string, problem: string, fallbackOffset = 0): PollyError {
  const range = node && 'range' in node && node.range ? node.range : null;
  const { line, col } = where.lc.linePos(range ? range[0] : fallbackOffset);
  const at = `${where.file}:${line}:${col}`;
  return new PollyError('config_invalid', `${at}: ${path || '(top level)'}: ${problem}. Fix the value (the defaults are in "polly init"'s commented file), then retry.`, {
    details: { file: where.file, line, column: col, path },
  });
}

function describeNode(node: Node | null): string {
  if (node === null) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) return JSON.stringify(node.value) ?? String(node.value);
  return 'an unsupported node';
}

function expectName(spec: Spec): string {
  switch (spec.t) {
    case 'object':
    case 'record':
    case 'map':
      return 'a mapping';
    case 'string':
      return spec.absolutePath ? 'an absolute path (starting with /)' : 'a string';
    case 'int':
      return spec.max === undefined ? `an integer >= ${spec.min}` : `an integer from ${spec.min} to ${spec.max}`;
    case 'number':
      return spec.min !== undefined ? `a number >= ${spec.min}` : `a number > ${spec.gt}`;
    case 'bool':
      return 'true or false';
    case 'enum':
      return `one of ${spec.values.join(', ')}`;
    case 'list':
      return `a list of ${expectName(spec.of).replace(/^an? /, '')}s`;
    case 'nullable':
      return `${expectName(spec.of)} or null`;
    case 'literal':
      return String(spec.value);
  }
}

/** Validate `node` against `spec`; returns the plain value. Throws config_invalid at the node. */
function check(node: Node | null, spec: Spec, path: string, where: Where, parent: Node | Pair | null): unknown {
  if (node !== null && isAlias(node)) throw invalid(where, node, path, 'YAML anchors and aliases are not supported in config.yaml');
  const wrong = (): PollyError => invalid(where, node ?? parent, path, `expected ${expectName(spec)}, found ${describeNode(node)}`);
  const scalar = node !== null && isScalar(node) ? (node as Scalar).value : undefined;
  const isNull = node === null || (isScalar(node) && scalar === null);
  switch (spec.t) {
    case 'nullable':
      return isNull ? null : check(node, spec.of, path, where, parent);
    case 'map': {
      if (node === null || !isMap(node)) throw wrong();
      const out: Record<string, unknown> = {};
      for (const pair of node.items) {
        const keyNode = pair.key as Node | null;
        const key = keyNode !== null && isScalar(keyNode) ? keyNode.value : undefined;
        if (typeof key !== 'string' || key === '') throw invalid(where, keyNode ?? node, path, `keys must be ${spec.keyName} (a plain string), found ${describeNode(keyNode)}`);
        out[key] = check(pair.value as Node | null, spec.of, `${path}.${key}`, where, keyNode);
      }
      return out;
    }
    case 'object':
    case 'record': {
      if (node === null || !isMap(node)) throw wrong();
      const out: Record<string, unknown> = {};
      for (const pair of node.items) {
        const keyNode = pair.key as Node | null;
        const key = keyNode !== null && isScalar(keyNode) ? keyNode.value : undefined;
        if (typeof key !== 'string') throw invalid(where, keyNode ?? node, path, `keys must be plain strings, found ${describeNode(keyNode)}`);
        const keyPath = path ? `${path}.${key}` : key;
        const allowed = spec.t === 'object' ? Object.keys(spec.fields) : spec.keys;
        if (!allowed.includes(key)) {
          throw invalid(where, keyNode, keyPath, `unknown key ${JSON.stringify(key)} (accepted here: ${allowed.join(', ')})`);
        }
        const sub = spec.t === 'object' ? spec.fields[key]! : spec.of;
        out[key] = check(pair.value as Node | null, sub, keyPath, where, keyNode);
      }
      if (spec.t === 'object' && spec.complete) {
        const missing = Object.keys(spec.fields).filter((k) => !(k in out));
        if (missing.length > 0)
          throw invalid(where, node, path, `missing ${missing.map((m) => JSON.stringify(m)).join(', ')} (all of ${Object.keys(spec.fields).join(', ')} are required)`);
      }
      return out;
    }
    case 'list': {
      if (node === null || !isSeq(node)) throw wrong();
      return node.items.map((item, i) => check(item as Node | null, spec.of, `${path}[${i}]`, where, node));
    }
    case 'string':
      if (typeof scalar !== 'string' || (spec.absolutePath && !scalar.startsWith('/'))) throw wrong();
      return scalar;
    case 'bool':
      if (typeof scalar !== 'boolean') throw wrong();
      return scalar;
    case 'int':
      if (typeof scalar !== 'number' || !Number.isInteger(scalar) || scalar < spec.min || (spec.max !== undefined && scalar > spec.max)) throw wrong();
      return scalar;
    case 'number':
      if (typeof scalar !== 'number' || !Number.isFinite(scalar) || (spec.min !== undefined ? scalar < spec.min : scalar <= spec.gt)) throw wrong();
      return scalar;
    case 'enum':
      if (typeof scalar !== 'string' || !spec.values.includes(scalar)) throw wrong();
      return scalar;
    case 'literal':
      if (scalar !== spec.value) throw wrong();
      return scalar;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep-merge a validated file value over the defaults: objects merge, lists and scalars replace. */
function mergeOver(base: unknown, over: unknown): unknown {
  if (isPlainObject(base) && isPlainObject(over)) {
    const out: Record<string, unknown> = { ...base };
    for (const [k, v] of Object.entries(over)) out[k] = mergeOver(base[k], v);
    return out;
  }
  return structuredClone(over);
}

/**
 * Parse, validate and merge config text over {@link DEFAULT_CONFIG}.
 *
 * @param text  YAML text; empty or comment-only text gives the defaults.
 * @param file  the path shown in messages.
 * @throws PollyError `config_invalid` with `file:line:column`, the key path and the accepted values.
 */
export function parseConfig(text: string, file: string): PollyConfig {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  const where: Where = { file, lc };
  const first = doc.errors[0];
  if (first) {
    const { line, col } = lc.linePos(first.pos[0]);
    throw new PollyError('config_invalid', `${file}:${line}:${col}: not valid YAML: ${first.message.split('\n')[0]}. Fix the syntax, then retry.`, {
      cause: first,
      details: { file, line, column: col },
    });
  }
  const contents = doc.contents as Node | null;
  if (contents === null || (isScalar(contents) && contents.value === null)) return structuredClone(DEFAULT_CONFIG);
  const value = check(contents, CONFIG_SPEC, '', where, null) as Record<string, unknown>;
  const merged = mergeOver(DEFAULT_CONFIG, value) as PollyConfig;
  // Cross-field rules.
  for (const [impl, reviewers] of Object.entries(merged.review.pairs)) {
    if (reviewers.includes(impl as (typeof HARNESSES)[number])) {
      const node = doc.getIn(['review', 'pairs', impl], true) as Node | undefined;
      throw invalid(where, node ?? contents, `review.pairs.${impl}`, `a worker may not review its own vendor's work (${impl} lists ${impl})`);
    }
  }
  const notAllowed = merged.policies.purpose_guard.read_only.filter((p) => !merged.policies.purpose_guard.allowed.includes(p));
  if (notAllowed.length > 0) {
    const node = doc.getIn(['policies', 'purpose_guard', 'read_only'], true) as Node | undefined;
    throw invalid(where, node ?? contents, 'policies.purpose_guard.read_only', `${notAllowed.join(', ')} is not in policies.purpose_guard.allowed`);
  }
  for (const key of ['per_task', 'per_goal'] as const) {
    const b = merged.budgets[key];
    if (b && (b.usd ?? null) === null && (b.tokens ?? null) === null) {
      const node = doc.getIn(['budgets', key], true) as Node | undefined;
      throw invalid(where, node ?? contents, `budgets.${key}`, 'a budget needs usd, tokens or both (write null for no limit)');
    }
  }
  const missingHostKey = (merged.workers.hosts ?? []).findIndex((h) => !h.name || !h.ssh);
  if (missingHostKey >= 0) {
    const node = doc.getIn(['workers', 'hosts', missingHostKey], true) as Node | undefined;
    throw invalid(where, node ?? contents, `workers.hosts[${missingHostKey}]`, 'a host needs name and ssh (its SSH destination, user@host)');
  }
  const hostProblem = hostConfigProblems(merged.workers.hosts ?? [])[0];
  if (hostProblem) {
    const node = doc.getIn(['workers', 'hosts', hostProblem.index, hostProblem.key], true) as Node | undefined;
    throw invalid(where, node ?? contents, `workers.hosts[${hostProblem.index}].${hostProblem.key}`, hostProblem.problem);
  }
  for (const harness of HARNESSES) {
    const command = merged.workers[harness].command;
    // A relative path would run from the worker runner's own directory, which differs between a
    // warm runner and a cold one: two tasks of one plan would start different programs, or none.
    if (command.includes('/') && !isAbsolute(command)) {
      const node = doc.getIn(['workers', harness, 'command'], true) as Node | undefined;
      const suggestion = resolve(dirname(dirname(resolve(file))), command);
      throw invalid(
        where,
        node ?? contents,
        `workers.${harness}.command`,
        `${JSON.stringify(command)} is a relative path; use a name on PATH or an absolute path (from the repository root that is ${JSON.stringify(suggestion)})`,
      );
    }
  }
  const dash = merged.notifications.dashboard_url;
  if (dash !== null && !/^https?:\/\/[^\s]+$/.test(dash)) {
    const node = doc.getIn(['notifications', 'dashboard_url'], true) as Node | undefined;
    throw invalid(where, node ?? contents, 'notifications.dashboard_url', `expected an http(s) URL such as http://127.0.0.1:8080, found ${JSON.stringify(dash)}`);
  }
  const url = merged.notifications.webhook_url;
  if (url !== null && !/^https?:\/\/[^\s]+$/.test(url)) {
    const node = doc.getIn(['notifications', 'webhook_url'], true) as Node | undefined;
    throw invalid(where, node ?? contents, 'notifications.webhook_url', 'expected an http(s) URL (the value is not shown: a webhook URL holds its secret)');
  }
  return merged;
}

/**
 * Load `<repoRoot>/.polly/config.yaml` merged over {@link DEFAULT_CONFIG}; a missing file gives
 * the defaults.
 * @throws PollyError `config_invalid` (see {@link parseConfig}).
 */
export async function loadConfig(repoRoot: string): Promise<PollyConfig> {
  const file = join(repoRoot, CONFIG_RELATIVE_PATH);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return structuredClone(DEFAULT_CONFIG);
    throw new PollyError('config_invalid', `${file}: cannot be read (${(error as Error).message}). Check its permissions.`, { cause: error, details: { file } });
  }
  return parseConfig(text, file);
}

/** Attach {@link CONFIG_COMMENTS} to every key of a map node, recursively. */
function comment(node: unknown, prefix: string): void {
  if (!isMap(node)) return;
  for (const [i, pair] of node.items.entries()) {
    const key = pair.key as Scalar;
    const path = prefix ? `${prefix}.${String(key.value)}` : String(key.value);
    const text = CONFIG_COMMENTS[path];
    if (text)
      key.commentBefore = text
        .split('\n')
        .map((l) => ` ${l}`)
        .join('\n');
    if (prefix === '' && i > 0) key.spaceBefore = true; // a blank line between top-level sections
    comment(pair.value, path);
  }
}

/** What `polly init` fills in beyond the defaults (from {@link detectProject} and the install). */
export interface RenderConfigOptions {
  /** `acceptance.commands` to write instead of the default. */
  acceptanceCommands?: string[];
  /** `worktrees.setup` to write instead of the default (null for none). */
  setup?: string | null;
  /** `worktrees.setup_network` to write instead of the default (an installing setup needs the network). */
  setupNetwork?: boolean;
  /**
   * Where the config's JSON Schema is (a path relative to the config file, an absolute path or a
   * URL): written as the first line, `# yaml-language-server: $schema=<ref>`, the inline form the
   * YAML language server reads (https://github.com/redhat-developer/yaml-language-server#using-inlined-schema).
   */
  schemaRef?: string;
  /** Where the schema comes from: a comment line under the `$schema` line. */
  schemaNote?: string;
}

/**
 * The commented default `.polly/config.yaml` written by `polly init`: every key of
 * {@link DEFAULT_CONFIG} with its default value (or the detected commands in `options`) and a
 * comment explaining it. Parsing it gives exactly DEFAULT_CONFIG with those overrides.
 */
export function renderDefaultConfig(options: RenderConfigOptions = {}): string {
  const value = structuredClone(DEFAULT_CONFIG);
  if (options.acceptanceCommands) value.acceptance.commands = [...options.acceptanceCommands];
  if (options.setup !== undefined) value.worktrees.setup = options.setup;
  if (options.setupNetwork !== undefined) value.worktrees.setup_network = options.setupNetwork;
  const doc = new Document(value);
  doc.commentBefore = [
    ' Polly configuration (written by "polly init"; edit freely, then run "polly status").',
    ' Missing keys take the defaults shown here; unknown keys and wrong types are errors.',
    ' Polly never merges: the gate denies any merge, and the forge has no merge method.',
  ].join('\n');
  comment(doc.contents, '');
  const text = doc.toString({ lineWidth: 0 });
  const note = options.schemaNote ? `# (${options.schemaNote})\n` : '';
  return options.schemaRef ? `# yaml-language-server: $schema=${options.schemaRef}\n${note}${text}` : text;
}
