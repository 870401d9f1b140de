/**
 * Per-subcommand flag tables for the gate's git option parser (git-options.ts): which options a
 * command has, their short letters, and which take a value. Only what a detector needs to read an
 * argv correctly is listed; a long option missing here is unknown (push denies unknown options).
 * Source: the OPTIONS sections of git-scm.com/docs/git-push, git-reset, git-clean, git-branch,
 * git-checkout, git-switch, git-rebase, git-update-ref, git-symbolic-ref, git-worktree, git-clone
 * (git 2.4x).
 */
import type { FlagSpec, OptionSpec } from './git-options.js';

const flags = (...names: string[]): OptionSpec[] => names.map((long) => ({ long }));
const valued = (...names: string[]): OptionSpec[] => names.map((long) => ({ long, value: 'required' as const }));
const optional = (...names: string[]): OptionSpec[] => names.map((long) => ({ long, value: 'optional' as const }));
const short = (letter: string, long?: string, value?: 'required' | 'optional'): OptionSpec => ({ short: letter, ...(long ? { long } : {}), ...(value ? { value } : {}) });

export const PUSH: FlagSpec = [
  ...flags(
    'all',
    'branches',
    'mirror',
    'tags',
    'porcelain',
    'no-force-with-lease',
    'force-if-includes',
    'no-force-if-includes',
    'set-upstream',
    'thin',
    'no-thin',
    'prune',
    'no-verify',
    'verify',
    'follow-tags',
    'no-follow-tags',
    'no-signed',
    'atomic',
    'no-atomic',
    'ipv4',
    'ipv6',
    'progress',
    'no-progress',
    'no-recurse-submodules',
  ),
  ...optional('force-with-lease', 'signed', 'recurse-submodules'),
  ...valued('repo', 'receive-pack', 'exec'),
  short('f', 'force'),
  short('d', 'delete'),
  short('n', 'dry-run'),
  short('u', 'set-upstream'),
  short('v', 'verbose'),
  short('q', 'quiet'),
  short('o', 'push-option', 'required'),
  short('4', 'ipv4'),
  short('6', 'ipv6'),
];

export const RESET: FlagSpec = [
  ...flags('hard', 'soft', 'mixed', 'merge', 'keep', 'no-quiet', 'intent-to-add', 'pathspec-file-nul', 'recurse-submodules', 'no-recurse-submodules', 'refresh', 'no-refresh'),
  ...valued('pathspec-from-file'),
  short('q', 'quiet'),
  short('p', 'patch'),
  short('N', 'intent-to-add'),
];

export const CLEAN: FlagSpec = [
  short('n', 'dry-run'),
  short('f', 'force'),
  short('i', 'interactive'),
  short('q', 'quiet'),
  short('e', 'exclude', 'required'),
  short('d'),
  short('x'),
  short('X'),
];

export const BRANCH: FlagSpec = [
  ...flags(
    'all',
    'remotes',
    'verbose',
    'quiet',
    'no-track',
    'unset-upstream',
    'edit-description',
    'color',
    'no-color',
    'column',
    'no-column',
    'abbrev',
    'no-abbrev',
    'create-reflog',
    'ignore-case',
    'show-current',
    'recurse-submodules',
    'omit-empty',
  ),
  ...optional('track'),
  ...valued('contains', 'no-contains', 'merged', 'no-merged', 'sort', 'points-at', 'format'),
  short('d', 'delete'),
  short('D'),
  short('f', 'force'),
  short('m', 'move'),
  short('M'),
  short('c', 'copy'),
  short('C'),
  short('l', 'list'),
  short('a', 'all'),
  short('r', 'remotes'),
  short('v', 'verbose'),
  short('q', 'quiet'),
  short('t', 'track'),
  short('u', 'set-upstream-to', 'required'),
];

const SWITCHING: OptionSpec[] = [
  ...flags('detach', 'quiet', 'progress', 'no-progress', 'merge', 'no-track', 'guess', 'no-guess', 'ignore-other-worktrees', 'no-recurse-submodules', 'discard-changes'),
  ...optional('track', 'conflict', 'recurse-submodules'),
  ...valued('orphan'),
  short('f', 'force'),
  short('q', 'quiet'),
  short('m', 'merge'),
  short('t', 'track'),
];

export const CHECKOUT: FlagSpec = [
  ...SWITCHING,
  ...flags('ours', 'theirs', 'patch', 'ignore-skip-worktree-bits', 'overwrite-ignore', 'no-overwrite-ignore', 'overlay', 'no-overlay', 'pathspec-file-nul'),
  ...valued('pathspec-from-file'),
  short('b', undefined, 'required'),
  short('B', undefined, 'required'),
  short('c', undefined, 'required'),
  short('C', undefined, 'required'),
  short('2', 'ours'),
  short('3', 'theirs'),
  short('p', 'patch'),
  short('l'),
];

export const SWITCH: FlagSpec = [...SWITCHING, ...valued('create', 'force-create'), short('c', 'create', 'required'), short('C', 'force-create', 'required'), short('d', 'detach')];

export const REBASE: FlagSpec = [
  ...flags(
    'keep-base',
    'continue',
    'skip',
    'abort',
    'quit',
    'edit-todo',
    'show-current-patch',
    'apply',
    'keep-empty',
    'no-keep-empty',
    'reapply-cherry-picks',
    'no-reapply-cherry-picks',
    'allow-empty-message',
    'no-gpg-sign',
    'verbose',
    'stat',
    'no-stat',
    'no-verify',
    'verify',
    'force-rebase',
    'no-ff',
    'fork-point',
    'no-fork-point',
    'ignore-whitespace',
    'committer-date-is-author-date',
    'ignore-date',
    'reset-author-date',
    'signoff',
    'interactive',
    'no-rebase-merges',
    'root',
    'autosquash',
    'no-autosquash',
    'autostash',
    'no-autostash',
    'reschedule-failed-exec',
    'no-reschedule-failed-exec',
    'update-refs',
    'no-update-refs',
  ),
  ...optional('empty', 'gpg-sign', 'rebase-merges', 'whitespace'),
  ...valued('onto', 'trailer'),
  short('s', 'strategy', 'required'),
  short('X', 'strategy-option', 'required'),
  short('x', 'exec', 'required'),
  short('i', 'interactive'),
  short('m', 'merge'),
  short('q', 'quiet'),
  short('v', 'verbose'),
  short('n', 'no-stat'),
  short('f', 'force-rebase'),
  short('r', 'rebase-merges', 'optional'),
  short('S', 'gpg-sign', 'optional'),
  short('C', undefined, 'required'),
];

export const UPDATE_REF: FlagSpec = [...flags('no-deref', 'stdin', 'create-reflog'), short('m', undefined, 'required'), short('d'), short('z')];

export const SYMBOLIC_REF: FlagSpec = [...flags('short', 'recurse', 'no-recurse'), short('m', undefined, 'required'), short('d', 'delete'), short('q', 'quiet')];

export const WORKTREE_ADD: FlagSpec = [
  ...flags('lock', 'checkout', 'no-checkout', 'track', 'no-track', 'guess-remote', 'no-guess-remote', 'relative-paths', 'no-relative-paths'),
  ...valued('reason', 'orphan'),
  short('b', undefined, 'required'),
  short('B', undefined, 'required'),
  short('d', 'detach'),
  short('f', 'force'),
  short('q', 'quiet'),
];

export const CLONE: FlagSpec = [
  ...valued(
    'origin',
    'branch',
    'upload-pack',
    'reference',
    'reference-if-able',
    'separate-git-dir',
    'depth',
    'shallow-since',
    'shallow-exclude',
    'config',
    'template',
    'jobs',
    'filter',
    'bundle-uri',
    'server-option',
    'revision',
    'ref-format',
  ),
  short('o', 'origin', 'required'),
  short('b', 'branch', 'required'),
  short('u', 'upload-pack', 'required'),
  short('c', 'config', 'required'),
  short('j', 'jobs', 'required'),
];

/**
 * git's own options, before the subcommand (git-scm.com/docs/git, OPTIONS). They are matched
 * exactly and never bundled (git.c's handle_options); `--exec-path` prints the path without a value
 * and moves git's helpers with one.
 */
export const GLOBAL: FlagSpec = [
  short('C', undefined, 'required'),
  short('c', undefined, 'required'),
  ...valued('config-env', 'git-dir', 'work-tree', 'namespace', 'super-prefix', 'list-cmds', 'attr-source'),
  ...optional('exec-path'),
  ...flags(
    'paginate',
    'no-pager',
    'bare',
    'no-replace-objects',
    'no-lazy-fetch',
    'no-optional-locks',
    'no-advice',
    'literal-pathspecs',
    'glob-pathspecs',
    'noglob-pathspecs',
    'icase-pathspecs',
    'html-path',
    'man-path',
    'info-path',
    'version',
    'help',
  ),
  short('p', 'paginate'),
  short('P', 'no-pager'),
  short('v', 'version'),
  short('h', 'help'),
];
