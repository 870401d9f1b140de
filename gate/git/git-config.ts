/**
 * git configuration as the gate sees it: the keys whose values run programs, load other config or
 * redirect pushes (git-scm.com/docs/git-config, "Variables"), and `git config` itself (read forms,
 * write forms, scopes). Pure; reports to an Analyzer.
 */
import { resolvePath } from '../paths.js';
import type { Analyzer } from '../types.js';
import { deny } from './git-refs.js';

/** Config keys whose values run programs, load other config, or redirect pushes: never set by an agent. */
const DANGEROUS_CONFIG: RegExp[] = [
  /^core\.(hookspath|sshcommand|fsmonitor|pager|editor|askpass|gitproxy|worktree|alternaterefscommand)$/,
  /^(include|includeif)\./,
  /^credential\./,
  /^diff\.external$/,
  /^(diff|merge|filter)\..*\.(command|textconv|driver|clean|smudge|process|cmd)$/,
  /^(sequence\.editor|gpg\.program|gpg\..*\.program|uploadpack\.packobjectshook|clean\.requireforce|receive\.denycurrentbranch)$/,
  /^remote\..*\.(receivepack|uploadpack|push|mirror|vcs)$/,
  /^(push|protocol)\./,
  /^branch\..*\.(pushremote|merge)$/,
  /^url\..*\.(insteadof|pushinsteadof)$/,
  /^alias\./,
];

/** The lower-cased section and key of a config name (the subsection keeps its case). */
export function configKey(name: string): string {
  const first = name.indexOf('.');
  const last = name.lastIndexOf('.');
  if (first < 0) return name.toLowerCase();
  return `${name.slice(0, first).toLowerCase()}${name.slice(first, last)}${name.slice(last).toLowerCase()}`;
}

/** True when setting `name` changes what git runs, what config it loads, or where it pushes. */
export function dangerousConfig(name: string): boolean {
  const lower = configKey(name).toLowerCase();
  return DANGEROUS_CONFIG.some((re) => re.test(lower));
}

/** Programs that do nothing with the file they are given (an editor that accepts the message as is, a pager that prints). */
const NO_OP_EDITORS = new Set(['true', ':', 'cat']);
const NO_OP_PAGERS = new Set(['', 'cat', 'less', 'more', 'less -R', 'less -FRX']);

/**
 * True when a program-running setting names a program that does nothing harmful: `core.editor` or
 * `sequence.editor` set to `true`/`:`/`cat` (the usual way to continue a rebase or amend without an
 * editor), `core.pager`/`pager.<cmd>` set to `cat` or `less`. Such settings are allowed with any
 * subcommand.
 */
export function noOpProgramSetting(name: string, value: string): boolean {
  const k = configKey(name).toLowerCase();
  const v = value.trim();
  if (k === 'core.editor' || k === 'sequence.editor') return NO_OP_EDITORS.has(v);
  if (k === 'core.pager' || /^pager\./.test(k)) return NO_OP_PAGERS.has(v);
  return false;
}

const CONFIG_READ = new Set([
  '--get',
  '--get-all',
  '--get-regexp',
  '--get-urlmatch',
  '--list',
  '-l',
  '--get-color',
  '--get-colorbool',
  '--show-origin',
  '--show-scope',
  '--name-only',
]);

/** `git config …`: reads are free; writes of dangerous keys are denied; other writes are changes (and file writes for --global/--system/--file). */
export function analyzeConfig(args: string[], cwd: string | null, a: Analyzer): void {
  const positionals: string[] = [];
  let read = false;
  let write = false;
  let file: string | null = null;
  let scope: 'local' | 'global' | 'system' = 'local';
  for (let i = 0; i < args.length; i++) {
    const x = args[i] as string;
    if (CONFIG_READ.has(x)) read = true;
    else if (x === '--global') scope = 'global';
    else if (x === '--system') scope = 'system';
    else if (x === '-f' || x === '--file') file = args[++i] ?? '';
    else if (x.startsWith('--file=')) file = x.slice(7);
    else if (x === '--edit' || x === '-e') {
      deny(a, 'blast_radius.git_config', 'git config --edit changes configuration in an editor the gate cannot see');
      return;
    } else if (['--add', '--replace-all', '--unset', '--unset-all', '--rename-section', '--remove-section'].includes(x)) write = true;
    else if (['--type', '--default', '--comment', '--blob'].includes(x)) i += 1;
    else if (!x.startsWith('-')) positionals.push(x);
  }
  let key: string | undefined;
  if (['get', 'list', 'get-color', 'get-colorbool'].includes(positionals[0] ?? '')) return;
  if (['set', 'unset', 'rename-section', 'remove-section', 'edit'].includes(positionals[0] ?? '')) {
    if (positionals[0] === 'edit') {
      deny(a, 'blast_radius.git_config', 'git config edit changes configuration in an editor the gate cannot see');
      return;
    }
    write = true;
    key = positionals[1];
  } else {
    key = positionals[0];
    if (positionals.length >= 2) write = true;
    if (read || (!write && positionals.length <= 1)) return;
  }
  if (key !== undefined && dangerousConfig(key)) {
    deny(a, 'blast_radius.git_config', `git config ${key} changes what git runs or where it pushes (hooks, aliases, programs, push refspecs); not allowed`);
    return;
  }
  if (file !== null) a.write(file, resolvePath(file, cwd, a.context.home), cwd);
  else if (scope === 'global') a.write('~/.gitconfig', `${a.context.home}/.gitconfig`);
  else if (scope === 'system') a.write('/etc/gitconfig', '/etc/gitconfig');
  a.mutate('git config');
}
