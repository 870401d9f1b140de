/**
 * The git shim's fast path: the read-only git calls the agent CLIs make when they start, decided
 * once when the gate is prepared instead of once per call.
 *
 * Every call through the Node shim costs a Node start (measured on the 2-core test machine: 0.46-0.7 s
 * a call at load 5-13, against 0.10-0.14 s for this fast path and 0.04 s for git alone), and a
 * Claude Code or Codex start makes 3-10 of them before its first model request, some one after another.
 * `decide` is a pure function of (request, policy, context) (gate/decide.ts), and a shim request is
 * fixed by its argv and cwd (`{tool: 'bash', input: shimCommandText(argv), cwd, harness: 'shim',
 * role}`). So for a listed argv run with the worktree as its physical cwd, the decision at prepare
 * time IS the decision the Node shim would take: `prepareGate` asks `decide` for each, and the
 * shell shim runs only the allowed ones directly (same argv, same environment, the real git found
 * the way the Node shim finds it), after appending the same journal line (its time from `date` by
 * absolute path, checked to be a time: the worker's PATH cannot write into the line). Anything else — another
 * spelling, one more argument, `-c`/`-C`/`--exec-path` not in the list, another cwd, a cwd that is
 * not plain characters, a journal that cannot be written — goes to the Node shim as before.
 *
 * A worker's gate (a config with a `socket`: the runner decides and journals, gate/hooks/gate-server.ts)
 * has no journal the sandbox could write, and sh cannot reach a unix socket cheaply: there the fast
 * path runs these listed, pre-decided, read-only start-up calls WITHOUT logging them. Every other
 * call, and every denial, is decided and logged by the runner.
 */
import { realpathSync } from 'node:fs';
import { decide } from '../decide.js';
import { decisionEntry } from '../decision-log.js';
import type { GateContext, GatePolicy, GateRole, ToolRequest } from '../types.js';

/** In {@link SHIM_FAST_PATH_ARGV}: the word is the worktree's physical path (the call's cwd). */
export const SHIM_CWD = '\u0000cwd';

/**
 * The start-up git calls, each an exact argv after `git`. Seen in `.polly/gate-decisions.jsonl`
 * of runs with Claude Code 2.1.197 (`--no-optional-locks …`, `config user.name`, the
 * `-c core.hooksPath=/dev/null -c core.fsmonitor=false -c diff.ignoreSubmodules=dirty …` ones) and
 * Codex 0.171.0 (the `-c safe.bareRepository=explicit …` ones). Each sets no config that runs a
 * program and names no path but the cwd itself ({@link SHIM_CWD}); `decide` still judges every one
 * of them for the worker's role.
 */
export const SHIM_FAST_PATH_ARGV: readonly (readonly string[])[] = [
  ['--no-optional-locks', 'status', '--short'],
  // Claude Code's check that its local settings are not tracked, with -C naming the cwd itself
  ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=', '-C', SHIM_CWD, 'ls-files', '--error-unmatch', '--', ':(icase).claude/settings.local.json'],
  ['--no-optional-locks', 'log', '--oneline', '-n', '5'],
  ['config', 'user.name'],
  ['config', '--get', 'remote.origin.url'],
  ...[
    ['rev-parse', '--show-toplevel'],
    ['rev-parse', '--show-toplevel', '--git-common-dir'],
    ['rev-parse', '--path-format=absolute', '--git-common-dir'],
    ['symbolic-ref', '--short', '-q', 'HEAD'],
    ['symbolic-ref', '--short', '-q', 'refs/remotes/origin/HEAD'],
  ].map((a) => ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'diff.ignoreSubmodules=dirty', ...a]),
  ['-c', 'safe.bareRepository=explicit', 'config', '--null', '--get', 'core.fsmonitor'],
  ...[
    ['rev-parse', '--git-dir'],
    ['rev-parse', 'HEAD'],
    ['rev-parse', '--abbrev-ref', 'HEAD'],
    ['rev-parse', '--verify', '--quiet', 'HEAD'],
    ['remote', 'get-url', 'origin'],
    ['config', '--null', '--get-regexp', '^(remote\\.|url\\.)'],
    ['status', '--porcelain=v2', '--branch', '--no-ahead-behind', '--ignore-submodules=dirty'],
  ].map((a) => ['-c', 'safe.bareRepository=explicit', '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', ...a]),
];

/** A word as the shim shows it to the gate: bare when plain, else single-quoted for sh. */
function quoteWord(w: string): string {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/** The bash command text the shim decides for `prog args…` (each word quoted so the gate sees exactly this argv). */
export function shimCommandText(prog: string, args: readonly string[]): string {
  return [prog, ...args].map(quoteWord).join(' ');
}

function sq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** What the fast path needs from `prepareGate`. */
export interface ShimFastPathOptions {
  role: GateRole;
  policy: GatePolicy;
  context: GateContext;
  /** The decision log (`GateRuntimeConfig.journalPath`), or null to log nowhere. */
  journalPath: string | null;
  /** The real git (absolute path, found as the Node shim finds it), or null: no fast path. */
  realGit: string | null;
  /** `date` (absolute path, for the journal line's time), or null: no fast path when journaling. */
  realDate: string | null;
}

/**
 * The sh lines a git shim runs before handing over to the Node shim: for each argv of
 * {@link SHIM_FAST_PATH_ARGV} that `decide` allows in this worker's worktree, a match on the exact
 * argv and the physical cwd that journals the decision (one `{at, kind, data}` line appended with
 * `>>`, mode 0600 when created, as `createFileJournal` writes it) and `exec`s the real git.
 * Returns '' when nothing qualifies (no real git, a worktree that does not exist or whose path is
 * not plain characters, or no argv allowed).
 */
export function shimFastPath(options: ShimFastPathOptions): string {
  const { realGit, realDate, journalPath } = options;
  let cwd: string;
  try {
    cwd = realpathSync(options.context.worktree);
  } catch {
    return '';
  }
  // The cwd and paths are compared and embedded as plain words only.
  const plain = /^\/[\w@%+=:,./-]*$/;
  if (!realGit || !plain.test(realGit) || !plain.test(cwd)) return '';
  if (journalPath !== null && (!plain.test(journalPath) || !realDate || !plain.test(realDate))) return '';
  const cases: string[] = [];
  for (const listed of SHIM_FAST_PATH_ARGV) {
    const argv = listed.map((w) => (w === SHIM_CWD ? cwd : w));
    const request: ToolRequest = { type: 'tool', role: options.role, tool: 'bash', input: shimCommandText('git', argv), cwd, harness: 'shim' };
    const d = decide(request, options.policy, options.context);
    if (d.decision !== 'allow') continue;
    const match = [`[ $# -eq ${argv.length} ]`, ...argv.map((w, i) => `[ "\${${i + 1}}" = ${sq(w)} ]`)].join(' && ');
    cases.push(`  if ${match} && polly_log ${sq(JSON.stringify(decisionEntry(request, d)))}; then exec ${realGit} "$@"; fi`);
  }
  if (cases.length === 0) return '';
  // The journal line as createFileJournal writes it; its time from `date` (ms where it has %N),
  // checked to be a time before it goes into the line.
  const day = '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]';
  const log =
    journalPath === null
      ? '  polly_log() { :; }'
      : [
          '  polly_log() {',
          `    polly_at=$(${realDate} -u +%Y-%m-%dT%H:%M:%S.%3NZ) || return 1`,
          `    case $polly_at in *N*) polly_at=$(${realDate} -u +%Y-%m-%dT%H:%M:%SZ) || return 1 ;; esac`,
          `    case $polly_at in ${day}Z | ${day}.[0-9][0-9][0-9]Z) ;; *) return 1 ;; esac`,
          `    (umask 077 && printf '%s\\n' "{\\"at\\":\\"$polly_at\\",\\"kind\\":\\"gate.decision\\",\\"data\\":$1}" >>${journalPath}) 2>/dev/null`,
          '  }',
        ].join('\n');
  const ready = [`[ -x ${realGit} ]`, ...(journalPath === null ? [] : [`[ -x ${realDate} ]`]), `[ "$(pwd -P)" = ${sq(cwd)} ]`].join(' && ');
  return `# Fast path: read-only start-up calls the gate allowed for this worktree when it was prepared (gate/hooks/shim-fast-path.ts).\nif ${ready}; then\n${log}\n${cases.join('\n')}\nfi\n`;
}
