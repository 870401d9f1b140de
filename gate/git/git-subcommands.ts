/**
 * What each git subcommand does, as a table: subcommand → a small detector that reads the argv
 * through the shared option parser (git-options.ts, flag tables in git-flag-specs.ts) and reports
 * denials, writes and changes. Read-only subcommands change nothing. Sources: git-scm.com/docs/git-<subcommand>
 * (git 2.4x). Pure; reports to an Analyzer.
 */
import { UNKNOWN, resolvePath } from '../paths.js';
import type { Analyzer } from '../types.js';
import { analyzeConfig } from './git-config.js';
import { BRANCH, CHECKOUT, CLEAN, CLONE, REBASE, RESET, SWITCH, SYMBOLIC_REF, UPDATE_REF, WORKTREE_ADD } from './git-flag-specs.js';
import { has, parseArgs, values } from './git-options.js';
import { analyzePush } from './git-push.js';
import { deny, denyDefault, namesDefaultBranch } from './git-refs.js';

/** What the git global options established before the subcommand. */
export interface GitState {
  cwd: string | null;
  /** `--git-dir` / `--work-tree` as resolved (null inside: given but unresolvable); undefined when not given. */
  gitDir?: string | null;
  workTree?: string | null;
  configs: Map<string, string>;
  /** Dangerous `-c` settings seen (decided once the subcommand is known). */
  risky?: Array<{ name: string; value: string }>;
  /** Nesting depth of the analysis (scripts git runs are analysed one level deeper). */
  depth?: number;
}

/** A subcommand's detector: `args` are the words after the subcommand. */
type Detector = (args: string[], st: GitState, a: Analyzer, sub: string) => void;

/** Subcommands that only read (their `--output=<file>` is still a write). */
export const READ_ONLY = new Set(
  (
    'status diff log show blame annotate grep ls-files ls-tree ls-remote rev-parse rev-list describe cat-file shortlog show-ref for-each-ref ' +
    'merge-base name-rev whatchanged count-objects var version help check-ignore check-attr check-ref-format check-mailmap diff-tree ' +
    'diff-index diff-files show-branch range-diff cherry verify-commit verify-tag get-tar-commit-id column stripspace patch-id show-index fsck'
  ).split(' '),
);

/** Subcommands that take a program to run on the other side (`--upload-pack`, `--receive-pack`, `--exec`). */
const REMOTE_PROGRAM = new Set(['fetch', 'pull', 'clone', 'ls-remote', 'push', 'send-pack', 'fetch-pack', 'archive', 'remote', 'submodule']);

/** The remote-program option an argument spells (by git's unique-prefix rule), or null. */
function remoteProgramOption(sub: string, arg: string): string | null {
  if (sub === 'clone' && /^-[a-zA-Z]*u/.test(arg) && !arg.startsWith('--')) return '-u';
  if (!arg.startsWith('--')) return null;
  const name = arg.slice(2).split('=')[0] as string;
  if (name.length >= 3 && name.startsWith('upl') && 'upload-pack'.startsWith(name)) return '--upload-pack';
  if (name.length >= 4 && name.startsWith('rece') && 'receive-pack'.startsWith(name)) return '--receive-pack';
  if (name.length >= 1 && 'exec'.startsWith(name) && ['push', 'send-pack', 'fetch-pack', 'archive'].includes(sub)) return '--exec';
  return null;
}

/** Detector: a remote-program option (git runs that program locally for path and ssh remotes). */
function detectRemoteProgram(sub: string, args: string[], a: Analyzer): boolean {
  if (!REMOTE_PROGRAM.has(sub)) return false;
  for (const x of args) {
    if (x === '--') break;
    const opt = remoteProgramOption(sub, x);
    if (opt !== null) {
      deny(a, 'blast_radius.git_config', `git ${sub} ${opt} names a program git runs (locally, for a path or ssh remote); the gate cannot check it`);
      return true;
    }
  }
  return false;
}

const reset: Detector = (args, _st, a) => {
  if (has(parseArgs(args, RESET), 'hard')) deny(a, 'blast_radius.reset_hard', `git reset --hard discards uncommitted work (${args.join(' ')})`);
  a.mutate('git reset');
};

const clean: Detector = (args, st, a) => {
  const o = parseArgs(args, CLEAN);
  const dry = has(o, 'dry-run');
  const force = has(o, 'force') || st.configs.get('clean.requireforce') === 'false';
  if (force && !dry) deny(a, 'blast_radius.clean', `git clean with --force deletes untracked files for good (${args.join(' ')}); use git clean -n to list them`);
  if (!dry) a.mutate('git clean');
};

const branch: Detector = (args, _st, a) => {
  const o = parseArgs(args, BRANCH);
  const del = has(o, 'delete');
  const force = has(o, 'force');
  if (has(o, 'D') || (del && force)) {
    deny(a, 'blast_radius.branch_delete', `git branch -D deletes a branch even when its commits are not merged anywhere (${args.join(' ')})`);
  } else if (has(o, 'M', 'C') || (has(o, 'move', 'copy') && force)) {
    deny(a, 'blast_radius.branch_delete', `a forced branch rename or copy overwrites an existing branch (${args.join(' ')})`);
  }
  const listOnly =
    !del && !has(o, 'move', 'copy', 'set-upstream-to', 'unset-upstream', 'edit-description') && (o.positionals.length === 0 || has(o, 'list', 'contains', 'merged', 'points-at'));
  if (listOnly) return;
  // the branch written: every name for delete/move/copy, else the first (the second is a start point)
  const positionals = [...o.positionals, ...(o.afterDashDash ?? [])];
  const targets = del || has(o, 'M', 'C', 'move', 'copy') ? positionals : positionals.slice(0, 1);
  if (targets.some((x) => namesDefaultBranch(x, a.context))) denyDefault(a, `git branch ${args.join(' ')}`);
  a.mutate('git branch');
};

const updateRef: Detector = (args, _st, a) => {
  const o = parseArgs(args, UPDATE_REF);
  if (has(o, 'd', 'stdin')) deny(a, 'blast_radius.branch_delete', `git update-ref ${args.join(' ')} deletes or rewrites refs directly`);
  const ref = [...o.positionals, ...(o.afterDashDash ?? [])][0];
  if (ref !== undefined && namesDefaultBranch(ref, a.context)) denyDefault(a, `git update-ref ${args.join(' ')}`);
  a.mutate('git update-ref');
};

const symbolicRef: Detector = (args, _st, a) => {
  const o = parseArgs(args, SYMBOLIC_REF);
  const pos = o.positionals;
  if (pos.length >= 2) {
    if (namesDefaultBranch(pos[1] as string, a.context) || (pos[0] !== 'HEAD' && namesDefaultBranch(pos[0] as string, a.context)))
      denyDefault(a, `git symbolic-ref ${args.join(' ')}`);
    a.mutate('git symbolic-ref');
  } else if (has(o, 'delete')) a.mutate('git symbolic-ref');
};

/** fetch/pull: refspecs `src:dst` write the local ref dst (`git fetch . HEAD:main` fast-forwards main). Every non-option word is read as a possible refspec. */
const fetchOrPull: Detector = (args, _st, a, sub) => {
  for (let k = 0; k < args.length; k++) {
    const x = args[k] as string;
    const refmap = x === '--refmap' ? (args[k + 1] ?? '') : x.startsWith('--refmap=') ? x.slice(9) : null;
    const spec = refmap ?? (x.startsWith('-') ? null : x);
    if (spec === null) continue;
    const colon = spec.indexOf(':');
    if (colon < 0) continue;
    const dst = spec.slice(colon + 1);
    if (dst !== '' && namesDefaultBranch(dst, a.context) && !dst.startsWith('refs/remotes/')) denyDefault(a, `git ${sub} ${args.join(' ')}`);
  }
  a.mutate(`git ${sub}`);
};

/**
 * `git rebase <upstream> <branch>` checks <branch> out first and rewrites it; `--exec/-x <cmd>` runs
 * <cmd> with the shell after each commit, so it is analysed as shell.
 */
const rebase: Detector = (args, st, a) => {
  const o = parseArgs(args, REBASE);
  if (o.positionals.length >= 2 && namesDefaultBranch(o.positionals[1] as string, a.context)) denyDefault(a, `git rebase ${args.join(' ')}`);
  a.mutate('git rebase');
  for (const cmd of values(o, 'exec')) a.script(cmd, st.cwd, (st.depth ?? 0) + 1, 'git rebase --exec');
};

/** `git bisect run <cmd> [args]` runs <cmd> at every step. */
const bisect: Detector = (args, st, a) => {
  a.mutate('git bisect');
  if (args[0] === 'run' && args.length > 1) a.exec(args.slice(1), st.cwd, (st.depth ?? 0) + 1, {});
};

/** `git submodule foreach [--recursive] <command>` runs <command> with the shell in every submodule (another repository). */
const submodule: Detector = (args, st, a) => {
  if (args[0] === 'status' || args.length === 0) return;
  a.mutate('git submodule');
  if (args[0] === 'foreach') {
    const cmd = args.slice(1).filter((x, k) => !(k === 0 && (x === '--recursive' || x === '-q' || x === '--quiet')));
    a.script(cmd.join(' '), null, (st.depth ?? 0) + 1, 'git submodule foreach');
  }
};

/** `git difftool -x/--extcmd <cmd>` runs <cmd> with the shell on each pair of files. */
const difftool: Detector = (args, st, a) => {
  a.mutate('git difftool');
  for (let k = 0; k < args.length; k++) {
    const x = args[k] as string;
    if (x === '--') break;
    const cmd = x === '-x' || x === '--extcmd' ? (args[++k] ?? '') : x.startsWith('--extcmd=') ? x.slice(9) : /^-x./.test(x) ? x.slice(2) : null;
    if (cmd !== null) a.script(cmd, st.cwd, (st.depth ?? 0) + 1, 'git difftool --extcmd');
  }
};

/** `git grep -O<pager>/--open-files-in-pager=<pager>` runs <pager> on the matching files. */
const grep: Detector = (args, st, a) => {
  for (const x of args) {
    if (x === '--') break;
    const cmd = x.startsWith('--open-files-in-pager=') ? x.slice(22) : /^-O./.test(x) ? x.slice(2) : null;
    if (cmd !== null) a.script(cmd, st.cwd, (st.depth ?? 0) + 1, 'git grep --open-files-in-pager');
  }
};

const reflog: Detector = (args, _st, a) => {
  if (args[0] === 'expire' || args[0] === 'delete') deny(a, 'blast_radius.history', `git reflog ${args[0]} destroys the record needed to recover lost commits`);
  if (args[0] !== undefined && args[0] !== 'show' && args[0] !== 'exists' && !args[0].startsWith('-')) a.mutate('git reflog');
};

const stash: Detector = (args, _st, a) => {
  if (args[0] === 'clear' || args[0] === 'drop') deny(a, 'blast_radius.discard', `git stash ${args[0]} throws stashed work away`);
  if (args[0] !== 'list' && args[0] !== 'show') a.mutate('git stash');
};

const rewriteHistory: Detector = (_args, _st, a, sub) => deny(a, 'blast_radius.history', `git ${sub} rewrites history`);

const worktree: Detector = (args, _st, a) => {
  if (args[0] === 'add') {
    const o = parseArgs(args.slice(1), WORKTREE_ADD);
    for (const b of values(o, 'b', 'B', 'orphan')) if (namesDefaultBranch(b, a.context)) denyDefault(a, `git worktree ${args.join(' ')}`);
    const named = has(o, 'b', 'B', 'orphan', 'detach');
    const pos = o.positionals;
    // `git worktree add <path> <default>` checks the default branch out where commits move it
    if (!named && pos[1] !== undefined && pos[1] !== 'HEAD' && namesDefaultBranch(pos[1], a.context)) denyDefault(a, `git worktree ${args.join(' ')}`);
  }
  if (args[0] === 'remove' || args[0] === 'prune' || args[0] === 'move') {
    deny(a, 'blast_radius.worktree', `git worktree ${args[0]} can destroy another worker's worktree; Polly manages worktrees`);
  }
  if (args[0] !== 'list') a.mutate('git worktree');
};

/**
 * `git checkout`/`git switch` (and `restore`): `--force` throws uncommitted changes away; onto the
 * default branch, `-b/-B/-c/-C/--orphan <default>` creates or resets it, and a lone `<default>` (no
 * pathspec) switches the worktree to it so later commits move it.
 */
const checkoutLike: Detector = (args, _st, a, sub) => {
  if (sub !== 'restore') {
    const o = parseArgs(args, sub === 'switch' ? SWITCH : CHECKOUT);
    if (has(o, 'force')) deny(a, 'blast_radius.discard', `git ${sub} --force throws away uncommitted changes (${args.join(' ')})`);
    checkSwitchTarget(sub, args, o, a);
  }
  a.mutate(`git ${sub}`);
};

function checkSwitchTarget(sub: string, args: string[], o: ReturnType<typeof parseArgs>, a: Analyzer): void {
  const spelled = `git ${sub} ${args.join(' ')}`;
  if (o.afterDashDash !== null && o.positionals.length === 0 && sub === 'checkout') return; // `git checkout -- <paths>` restores files
  if (values(o, 'b', 'B', 'c', 'C', 'orphan', 'create', 'force-create').some((v) => namesDefaultBranch(v, a.context))) return denyDefault(a, spelled);
  const pos = o.positionals;
  const pathspec = o.afterDashDash !== null || pos.length > 1;
  if (!has(o, 'detach') && !pathspec && pos.length === 1 && pos[0] !== 'HEAD' && pos[0] !== '@' && namesDefaultBranch(pos[0] as string, a.context)) denyDefault(a, spelled);
}

const clone: Detector = (args, st, a) => {
  const pos = parseArgs(args, CLONE).positionals;
  if (pos.length >= 2) {
    const dir = pos[pos.length - 1] as string;
    a.write(dir, resolvePath(dir, st.cwd, a.context.home));
  }
  a.mutate('git clone');
};

/** Subcommands whose listing forms read and whose other forms change things. */
const listOr =
  (isRead: (args: string[]) => boolean): Detector =>
  (args, _st, a, sub) => {
    if (!isRead(args)) a.mutate(`git ${sub}`);
  };

/** The subcommand table. Anything not here is read-only (READ_ONLY) or a change. */
const DETECTORS: Record<string, Detector> = {
  push: (args, _st, a) => analyzePush(args, a),
  // plumbing pushes: same refspec grammar and force/mirror/all options as push
  'send-pack': (args, _st, a) =>
    analyzePush(
      args.filter((x) => !x.startsWith('--receive-pack') && !x.startsWith('--remote')),
      a,
    ),
  'http-push': (args, _st, a) =>
    analyzePush(
      args.filter((x) => !x.startsWith('--receive-pack') && !x.startsWith('--remote')),
      a,
    ),
  reset,
  clean,
  branch,
  config: (args, st, a) => analyzeConfig(args, st.cwd, a),
  'update-ref': updateRef,
  'symbolic-ref': symbolicRef,
  fetch: fetchOrPull,
  pull: fetchOrPull,
  rebase,
  reflog,
  stash,
  'filter-branch': rewriteHistory,
  'filter-repo': rewriteHistory,
  worktree,
  checkout: checkoutLike,
  switch: checkoutLike,
  restore: checkoutLike,
  clone,
  tag: listOr((args) => args.length === 0 || args.includes('-l') || args.includes('--list')),
  remote: listOr((args) => args.length === 0 || args[0] === '-v' || args[0] === 'show' || args[0] === 'get-url'),
  notes: listOr((args) => args[0] === 'list' || args[0] === 'show'),
  submodule,
  bisect,
  difftool,
  grep,
};

/** Subcommands whose arguments, when produced at run time, leave the gate unable to tell what they destroy. */
const NEEDS_LITERAL_ARGS = new Set(['reset', 'clean', 'branch', 'config']);

/** Analyse one git subcommand (after global options and aliases): detectors first, then the table. */
export function analyzeSubcommand(sub: string, args: string[], st: GitState, a: Analyzer): void {
  if (detectRemoteProgram(sub, args, a)) return;
  const unknownArg = args.find((x) => x.includes(UNKNOWN));
  if (unknownArg !== undefined && NEEDS_LITERAL_ARGS.has(sub)) {
    deny(a, 'blast_radius.unresolved_command', `git ${sub} argument ${JSON.stringify(unknownArg.replace(/\u0000/g, '…'))} cannot be resolved before it runs`);
    return;
  }
  const detector = DETECTORS[sub];
  if (detector) return detector(args, st, a, sub);
  if (READ_ONLY.has(sub)) {
    for (const x of args) {
      const m = /^--output=(.*)$/.exec(x);
      if (m) a.write(m[1] as string, resolvePath(m[1] as string, st.cwd, a.context.home));
    }
    return;
  }
  a.mutate(`git ${sub}`);
}
