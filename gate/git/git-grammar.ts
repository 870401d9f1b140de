/**
 * git's own argument grammar, modelled for the gate: global options (`-C`, `-c`, `--git-dir`,
 * `--config-env`, `--exec-path`), `-c alias.*` definitions (expanded, `!` aliases analysed as shell),
 * unique prefixes of long options, bundled short flags, and push refspecs (`+src:dst`, `:dst`,
 * `HEAD` resolved to the context's branch). Source of the grammar: git-scm.com/docs/git,
 * git-push, git-reset, git-clean, git-branch, git-config (git 2.4x).
 */
import { UNKNOWN, isUnder, resolvePath } from '../paths.js';
import type { Analyzer } from '../types.js';

const BUILTINS = new Set(
  ('add am annotate apply archive bisect blame branch bundle cat-file check-attr check-ignore check-mailmap check-ref-format checkout ' +
    'checkout-index cherry cherry-pick citool clean clone column commit commit-graph commit-tree config count-objects credential describe ' +
    'diff diff-files diff-index diff-tree difftool fast-export fast-import fetch fetch-pack filter-branch filter-repo fmt-merge-msg for-each-ref ' +
    'for-each-repo format-patch fsck gc get-tar-commit-id grep gui hash-object help index-pack init instaweb interpret-trailers log ls-files ' +
    'ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-tree mergetool mktag mktree ' +
    'multi-pack-index mv name-rev notes pack-objects pack-refs patch-id prune prune-packed pull push range-diff read-tree rebase reflog ' +
    'remote repack replace request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack shortlog show show-branch ' +
    'show-index show-ref sparse-checkout stash status stripspace submodule switch symbolic-ref tag unpack-file unpack-objects update-index ' +
    'update-ref update-server-info var verify-commit verify-pack verify-tag version whatchanged worktree write-tree lfs').split(' '),
);

const READ_ONLY = new Set(
  ('status diff log show blame annotate grep ls-files ls-tree ls-remote rev-parse rev-list describe cat-file shortlog show-ref for-each-ref ' +
    'merge-base name-rev whatchanged count-objects var version help check-ignore check-attr check-ref-format check-mailmap diff-tree ' +
    'diff-index diff-files show-branch range-diff cherry verify-commit verify-tag get-tar-commit-id column stripspace patch-id show-index fsck').split(' '),
);

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
function configKey(name: string): string {
  const first = name.indexOf('.');
  const last = name.lastIndexOf('.');
  if (first < 0) return name.toLowerCase();
  return `${name.slice(0, first).toLowerCase()}${name.slice(first, last)}${name.slice(last).toLowerCase()}`;
}

function dangerousConfig(name: string): boolean {
  const k = configKey(name);
  const lower = k.toLowerCase();
  return DANGEROUS_CONFIG.some((re) => re.test(lower));
}

/** Split a git alias value into words like git's split_cmdline (quotes and backslashes). */
export function splitCmdline(value: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let has = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < value.length) cur += value[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      has = true;
    } else if (c === '\\' && i + 1 < value.length) {
      cur += value[++i];
      has = true;
    } else if (/\s/.test(c)) {
      if (cur !== '' || has) out.push(cur);
      cur = '';
      has = false;
    } else cur += c;
  }
  if (cur !== '' || has) out.push(cur);
  return out;
}

/** Quote a word for re-parsing as shell source. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Match a long option `--name[=value]` against a command's long options by git's unique-prefix
 * rule. Returns the candidate options (exact match only, if there is one).
 */
export function matchLong(arg: string, known: readonly string[]): { names: string[]; value: string | null } {
  const body = arg.slice(2);
  const eq = body.indexOf('=');
  const name = eq < 0 ? body : body.slice(0, eq);
  const value = eq < 0 ? null : body.slice(eq + 1);
  if (known.includes(name)) return { names: [name], value };
  return { names: known.filter((k) => k.startsWith(name) && name.length > 0), value };
}

interface GitState {
  cwd: string | null;
  /** `--git-dir` / `--work-tree` as resolved (null inside: given but unresolvable); undefined when not given. */
  gitDir?: string | null;
  workTree?: string | null;
  configs: Map<string, string>;
  /** Dangerous `-c` settings seen (decided once the subcommand is known). */
  risky?: Array<{ name: string; value: string }>;
}

/** Values that switch a program-running setting off (`core.hooksPath=/dev/null`, `core.fsmonitor=false`). */
const DISABLING = new Set(['', 'false', '0', 'no', 'off', '/dev/null', 'cat']);

const deny = (a: Analyzer, rule: string, reason: string): void => a.finding({ decision: 'deny', rule, reason });

/**
 * Analyse `git <args>` (args after the program name). Reports to `a`.
 */
export function analyzeGit(args: string[], cwd: string | null, depth: number, a: Analyzer, state?: GitState): void {
  const st: GitState = state ?? { cwd, configs: new Map() };
  let i = 0;
  while (i < args.length) {
    const arg = args[i] as string;
    if (arg.includes(UNKNOWN)) {
      deny(a, 'blast_radius.unresolved_command', `git option ${JSON.stringify(arg.replace(/\u0000/g, '…'))} cannot be resolved before it runs`);
      return;
    }
    if (!arg.startsWith('-')) break;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, null];
    const takeValue = (): string | null => {
      if (inline !== null) return inline;
      i += 1;
      return args[i] ?? null;
    };
    switch (flag) {
      case '-C': {
        const dir = takeValue() ?? '';
        st.cwd = resolvePath(dir, st.cwd, a.context.home);
        break;
      }
      case '-c': {
        const kv = takeValue() ?? '';
        const eq = kv.indexOf('=');
        const name = eq < 0 ? kv : kv.slice(0, eq);
        const value = eq < 0 ? 'true' : kv.slice(eq + 1);
        if (/^alias\./i.test(name)) st.configs.set(`alias.${name.slice(6)}`, value);
        else if (dangerousConfig(name)) (st.risky ??= []).push({ name, value });
        else st.configs.set(configKey(name), value);
        break;
      }
      case '--config-env': {
        const kv = takeValue() ?? '';
        const name = kv.slice(0, Math.max(0, kv.indexOf('=')));
        if (/^alias\./i.test(name) || dangerousConfig(name)) {
          deny(a, 'blast_radius.git_config', `git --config-env=${name}=… takes a value the gate cannot see and ${/^alias\./i.test(name) ? 'defines an alias' : 'changes what git runs'}`);
          return;
        }
        break;
      }
      case '--exec-path':
        if (inline !== null) {
          deny(a, 'blast_radius.git_config', `git --exec-path=${inline} runs git's helpers from another directory`);
          return;
        }
        break;
      case '--git-dir':
      case '--work-tree': {
        const dir = takeValue() ?? '';
        const resolved = resolvePath(dir, st.cwd, a.context.home);
        if (flag === '--git-dir') st.gitDir = resolved;
        else st.workTree = resolved;
        break;
      }
      case '--namespace':
      case '--super-prefix':
      case '--list-cmds':
      case '--attr-source':
        takeValue();
        break;
      case '-p':
      case '-P':
      case '--paginate':
      case '--no-pager':
      case '--bare':
      case '--no-replace-objects':
      case '--no-lazy-fetch':
      case '--no-optional-locks':
      case '--no-advice':
      case '--literal-pathspecs':
      case '--glob-pathspecs':
      case '--noglob-pathspecs':
      case '--icase-pathspecs':
      case '--html-path':
      case '--man-path':
      case '--info-path':
      case '--version':
      case '-v':
      case '--help':
      case '-h':
        break;
      default:
        deny(a, 'blast_radius.unresolved_command', `unknown git global option ${JSON.stringify(arg)}: the gate does not guess what it does`);
        return;
    }
    i += 1;
  }
  const sub = args[i];
  if (sub === undefined) return;
  const rest = args.slice(i + 1);
  const alias = st.configs.get(`alias.${sub}`);
  if (alias !== undefined) {
    if (depth > 8) {
      deny(a, 'blast_radius.unresolved_command', `git alias ${sub} expands too deeply (a loop?)`);
      return;
    }
    if (alias.startsWith('!')) {
      a.script([alias.slice(1), ...rest.map(shellQuote)].join(' '), st.cwd, depth + 1, `git alias ${sub}`);
      return;
    }
    const words = splitCmdline(alias);
    analyzeGit([...words, ...rest], st.cwd, depth + 1, a, { cwd: st.cwd, gitDir: st.gitDir, workTree: st.workTree, configs: new Map([...st.configs].filter(([k]) => k !== `alias.${sub}`)) });
    return;
  }
  if (!BUILTINS.has(sub)) {
    deny(a, 'blast_radius.unresolved_command', `"git ${sub}" is not a git command the gate knows: it may be an alias or an external helper whose effect cannot be checked`);
    return;
  }
  // Every subcommand is analysed through a probe that notes whether it changes anything: a change
  // made in a repository other than the worker's own worktree is denied after the subcommand's
  // own rules (so their more specific rule names come first).
  let mutated = false;
  const probe: Analyzer = { ...a, finding: (f) => a.finding(f), write: (r, p) => a.write(r, p), mutate: (w) => ((mutated = true), a.mutate(w)), script: a.script, exec: a.exec };
  analyzeSubcommand(sub, rest, st, probe);
  if (mutated && a.role === 'implement' && sub !== 'clone') checkOwnRepository(sub, st, a);
  if (!st.risky || st.risky.length === 0) return;
  // Switching hooks/fsmonitor/pagers off for a command that changes nothing is harmless (tools probe
  // repositories that way); any other use changes what git runs or where it pushes.
  const off = st.risky.every((r) => DISABLING.has(r.value.toLowerCase()) && !/^(alias|include|includeif|remote|push|url|branch)\./i.test(r.name));
  if (mutated || !off) {
    const r = st.risky[0] as { name: string; value: string };
    deny(a, 'blast_radius.git_config', `git -c ${r.name}=${r.value} ${sub} changes what git runs or where it pushes (hooks, programs, push refspecs); not allowed`);
  }
}

/**
 * Deny (`blast_radius.other_repository`) a state-changing git subcommand whose effective repository
 * is not the worker's own worktree: the cwd after `cd`/`pushd`/`-C`, `--git-dir` and `--work-tree`
 * must all lie inside `context.worktree` (an unresolvable one fails closed). Worktrees share refs
 * and objects with the user's repository, so `git -C <repo root> merge …` moves the user's branches.
 * `git clone` is exempt: its target directory is checked as a write.
 */
function checkOwnRepository(sub: string, st: GitState, a: Analyzer): void {
  const wt = a.context.worktree;
  const places: Array<[string, string | null | undefined]> = [['working directory', st.cwd], ['--git-dir', st.gitDir], ['--work-tree', st.workTree]];
  for (const [what, dir] of places) {
    if (dir === undefined) continue;
    if (dir === null || !isUnder(dir, wt)) {
      deny(
        a,
        'blast_radius.other_repository',
        `git ${sub} changes a repository other than this worker's worktree (${what} ${dir === null ? 'cannot be resolved before it runs' : dir}); run git write commands only inside ${wt}`,
      );
      return;
    }
  }
}

/** True when a ref as written (`main`, `heads/main`, `refs/heads/main`, `HEAD`/`@` = the current branch) names the default branch. */
function namesDefaultBranch(ref: string, ctx: { branch: string; defaultBranch: string }): boolean {
  const r = ref.replace(/^\+/, '');
  const name = r === 'HEAD' || r === '@' ? ctx.branch : refName(r);
  return name === ctx.defaultBranch || (name.includes('*') && !r.startsWith('refs/tags/'));
}

const denyDefault = (a: Analyzer, what: string): void =>
  deny(a, 'blast_radius.default_branch', `${what} moves or switches to the default branch ${a.context.defaultBranch}, which the worktree shares with the user's repository; work on ${a.context.branch} and open a PR`);

/** Long options per subcommand, for unique-prefix matching. */
const PUSH_LONG = [
  'all', 'branches', 'mirror', 'delete', 'tags', 'dry-run', 'porcelain', 'force', 'force-with-lease', 'no-force-with-lease', 'force-if-includes',
  'no-force-if-includes', 'repo', 'set-upstream', 'thin', 'no-thin', 'receive-pack', 'exec', 'push-option', 'prune', 'no-verify', 'verify',
  'follow-tags', 'no-follow-tags', 'signed', 'no-signed', 'atomic', 'no-atomic', 'ipv4', 'ipv6', 'quiet', 'verbose', 'progress', 'no-progress',
  'recurse-submodules', 'no-recurse-submodules',
];
const PUSH_VALUE = new Set(['repo', 'receive-pack', 'exec', 'push-option']);
const RESET_LONG = ['hard', 'soft', 'mixed', 'merge', 'keep', 'quiet', 'no-quiet', 'patch', 'intent-to-add', 'pathspec-from-file', 'pathspec-file-nul', 'recurse-submodules', 'no-recurse-submodules', 'refresh', 'no-refresh'];
const CLEAN_LONG = ['dry-run', 'force', 'interactive', 'quiet', 'exclude'];
const BRANCH_LONG = [
  'delete', 'force', 'move', 'copy', 'list', 'all', 'remotes', 'verbose', 'quiet', 'track', 'no-track', 'set-upstream-to', 'unset-upstream',
  'edit-description', 'contains', 'no-contains', 'merged', 'no-merged', 'sort', 'points-at', 'format', 'color', 'no-color', 'column', 'no-column',
  'abbrev', 'no-abbrev', 'create-reflog', 'ignore-case', 'show-current', 'recurse-submodules', 'omit-empty',
];
const BRANCH_VALUE = new Set(['set-upstream-to', 'contains', 'no-contains', 'merged', 'no-merged', 'sort', 'points-at', 'format']);

/** Collect short flags (bundled) and long options by prefix; returns the set of option names seen and positionals. */
function parseOptions(args: string[], long: readonly string[], shortValue: string, longValue: ReadonlySet<string>): { seen: Set<string>; shorts: Set<string>; positionals: string[]; ambiguous: string[][]; unknown: string[] } {
  const seen = new Set<string>();
  const shorts = new Set<string>();
  const positionals: string[] = [];
  const ambiguous: string[][] = [];
  const unknown: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const m = matchLong(arg, long);
      if (m.names.length === 0) unknown.push(arg);
      if (m.names.length > 1) ambiguous.push(m.names);
      for (const n of m.names) seen.add(n);
      if (m.names.length === 1 && m.value === null && longValue.has(m.names[0] as string)) i += 1;
    } else if (arg.startsWith('-') && arg.length > 1) {
      for (let j = 1; j < arg.length; j++) {
        const c = arg[j] as string;
        shorts.add(c);
        if (shortValue.includes(c)) {
          if (j === arg.length - 1) i += 1;
          break;
        }
      }
    } else positionals.push(arg);
  }
  return { seen, shorts, positionals, ambiguous, unknown };
}

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

function analyzeSubcommand(sub: string, args: string[], st: GitState, a: Analyzer): void {
  if (REMOTE_PROGRAM.has(sub)) {
    for (const x of args) {
      if (x === '--') break;
      const opt = remoteProgramOption(sub, x);
      if (opt !== null) {
        deny(a, 'blast_radius.git_config', `git ${sub} ${opt} names a program git runs (locally, for a path or ssh remote); the gate cannot check it`);
        return;
      }
    }
  }
  const unknownArg = args.find((x) => x.includes(UNKNOWN));
  if (unknownArg !== undefined && (sub === 'reset' || sub === 'clean' || sub === 'branch' || sub === 'config')) {
    deny(a, 'blast_radius.unresolved_command', `git ${sub} argument ${JSON.stringify(unknownArg.replace(/\u0000/g, '…'))} cannot be resolved before it runs`);
    return;
  }
  switch (sub) {
    case 'push':
      return analyzePush(args, st, a);
    case 'send-pack':
    case 'http-push':
      // plumbing pushes: same refspec grammar and force/mirror/all options as push
      return analyzePush(args.filter((x) => !x.startsWith('--receive-pack') && !x.startsWith('--remote')), st, a);
    case 'reset': {
      const o = parseOptions(args, RESET_LONG, '', new Set(['pathspec-from-file']));
      if (o.seen.has('hard')) deny(a, 'blast_radius.reset_hard', `git reset --hard discards uncommitted work (${args.join(' ')})`);
      a.mutate('git reset');
      return;
    }
    case 'clean': {
      const o = parseOptions(args, CLEAN_LONG, 'e', new Set(['exclude']));
      const dry = o.shorts.has('n') || o.seen.has('dry-run');
      const force = o.shorts.has('f') || o.seen.has('force') || st.configs.get('clean.requireforce') === 'false';
      if (force && !dry) deny(a, 'blast_radius.clean', `git clean with --force deletes untracked files for good (${args.join(' ')}); use git clean -n to list them`);
      if (!dry) a.mutate('git clean');
      return;
    }
    case 'branch': {
      const o = parseOptions(args, BRANCH_LONG, 'u', BRANCH_VALUE);
      const del = o.shorts.has('d') || o.seen.has('delete');
      const force = o.shorts.has('f') || o.seen.has('force');
      if (o.shorts.has('D') || (del && force)) {
        deny(a, 'blast_radius.branch_delete', `git branch -D deletes a branch even when its commits are not merged anywhere (${args.join(' ')})`);
      } else if (o.shorts.has('M') || o.shorts.has('C') || ((o.shorts.has('m') || o.seen.has('move') || o.shorts.has('c') || o.seen.has('copy')) && force)) {
        deny(a, 'blast_radius.branch_delete', `a forced branch rename or copy overwrites an existing branch (${args.join(' ')})`);
      }
      const listOnly = !del && !o.shorts.has('m') && !o.shorts.has('c') && !o.seen.has('move') && !o.seen.has('copy') && !o.seen.has('set-upstream-to') &&
        !o.shorts.has('u') && !o.seen.has('unset-upstream') && !o.seen.has('edit-description') &&
        (o.positionals.length === 0 || o.shorts.has('l') || o.seen.has('list') || o.seen.has('contains') || o.seen.has('merged') || o.seen.has('points-at'));
      if (!listOnly) {
        // the branch written: every name for delete/move/copy, else the first (the second is a start point)
        const moveLike = del || o.shorts.has('m') || o.shorts.has('M') || o.shorts.has('c') || o.shorts.has('C') || o.seen.has('move') || o.seen.has('copy');
        const targets = moveLike ? o.positionals : o.positionals.slice(0, 1);
        if (targets.some((x) => namesDefaultBranch(x, a.context))) denyDefault(a, `git branch ${args.join(' ')}`);
        a.mutate('git branch');
      }
      return;
    }
    case 'config':
      return analyzeConfig(args, st, a);
    case 'update-ref': {
      if (args.includes('-d') || args.includes('--stdin')) deny(a, 'blast_radius.branch_delete', `git update-ref ${args.join(' ')} deletes or rewrites refs directly`);
      const pos: string[] = [];
      for (let k = 0; k < args.length; k++) {
        const x = args[k] as string;
        if (x === '-m') k += 1;
        else if (!x.startsWith('-') || x === '--') pos.push(x);
      }
      const ref = pos.filter((x) => x !== '--')[0];
      if (ref !== undefined && namesDefaultBranch(ref, a.context)) denyDefault(a, `git update-ref ${args.join(' ')}`);
      a.mutate('git update-ref');
      return;
    }
    case 'symbolic-ref': {
      const pos = args.filter((x) => !x.startsWith('-'));
      if (args.includes('-m')) pos.splice(pos.indexOf(args[args.indexOf('-m') + 1] as string), 1);
      if (pos.length >= 2) {
        if (namesDefaultBranch(pos[1] as string, a.context) || (pos[0] !== 'HEAD' && namesDefaultBranch(pos[0] as string, a.context))) denyDefault(a, `git symbolic-ref ${args.join(' ')}`);
        a.mutate('git symbolic-ref');
      } else if (args.some((x) => x === '-d' || x === '--delete')) a.mutate('git symbolic-ref');
      return;
    }
    case 'fetch':
    case 'pull': {
      // refspecs `src:dst` write the local ref dst (`git fetch . HEAD:main` fast-forwards main)
      for (let k = 0; k < args.length; k++) {
        const x = args[k] as string;
        const refmap = x === '--refmap' ? args[k + 1] ?? '' : x.startsWith('--refmap=') ? x.slice(9) : null;
        const spec = refmap ?? (x.startsWith('-') ? null : x);
        if (spec === null) continue;
        const colon = spec.indexOf(':');
        if (colon < 0) continue;
        const dst = spec.slice(colon + 1);
        if (dst !== '' && namesDefaultBranch(dst, a.context) && !dst.startsWith('refs/remotes/')) denyDefault(a, `git ${sub} ${args.join(' ')}`);
      }
      a.mutate(`git ${sub}`);
      return;
    }
    case 'rebase': {
      // `git rebase <upstream> <branch>` checks <branch> out first and rewrites it
      const pos = args.filter((x, k) => !x.startsWith('-') && !['--onto', '-s', '--strategy', '-X', '--strategy-option', '-x', '--exec'].includes(args[k - 1] ?? ''));
      if (pos.length >= 2 && namesDefaultBranch(pos[1] as string, a.context)) denyDefault(a, `git rebase ${args.join(' ')}`);
      a.mutate('git rebase');
      return;
    }
    case 'reflog':
      if (args[0] === 'expire' || args[0] === 'delete') deny(a, 'blast_radius.history', `git reflog ${args[0]} destroys the record needed to recover lost commits`);
      if (args[0] !== undefined && args[0] !== 'show' && args[0] !== 'exists' && !args[0].startsWith('-')) a.mutate('git reflog');
      return;
    case 'stash':
      if (args[0] === 'clear' || args[0] === 'drop') deny(a, 'blast_radius.discard', `git stash ${args[0]} throws stashed work away`);
      if (args[0] !== 'list' && args[0] !== 'show') a.mutate('git stash');
      return;
    case 'filter-branch':
    case 'filter-repo':
      deny(a, 'blast_radius.history', `git ${sub} rewrites history`);
      return;
    case 'worktree':
      if (args[0] === 'add') {
        const pos: string[] = [];
        let named = false;
        for (let k = 1; k < args.length; k++) {
          const x = args[k] as string;
          if (x === '-b' || x === '-B' || x === '--orphan') {
            named = true;
            if (namesDefaultBranch(args[k + 1] ?? '', a.context)) denyDefault(a, `git worktree ${args.join(' ')}`);
            k += 1;
          } else if (x === '--reason') k += 1;
          else if (x === '--detach' || x === '-d') named = true;
          else if (!x.startsWith('-')) pos.push(x);
        }
        // `git worktree add <path> <default>` checks the default branch out where commits move it
        if (!named && pos[1] !== undefined && pos[1] !== 'HEAD' && namesDefaultBranch(pos[1], a.context)) denyDefault(a, `git worktree ${args.join(' ')}`);
      }
      if (args[0] === 'remove' || args[0] === 'prune' || args[0] === 'move') {
        deny(a, 'blast_radius.worktree', `git worktree ${args[0]} can destroy another worker's worktree; Polly manages worktrees`);
      }
      if (args[0] !== 'list') a.mutate('git worktree');
      return;
    case 'checkout':
    case 'switch':
    case 'restore':
      if ((sub === 'checkout' || sub === 'switch') && (args.includes('-f') || args.some((x) => /^--(f|fo|for|forc|force)$/.test(x) || /^-[a-zA-Z]*f/.test(x) && !x.startsWith('--')))) {
        deny(a, 'blast_radius.discard', `git ${sub} --force throws away uncommitted changes (${args.join(' ')})`);
      }
      if (sub !== 'restore') checkSwitchTarget(sub, args, a);
      a.mutate(`git ${sub}`);
      return;
    case 'clone': {
      const pos = args.filter((x) => !x.startsWith('-'));
      if (pos.length >= 2) {
        const dir = pos[pos.length - 1] as string;
        a.write(dir, resolvePath(dir, st.cwd, a.context.home));
      }
      a.mutate('git clone');
      return;
    }
    default:
      if (READ_ONLY.has(sub)) {
        for (const x of args) {
          const m = /^--output=(.*)$/.exec(x);
          if (m) a.write(m[1] as string, resolvePath(m[1] as string, st.cwd, a.context.home));
        }
        return;
      }
      if (sub === 'tag' && (args.length === 0 || args.includes('-l') || args.includes('--list'))) return;
      if (sub === 'remote' && (args.length === 0 || args[0] === '-v' || args[0] === 'show' || args[0] === 'get-url')) return;
      if (sub === 'notes' && (args[0] === 'list' || args[0] === 'show')) return;
      if (sub === 'submodule' && args[0] === 'status') return;
      a.mutate(`git ${sub}`);
  }
}

/**
 * `git checkout`/`git switch` onto the default branch: `-b/-B/-c/-C/--orphan <default>` creates or
 * resets it, and a lone `<default>` (no pathspec) switches the worktree to it so later commits move it.
 */
function checkSwitchTarget(sub: string, args: string[], a: Analyzer): void {
  const spelled = `git ${sub} ${args.join(' ')}`;
  const withValue = new Set(['-b', '-B', '-c', '-C', '--orphan', '--create', '--force-create']);
  const skipValue = new Set(['--conflict', '--pathspec-from-file', '--track', '-t']);
  const pos: string[] = [];
  for (let k = 0; k < args.length; k++) {
    const x = args[k] as string;
    if (x === '--') {
      if (pos.length === 0 && sub === 'checkout') return; // `git checkout -- <paths>` restores files
      break;
    }
    const eq = x.indexOf('=');
    const flag = x.startsWith('--') && eq > 0 ? x.slice(0, eq) : x;
    if (withValue.has(flag) || /^-[a-zA-Z]*[bBcC]$/.test(x) && !x.startsWith('--')) {
      const v = eq > 0 && x.startsWith('--') ? x.slice(eq + 1) : args[k + 1] ?? '';
      if (!(eq > 0 && x.startsWith('--'))) k += 1;
      if (namesDefaultBranch(v, a.context)) return denyDefault(a, spelled);
      continue;
    }
    if (x.startsWith('--') && eq > 0) continue;
    if (skipValue.has(x)) continue;
    if (x.startsWith('-')) continue;
    pos.push(x);
  }
  const detach = args.includes('--detach') || args.includes('-d') && sub === 'switch';
  const pathspec = args.includes('--') || pos.length > 1;
  if (!detach && !pathspec && pos.length === 1 && pos[0] !== 'HEAD' && pos[0] !== '@' && namesDefaultBranch(pos[0] as string, a.context)) denyDefault(a, spelled);
}

function refName(ref: string): string {
  return ref.replace(/^refs\/heads\//, '').replace(/^heads\//, '');
}

function analyzePush(args: string[], st: GitState, a: Analyzer): void {
  a.mutate('git push');
  const ctx = a.context;
  const o = { force: false, mirror: false, del: false, prune: false, all: false, tags: false };
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (arg.includes(UNKNOWN) && arg.startsWith('-')) return deny(a, 'blast_radius.unresolved_command', `git push option ${JSON.stringify(arg.replace(/\u0000/g, '…'))} is produced at run time`);
    if (arg.startsWith('--')) {
      const m = matchLong(arg, PUSH_LONG);
      if (m.names.length === 0) {
        deny(a, 'blast_radius.unresolved_command', `unknown git push option ${JSON.stringify(arg)}`);
        return;
      }
      for (const n of m.names) {
        if (n === 'force' || n === 'force-with-lease' || n === 'force-if-includes') o.force = true;
        if (n === 'mirror') o.mirror = true;
        if (n === 'delete') o.del = true;
        if (n === 'prune') o.prune = true;
        if (n === 'all' || n === 'branches') o.all = true;
        if (n === 'tags') o.tags = true;
      }
      if (m.names.length === 1 && m.value === null && PUSH_VALUE.has(m.names[0] as string)) i += 1;
    } else if (arg.startsWith('-') && arg.length > 1) {
      for (let j = 1; j < arg.length; j++) {
        const c = arg[j];
        if (c === 'f') o.force = true;
        else if (c === 'd') o.del = true;
        else if (c === 'o') {
          if (j === arg.length - 1) i += 1;
          break;
        }
      }
    } else positionals.push(arg);
  }
  const spelled = `git push ${args.join(' ')}`;
  if (o.force) return deny(a, 'blast_radius.force_push', `${spelled} forces the update and rewrites remote history; push without force (rebase or merge first)`);
  if (o.mirror) return deny(a, 'blast_radius.force_push', `${spelled} mirrors every ref, overwriting and deleting remote branches`);
  if (o.del) return deny(a, 'blast_radius.delete_remote_branch', `${spelled} deletes a remote branch`);
  if (o.prune) return deny(a, 'blast_radius.delete_remote_branch', `${spelled} deletes remote branches that have no local counterpart`);
  if (o.all) return deny(a, 'blast_radius.push_default_branch', `${spelled} pushes every branch, including ${ctx.defaultBranch}`);
  if (o.tags) return deny(a, 'blast_radius.push_other_branch', `${spelled} pushes every tag; a worker pushes only its own branch ${ctx.branch}`);
  const unresolved = positionals.find((x) => x.includes(UNKNOWN));
  if (unresolved !== undefined) return deny(a, 'blast_radius.unresolved_command', `${spelled}: ${JSON.stringify(unresolved.replace(/\u0000/g, '…'))} is produced at run time; push a literal remote and branch`);
  const refspecs = positionals.slice(1);
  if (refspecs.length === 0) {
    if (ctx.branch === ctx.defaultBranch) return deny(a, 'blast_radius.push_default_branch', `${spelled} pushes the current branch, which is the default branch ${ctx.defaultBranch}`);
  }
  for (const spec of refspecs) {
    if (spec.startsWith('+')) return deny(a, 'blast_radius.force_push', `refspec ${JSON.stringify(spec)} starts with + and forces the update`);
    if (spec.startsWith('^')) continue;
    const colon = spec.indexOf(':');
    const src = colon < 0 ? spec : spec.slice(0, colon);
    let dst = colon < 0 ? spec : spec.slice(colon + 1);
    if (colon >= 0 && src === '') return deny(a, 'blast_radius.delete_remote_branch', `refspec ${JSON.stringify(spec)} has an empty source and deletes the remote branch ${refName(dst)}`);
    if (colon < 0 && (src === 'HEAD' || src === '@')) dst = ctx.branch;
    if (colon >= 0 && dst === '') dst = src === 'HEAD' || src === '@' ? ctx.branch : src;
    const name = dst === 'HEAD' ? ctx.defaultBranch : refName(dst);
    if (name === ctx.defaultBranch || (name.includes('*') && !dst.startsWith('refs/tags/'))) {
      return deny(a, 'blast_radius.push_default_branch', `refspec ${JSON.stringify(spec)} pushes to the default branch ${ctx.defaultBranch}: nothing is pushed there; push ${ctx.branch} and open a PR`);
    }
    if (name !== ctx.branch || dst.startsWith('refs/') && !dst.startsWith('refs/heads/')) {
      return deny(a, 'blast_radius.push_other_branch', `refspec ${JSON.stringify(spec)} pushes to ${dst}, not this task's branch ${ctx.branch}: a worker pushes only its own branch`);
    }
  }
  if (a.policy.blast_radius.gate_pushes) {
    a.finding({ decision: 'ask', rule: 'blast_radius.gate_pushes', reason: `${spelled}: every push needs approval (blast_radius.gate_pushes: true)` });
  }
}

const CONFIG_READ = new Set(['--get', '--get-all', '--get-regexp', '--get-urlmatch', '--list', '-l', '--get-color', '--get-colorbool', '--show-origin', '--show-scope', '--name-only']);

function analyzeConfig(args: string[], st: GitState, a: Analyzer): void {
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
  if (file !== null) a.write(file, resolvePath(file, st.cwd, a.context.home));
  else if (scope === 'global') a.write('~/.gitconfig', `${a.context.home}/.gitconfig`);
  else if (scope === 'system') a.write('/etc/gitconfig', '/etc/gitconfig');
  a.mutate('git config');
}
