/**
 * git's own argument grammar, modelled for the gate: global options (`-C`, `-c`, `--git-dir`,
 * `--config-env`, `--exec-path`), `-c alias.*` definitions (expanded, `!` aliases analysed as shell),
 * unique prefixes of long options, bundled short flags, and push refspecs (`+src:dst`, `:dst`,
 * `HEAD` resolved to the context's branch). This file reads git's global options and expands
 * aliases; each subcommand's own grammar is a flag table (git-flag-specs.ts) read by one parser
 * (git-options.ts) and a small detector per subcommand (git-subcommands.ts, git-push.ts,
 * git-config.ts). Source of the grammar: git-scm.com/docs/git (OPTIONS), git-config (alias.*).
 */
import { UNKNOWN, isUnder, resolvePath } from '../paths.js';
import { denyInlineCodeForReadOnly } from '../policy.js';
import type { Analyzer } from '../types.js';
import { configKey, dangerousConfig, noOpProgramSetting } from './git-config.js';
import { GLOBAL } from './git-flag-specs.js';
import { tokenize } from './git-options.js';
import { deny } from './git-refs.js';
import { type GitState, analyzeSubcommand } from './git-subcommands.js';

const BUILTINS = new Set(
  (
    'add am annotate apply archive bisect blame branch bundle cat-file check-attr check-ignore check-mailmap check-ref-format checkout ' +
    'checkout-index cherry cherry-pick citool clean clone column commit commit-graph commit-tree config count-objects credential describe ' +
    'diff diff-files diff-index diff-tree difftool fast-export fast-import fetch fetch-pack filter-branch filter-repo fmt-merge-msg for-each-ref ' +
    'for-each-repo format-patch fsck gc get-tar-commit-id grep gui hash-object help index-pack init instaweb interpret-trailers log ls-files ' +
    'ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-tree mergetool mktag mktree ' +
    'multi-pack-index mv name-rev notes pack-objects pack-refs patch-id prune prune-packed pull push range-diff read-tree rebase reflog ' +
    'remote repack replace request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack shortlog show show-branch ' +
    'show-index show-ref sparse-checkout stash status stripspace submodule switch symbolic-ref tag unpack-file unpack-objects update-index ' +
    'update-ref update-server-info var verify-commit verify-pack verify-tag version whatchanged worktree write-tree lfs'
  ).split(' '),
);

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

/** Values that switch a program-running setting off (`core.hooksPath=/dev/null`, `core.fsmonitor=false`). */
const DISABLING = new Set(['', 'false', '0', 'no', 'off', '/dev/null', 'cat']);

/**
 * Analyse `git <args>` (args after the program name). Reports to `a`.
 */
export function analyzeGit(args: string[], cwd: string | null, depth: number, a: Analyzer, state?: GitState): void {
  const st: GitState = state ?? { cwd, configs: new Map(), depth };
  const globals = tokenize(args, GLOBAL, { longPrefixes: false, bundling: false, stopAtPositional: true });
  for (const o of globals.options) {
    if (o.raw.includes(UNKNOWN)) {
      deny(a, 'blast_radius.unresolved_command', `git option ${JSON.stringify(o.raw.replace(/\u0000/g, '…'))} cannot be resolved before it runs`);
      return;
    }
    const name = o.names[0];
    if (name === undefined) {
      deny(a, 'blast_radius.unresolved_command', `unknown git global option ${JSON.stringify(o.raw)}: the gate does not guess what it does`);
      return;
    }
    if (name === 'C') st.cwd = resolvePath(o.value, st.cwd, a.context.home);
    else if (name === 'c') {
      const eq = o.value.indexOf('=');
      const key = eq < 0 ? o.value : o.value.slice(0, eq);
      const value = eq < 0 ? 'true' : o.value.slice(eq + 1);
      if (/^alias\./i.test(key)) st.configs.set(`alias.${key.slice(6)}`, value);
      else if (dangerousConfig(key) && !noOpProgramSetting(key, value)) (st.risky ??= []).push({ name: key, value });
      else st.configs.set(configKey(key), value);
    } else if (name === 'config-env') {
      const key = o.value.slice(0, Math.max(0, o.value.indexOf('=')));
      if (/^alias\./i.test(key) || dangerousConfig(key)) {
        deny(
          a,
          'blast_radius.git_config',
          `git --config-env=${key}=… takes a value the gate cannot see and ${/^alias\./i.test(key) ? 'defines an alias' : 'changes what git runs'}`,
        );
        return;
      }
    } else if (name === 'exec-path' && o.inline) {
      deny(a, 'blast_radius.git_config', `git --exec-path=${o.value} runs git's helpers from another directory`);
      return;
    } else if (name === 'git-dir') st.gitDir = resolvePath(o.value, st.cwd, a.context.home);
    else if (name === 'work-tree') st.workTree = resolvePath(o.value, st.cwd, a.context.home);
  }
  if (globals.afterDashDash !== null) {
    deny(a, 'blast_radius.unresolved_command', 'unknown git global option "--": the gate does not guess what it does');
    return;
  }
  const i = globals.next;
  if ((args[i] ?? '').includes(UNKNOWN)) {
    deny(a, 'blast_radius.unresolved_command', `git option ${JSON.stringify((args[i] as string).replace(/\u0000/g, '…'))} cannot be resolved before it runs`);
    return;
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
      if (denyInlineCodeForReadOnly(a, `git alias ${sub}, a shell command`)) return;
      a.script([alias.slice(1), ...rest.map(shellQuote)].join(' '), st.cwd, depth + 1, `git alias ${sub}`);
      return;
    }
    const words = splitCmdline(alias);
    analyzeGit([...words, ...rest], st.cwd, depth + 1, a, {
      cwd: st.cwd,
      gitDir: st.gitDir,
      workTree: st.workTree,
      configs: new Map([...st.configs].filter(([k]) => k !== `alias.${sub}`)),
    });
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
  const probe: Analyzer = {
    ...a,
    finding: (f) => a.finding(f),
    write: (r, p, c) => a.write(r, p, c),
    mutate: (w) => {
      mutated = true;
      a.mutate(w);
    },
    script: a.script,
    exec: a.exec,
  };
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
  const places: Array<[string, string | null | undefined]> = [
    ['working directory', st.cwd],
    ['--git-dir', st.gitDir],
    ['--work-tree', st.workTree],
  ];
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
