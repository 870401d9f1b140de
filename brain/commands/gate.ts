/**
 * `polly gate decide` and `polly gate log`.
 *
 * decide: JSON lines on stdin, each `{role, tool, input, cwd?, context?, harness?}` (a tool call)
 * or a full request `{type: 'dispatch'|'tool'|'forge', …}`; one JSON line `{decision, rule, reason}`
 * on stdout per request, in order. A line that is not a valid request is answered with a deny
 * (`rule: internal_error`) — fail closed, and the answers stay aligned with the input lines.
 * Context fields (camelCase or the corpus's snake_case) default from the cwd's repository:
 * repo root and worktree from git, the current branch, the default branch from
 * `refs/remotes/origin/HEAD` (else `main`), and the user's home. Policies come from
 * `.polly/config.yaml` (brain/config.ts `loadConfig`), else DEFAULT_CONFIG.
 * Every decision is appended to `.polly/gate-decisions.jsonl` when `.polly/` exists (workers'
 * decisions are appended there by their runners: docs/gate-decisions.md).
 *
 * log: the journaled decisions (that file plus `gate.decision` entries of `.polly/journal.jsonl`),
 * oldest first; `--json` prints them as one JSON array; `--limit N` keeps the last N.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseCommandArgs } from './args.js';
import type { Command, CommandIO } from './command.js';
import { DEFAULT_CONFIG, type Policies } from '../config/config-schema.js';
import { PollyError } from '../core/errors.js';
import { decide } from '../../gate/decide.js';
import { GATE_DECISIONS_FILE, createFileJournal, decisionEntry, redact, type GateJournal } from '../../gate/decision-log.js';
import type { GateContext, GateDecision, GateRequest } from '../../gate/types.js';
import { readRepoBranchContext } from '../../workers/git/repo.js';

const USAGE = `Usage:
  polly gate decide [--no-journal]   read JSON lines {role, tool, input, cwd?, context?} on stdin,
                                     print one JSON line {decision, rule, reason} per request
  polly gate log [--json] [--limit N]  show journaled gate decisions (.polly/gate-decisions.jsonl
                                     and gate.decision entries of .polly/journal.jsonl)

tool: bash | write | edit | read; input: the command line (bash) or the path.
role: brain | implement | review | explore | search.
Context fields default from the current repository (repoRoot, worktree, branch, defaultBranch, home).`;

/** The repository context of `cwd` (only `home` when not in a repo), by the one rule of `readRepoBranchContext`. */
function repoDefaults(cwd: string, env: NodeJS.ProcessEnv): Partial<GateContext> {
  const where = readRepoBranchContext(cwd, env);
  return where ? { ...where, home: env.HOME ?? homedir() } : { home: env.HOME ?? homedir() };
}

function pick(obj: Record<string, unknown> | undefined, camel: string, snake: string): string | undefined {
  const v = obj?.[camel] ?? obj?.[snake];
  return typeof v === 'string' ? v : undefined;
}

async function loadPolicies(repoRoot: string | undefined): Promise<Policies> {
  if (!repoRoot) return DEFAULT_CONFIG.policies;
  const { loadConfig } = await import('../config/config.js');
  return (await loadConfig(repoRoot)).policies;
}

async function runDecide(argv: string[], io: CommandIO): Promise<number> {
  const { values } = parseCommandArgs('gate decide', argv, { 'no-journal': { type: 'boolean' }, json: { type: 'boolean' } }, 0);
  const defaults = repoDefaults(io.cwd, io.env);
  const policies = await loadPolicies(defaults.repoRoot);
  const journal: GateJournal | null =
    !values['no-journal'] && defaults.repoRoot && existsSync(join(defaults.repoRoot, '.polly')) ? createFileJournal(join(defaults.repoRoot, GATE_DECISIONS_FILE)) : null;
  const lines = createInterface({ input: io.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  let n = 0;
  for await (const line of lines) {
    n += 1;
    if (line.trim() === '') continue;
    let d: GateDecision;
    let request: GateRequest | null = null;
    try {
      const raw = JSON.parse(line) as Record<string, unknown>;
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('not a JSON object');
      const c = (raw.context ?? {}) as Record<string, unknown>;
      const context: GateContext = {
        repoRoot: pick(c, 'repoRoot', 'repo_root') ?? defaults.repoRoot ?? '',
        worktree: pick(c, 'worktree', 'worktree') ?? pick(c, 'repoRoot', 'repo_root') ?? defaults.worktree ?? '',
        branch: pick(c, 'branch', 'branch') ?? defaults.branch ?? '',
        defaultBranch: pick(c, 'defaultBranch', 'default_branch') ?? defaults.defaultBranch ?? '',
        home: pick(c, 'home', 'home') ?? defaults.home ?? '',
      };
      const cwd = typeof raw.cwd === 'string' ? resolve(io.cwd, raw.cwd) : (pick(c, 'cwd', 'cwd') ?? io.cwd);
      request =
        typeof raw.type === 'string'
          ? ({ cwd, ...raw } as unknown as GateRequest)
          : ({ type: 'tool', harness: 'cli', role: raw.role, tool: raw.tool, input: raw.input, cwd } as GateRequest);
      d = decide(request, policies, context);
    } catch (error) {
      d = { decision: 'deny', rule: 'internal_error', reason: `stdin line ${n}: ${(error as Error).message}; expected {"role","tool","input"} as JSON` };
    }
    if (journal && request) journal.appendJournal('gate.decision', decisionEntry(request, d, { harness: 'cli' }));
    io.stdout.write(`${JSON.stringify(d)}\n`);
  }
  return 0;
}

interface LogEntry {
  at: string;
  kind: string;
  data: Record<string, unknown>;
  seq?: number | null;
}

function readLines(path: string, onlyGate: boolean): LogEntry[] {
  if (!existsSync(path)) return [];
  const out: LogEntry[] = [];
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        const e = JSON.parse(line) as LogEntry;
        if (e.kind === 'gate.decision' || !onlyGate) out.push(e);
      } catch {
        throw new PollyError('registry_corrupt', `${path}:${i + 1}: not a JSON line. Move the file aside (it is an append-only log) and rerun.`, {
          details: { file: path, line: i + 1 },
        });
      }
    });
  return out.filter((e) => e.kind === 'gate.decision');
}

async function runLog(argv: string[], io: CommandIO): Promise<number> {
  const { values } = parseCommandArgs('gate log', argv, { json: { type: 'boolean' }, limit: { type: 'string' } }, 0);
  const defaults = repoDefaults(io.cwd, io.env);
  if (!defaults.repoRoot) throw new PollyError('not_a_git_repo', `${io.cwd} is not inside a git repository. Run "polly gate log" in the repository whose decisions you want.`);
  const limit = values.limit === undefined ? null : Number(values.limit);
  if (limit !== null && (!Number.isInteger(limit) || limit < 0))
    throw new PollyError('bad_input', `polly gate log: --limit ${JSON.stringify(values.limit)} is not a non-negative integer.`, { details: { flag: '--limit' } });
  const entries = [...readLines(join(defaults.repoRoot, GATE_DECISIONS_FILE), true), ...readLines(join(defaults.repoRoot, '.polly', 'journal.jsonl'), true)]
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    .slice(limit === null ? 0 : limit === 0 ? Number.POSITIVE_INFINITY : -limit);
  if (values.json) {
    io.stdout.write(`${JSON.stringify(entries)}\n`);
    return 0;
  }
  if (entries.length === 0) {
    io.stderr.write('no gate decisions journaled yet\n');
    return 0;
  }
  for (const e of entries) {
    const d = e.data;
    // `task`: stamped by the worker runner (the task whose gate socket the request came in on)
    const who = [d.task, d.harness, d.role, d.tool ?? d.type].filter((x) => x !== undefined && x !== null).join('/');
    const what = String(d.input ?? d.purpose ?? d.operation ?? '')
      .replace(/\s+/g, ' ')
      .slice(0, 80);
    io.stdout.write(`${e.at}  ${String(d.decision).padEnd(5)}  ${String(d.rule).padEnd(36)}  ${who.padEnd(24)}  ${redact(what)}\n`);
  }
  return 0;
}

export const command: Command = {
  summary: 'decide tool calls with the gate; show the decision log',
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub === 'decide') return runDecide(rest, io);
    if (sub === 'log') return runLog(rest, io);
    throw new PollyError('bad_input', `polly gate: unknown subcommand ${JSON.stringify(sub ?? '')}. Use "polly gate decide" or "polly gate log".`, {
      details: { argument: sub ?? null },
    });
  },
};
