/**
 * Rules for individual commands (after wrappers are stripped): file writers and deleters (`rm`,
 * `find -delete`, `mv`, `cp`, `ln`, `tee`, `sed -i`, …), `gh` (gh-grammar.ts), HTTP clients hitting
 * merge endpoints or writing to a forge API (forge-http.ts), interpreter one-liners (a change for
 * read-only roles), and the read-only command set. Pure; reports to an Analyzer.
 */
import { analyzeGit } from '../git/git-grammar.js';
import { forgeWriteUrl } from './forge-http.js';
import { analyzeGh, analyzeGlab, analyzeHub, denyForgeWrite, mentionsMerge } from './gh-grammar.js';
import { UNKNOWN, globPrefix, isTempPath, isUnder, protectedReason, resolvePath } from '../paths.js';
import { denyInlineCodeForReadOnly } from '../policy.js';
import { deletableUnderSandbox, embeddedCommands, sandboxHolds } from '../sandbox-leeway.js';
import type { Analyzer, ExecFlags } from '../types.js';

const deny = (a: Analyzer, rule: string, reason: string): void => a.finding({ decision: 'deny', rule, reason });
const show = (s: string): string => JSON.stringify(s.replace(/\u0000/g, '…'));

/** Commands that only read (given no write flags): allowed for read-only roles and the Brain. */
const READ_ONLY = new Set(
  (
    'cat less more head tail ls ll la tree pwd echo printf grep egrep fgrep rg ag ack fd wc sort uniq cut tr diff cmp comm file stat du df ' +
    'which whereis type true false test [ [[ date printenv env basename dirname realpath readlink jq yq nl column fold fmt paste join expand ' +
    'unexpand rev tac od hexdump xxd strings sha1sum sha256sum sha512sum md5sum shasum cksum b2sum base64 base32 sleep id whoami uname ' +
    'hostname ps uptime cd pushd popd : export set unset local read shift wait seq yes expr bc tput locale getconf nproc free lsof ' +
    'git-status tokei cloc scc wc look zcat zgrep bzcat xzcat less'
  ).split(' '),
);

/** Interpreters and their inline-code flags. */
const INTERPRETERS: Record<string, { flags: string[]; lang: string }> = {
  python: { flags: ['-c'], lang: 'python' },
  node: { flags: ['-e', '--eval', '-p', '--print'], lang: 'js' },
  nodejs: { flags: ['-e', '--eval', '-p', '--print'], lang: 'js' },
  bun: { flags: ['-e', '--eval', '-p', '--print'], lang: 'js' },
  deno: { flags: ['eval'], lang: 'js' },
  perl: { flags: ['-e', '-E'], lang: 'perl' },
  ruby: { flags: ['-e'], lang: 'ruby' },
  php: { flags: ['-r'], lang: 'php' },
  lua: { flags: ['-e'], lang: 'lua' },
  luajit: { flags: ['-e'], lang: 'lua' },
  Rscript: { flags: ['-e'], lang: 'r' },
  osascript: { flags: ['-e'], lang: 'applescript' },
  tclsh: { flags: [], lang: 'tcl' },
  pwsh: { flags: ['-c', '-Command', '-command'], lang: 'ps' },
};

/** Code constructs that run other programs or evaluate generated code. */
const RUNS_COMMANDS =
  /\b(system|exec[a-z]*|spawn[a-z]*|popen[0-9]?|subprocess|child_process|execSync|execFile|fork|pty|os\.exec|Popen|call|check_call|check_output|run|eval|compile|__import__|import_module|importlib|Function|shell_exec|passthru|proc_open|backticks|IO\.popen|Open3|Kernel|Deno\.Command|Deno\.run|Bun\.spawn|\$\.spawn|do shell script|getattr|globals|builtins|require\s*\(\s*[^'"\s])\b|`|%x\{|%x\(|qx[{(/|]/;
/** Code constructs that change files. */
const CHANGES_FILES =
  /\b(write\w*|unlink\w*|rmtree|rmSync|rmdir\w*|remove|rename\w*|mkdir\w*|copy\w*|cpSync|move|truncate\w*|chmod\w*|chown\w*|symlink\w*|link\w*|FileUtils|shutil|fopen|file_put_contents|touch|utime[s]?|append\w*|syswrite|print\s*\{?\s*\$?[A-Z]+)\b|open\s*\([^)]*,\s*(mode\s*=\s*)?['"][^'"]*[wax+]|open\s*\(\s*[A-Z]*\s*,\s*['"]?[>+]/;
/** Ways to build a path the gate cannot read in the code (string building, decoding). */
const OBFUSCATED =
  /\bchr\s*\(|fromCharCode|\\x[0-9a-f]{2}|\\u00|\\[0-7]{3}|atob|b64decode|base64|unhexlify|codecs|rot13|decode\s*\(|Buffer\.from|\[\s*::\s*-1\s*\]|reverse\s*\(|getattr|join\s*\(|['"]\s*\+\s*['"]|\+\s*['"]\.|%\s*\(|\.format\s*\(|\$\{|`/;
/** Absolute paths written as string literals. */
const ABS_LITERAL = /['"](\/[^'"\s]*)['"]/g;
const PROTECTED_MENTION = /(^|[^\w])\.(git|claude|codex|pi|polly|husky|githooks)([^\w]|$)|hooksPath|core\.hooks/i;

function interpreterName(base: string): string | null {
  if (INTERPRETERS[base]) return base;
  const m = /^(python|pypy|ruby|perl|php|node|lua)[0-9.]*$/.exec(base);
  if (m) return m[1] === 'pypy' ? 'python' : (m[1] as string);
  return null;
}

/** Folds string concatenation of literals (`'.'+'gi'+'t/hooks'` → `'.git/hooks'`) so what it spells can be read. */
const foldLiterals = (code: string): string => code.replace(/['"]\s*\+\s*['"]/g, '');
/** Protected names a path built at run time may spell without its leading dot (`chr(46)+'claude/settings.json'`). */
const PROTECTED_STEM = /(^|[^\w.-])(git|claude|codex|pi|polly|husky|githooks)\/|hooksPath|\/hooks\/|settings(\.local)?\.json/i;

/**
 * Judge inline interpreter code (python -c, node -e, perl -e …). A heuristic layer over code the
 * gate cannot execute: it denies code that runs programs or evaluates generated code, calls merge
 * endpoints, or mentions protected names; code that changes files is allowed (for implementers)
 * only when every path it could touch is visible: no string building or decoding, and absolute
 * path literals only inside the worktree or temp dirs. Inside the sandbox (../sandbox-leeway.ts),
 * code that runs programs, builds paths or holds expansions is left to the sandbox, but every
 * command its string literals spell is judged, and a seed policy one of them names is denied.
 */
function analyzeCode(code: string, what: string, cwd: string | null, depth: number, a: Analyzer): void {
  const leeway = sandboxHolds(a.role, a.context) && cwd !== null && isUnder(cwd, a.context.worktree);
  if (code.includes(UNKNOWN) && !leeway) return deny(a, 'blast_radius.interpreter', `${what} code is produced at run time and cannot be checked`);
  const visible = code.split(UNKNOWN).join(' ');
  if (RUNS_COMMANDS.test(visible)) {
    if (!leeway) return deny(a, 'blast_radius.interpreter', `${what} one-liner runs other programs or evaluates generated code; run the command directly so the gate can check it`);
    for (const cmd of embeddedCommands(visible)) {
      const f = a.probe(cmd, cwd, depth + 1);
      if (f) return deny(a, f.rule, `${what} one-liner runs ${show(cmd.length > 120 ? `${cmd.slice(0, 120)}…` : cmd)}: ${f.reason}`);
    }
  }
  if (mentionsMerge(visible)) return deny(a, 'blast_radius.merge', `${what} one-liner calls a merge endpoint or mutation: Polly never merges`);
  if (PROTECTED_MENTION.test(visible)) return deny(a, 'blast_radius.protected_path', `${what} one-liner touches git metadata or agent/gate settings`);
  if (!CHANGES_FILES.test(visible)) return;
  a.mutate(`${what} one-liner that changes files`);
  if (OBFUSCATED.test(visible)) {
    if (!leeway) return deny(a, 'blast_radius.interpreter', `${what} one-liner changes files at paths it builds at run time; write files with the edit tools or a script file`);
    const folded = foldLiterals(visible);
    if (PROTECTED_MENTION.test(folded) || PROTECTED_STEM.test(folded))
      return deny(a, 'blast_radius.protected_path', `${what} one-liner builds a path that spells git metadata, a hook or an agent's settings`);
  }
  for (const m of visible.matchAll(ABS_LITERAL)) {
    const raw = m[1] as string;
    if (raw === '/' || raw.length > 1) a.write(raw, resolvePath(raw, cwd, a.context.home), cwd);
  }
}

function analyzeInterpreter(lang: string, argv: string[], cwd: string | null, depth: number, flags: ExecFlags, a: Analyzer): void {
  const spec = INTERPRETERS[lang] as { flags: string[] };
  const base = argv[0] as string;
  let inPlace = false;
  for (let i = 1; i < argv.length; i++) {
    const x = argv[i] as string;
    if (x === '--') break;
    if ((lang === 'perl' || lang === 'ruby') && /^-[a-zA-Z]*i/.test(x)) {
      inPlace = true;
      a.mutate(`${base} -i edits files in place`);
    }
    const bundled =
      (lang === 'perl' || lang === 'ruby') && /^-[a-zA-Z]*[eE]$/.test(x)
        ? '-e'
        : lang === 'python' && /^-[a-zA-Z]*c$/.test(x)
          ? '-c'
          : INTERPRETERS[lang]?.lang === 'js' && /^-(pe|ep)$/.test(x)
            ? '-e'
            : null;
    if (spec.flags.includes(x) || bundled) {
      if (denyInlineCodeForReadOnly(a, `${base} ${x}`)) return;
      analyzeCode(argv[i + 1] ?? '', `${base} ${x}`, cwd, depth, a);
      if (inPlace) for (const f of argv.slice(i + 2).filter((y) => !y.startsWith('-'))) a.write(f, resolvePath(f, cwd, a.context.home), cwd);
      return;
    }
    const eq = spec.flags.find((f) => f.startsWith('--') && x.startsWith(`${f}=`));
    if (eq) return denyInlineCodeForReadOnly(a, `${base} ${eq}`) ? undefined : analyzeCode(x.slice(eq.length + 1), `${base} ${eq}`, cwd, depth, a);
    if (lang === 'python' && x === '-m') {
      a.mutate(`${base} -m ${argv[i + 1] ?? ''}`);
      return;
    }
    if (!x.startsWith('-')) {
      a.mutate(`${base} runs ${x}`); // a script file: the agent's own code
      return;
    }
  }
  if (flags.stdinText != null)
    return denyInlineCodeForReadOnly(a, `${base} reading a here-document`) ? undefined : analyzeCode(flags.stdinText, `${base} reading a here-document`, cwd, depth, a);
  if (flags.stdinFromPipe) return deny(a, 'blast_radius.hidden_command', `${base} reads its program from a pipe; the gate cannot check code it does not see`);
  a.mutate(base);
}

/** rm and friends: what is deleted, and whether recursively. */
function analyzeRm(argv: string[], cwd: string | null, flags: ExecFlags, a: Analyzer): void {
  let recursive = false;
  const targets: string[] = [];
  let endOpts = false;
  for (const x of argv.slice(1)) {
    if (!endOpts && x === '--') {
      endOpts = true;
      continue;
    }
    if (!endOpts && x.startsWith('--')) {
      if ('--recursive'.startsWith(x) && x.length > 3) recursive = true;
      if (x === '--no-preserve-root') return deny(a, 'blast_radius.rm', `rm --no-preserve-root exists to delete /`);
      continue;
    }
    if (!endOpts && x.startsWith('-') && x.length > 1) {
      if (/[rR]/.test(x)) recursive = true;
      continue;
    }
    targets.push(x);
  }
  a.mutate('rm');
  if (flags.argsFromStdin) {
    if (recursive) return deny(a, 'blast_radius.rm', `rm -r with targets read from input at run time: the gate cannot see what is deleted`);
    a.write('(targets from input)', null, cwd);
    return;
  }
  for (const t of targets) checkDelete(t, recursive, cwd, a, 'rm');
}

/** A deletion of `raw` (recursive or not) resolved against `cwd`. */
function checkDelete(raw: string, recursive: boolean, cwd: string | null, a: Analyzer, what: string): void {
  const ctx = a.context;
  const path = resolvePath(raw, cwd, ctx.home);
  if (path === null) {
    // Under the sandbox a target ending in a literal name ("$TMPDIR/cache") is left to it; one
    // wholly produced at run time ("$X", "$X"/*) could be / or ~ (./../sandbox-leeway.ts).
    if (recursive && !(sandboxHolds(a.role, ctx) && deletableUnderSandbox(raw, cwd, ctx)))
      return deny(
        a,
        'blast_radius.rm',
        `${what} -r ${show(raw)}: the target cannot be resolved before it runs${ctx.sandboxed ? ', and it could be / or ~; end it in a literal name' : ''}`,
      );
    a.write(raw, null, cwd);
    return;
  }
  const g = globPrefix(path);
  const base = g.prefix;
  if (recursive || g.glob) {
    if (base === '/' && !g.glob) return deny(a, 'blast_radius.rm', `${what} -r / deletes the whole file system`);
    if (base === ctx.home || base === '/' || (isUnder(ctx.home, base) && !g.glob))
      return deny(a, 'blast_radius.rm', `${what} ${show(raw)} deletes ${base === ctx.home ? 'the home directory' : base}`);
    for (const keep of [ctx.worktree, ctx.repoRoot, ctx.home]) {
      if (isUnder(keep, base) && (!g.glob || g.firstGlobSegment.startsWith('.') || base !== ctx.worktree)) {
        return deny(
          a,
          'blast_radius.rm',
          `${what} ${show(raw)} would delete ${keep === ctx.home ? 'the home directory' : keep === ctx.repoRoot ? 'the repository' : 'the worktree itself'} (${base})`,
        );
      }
    }
    if (g.glob && base === ctx.worktree && g.firstGlobSegment.startsWith('.')) return deny(a, 'blast_radius.rm', `${what} ${show(raw)} matches .git in the worktree`);
  }
  a.write(raw, g.glob ? `${base}/${g.firstGlobSegment.replace(/[*?[\]]/g, '_')}` : path, cwd);
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (const c of glob) re += c === '*' ? '.*' : c === '?' ? '.' : /[\\^$.|+(){}[\]]/.test(c) ? `\\${c}` : c;
  return new RegExp(`^${re}$`);
}

/**
 * find: `-delete` and `-exec`/`-execdir`/`-ok` run on what the expression matches under the start
 * paths. Without a -name/-path test the start directory itself matches; a pattern that can match a
 * protected name (.git, .claude, …) is treated as matching it.
 */
function analyzeFind(argv: string[], cwd: string | null, depth: number, flags: ExecFlags, a: Analyzer): void {
  let i = 1;
  while (i < argv.length && /^-[HLP]$|^-D$|^-O\d*$/.test(argv[i] as string)) i += argv[i] === '-D' ? 2 : 1;
  const starts: string[] = [];
  while (i < argv.length && !(argv[i] as string).startsWith('-') && argv[i] !== '(' && argv[i] !== '!') starts.push(argv[i++] as string);
  if (starts.length === 0) starts.push('.');
  const patterns: string[] = [];
  for (let k = i; k < argv.length; k++) {
    if (['-name', '-iname', '-path', '-ipath', '-wholename', '-regex', '-iregex'].includes(argv[k] as string)) patterns.push(argv[k + 1] ?? '*');
  }
  const protectedNames = ['.git', '.claude', '.codex', '.pi', '.polly', '.husky', '.githooks', 'hooks'];
  const matchesProtected =
    patterns.length === 0 ||
    patterns.some((p) => {
      const last = p.split('/').filter(Boolean).pop() ?? p;
      try {
        const re = globToRegExp(last);
        return protectedNames.some((n) => re.test(n)) || /\.git|\.claude|\.codex|\.polly/.test(p);
      } catch {
        return true;
      }
    });
  const target = (start: string): string => {
    const p = resolvePath(start, cwd, a.context.home);
    if (p === null) return UNKNOWN;
    if (patterns.length === 0) return p;
    return `${p === '/' ? '' : p}/${matchesProtected ? '.git' : 'match'}`;
  };
  let mutating = false;
  for (; i < argv.length; i++) {
    const x = argv[i] as string;
    if (x === '-delete') {
      mutating = true;
      for (const s of starts) checkDelete(target(s), true, cwd, a, 'find -delete');
    } else if (x === '-exec' || x === '-execdir' || x === '-ok' || x === '-okdir') {
      const end = argv.findIndex((y, k) => k > i && (y === ';' || y === '+'));
      const cmd = argv.slice(i + 1, end < 0 ? undefined : end);
      i = end < 0 ? argv.length : end;
      for (const s of starts) {
        const placeholder = target(s);
        a.exec(
          cmd.map((w) => w.split('{}').join(placeholder)),
          cwd,
          depth + 1,
          { ...flags, argsFromStdin: cmd.every((w) => !w.includes('{}')) ? flags.argsFromStdin : false },
        );
      }
    } else if (x === '-fprint' || x === '-fprint0' || x === '-fprintf' || x === '-fls') {
      const f = argv[i + 1] ?? '';
      a.write(f, resolvePath(f, cwd, a.context.home), cwd);
      i += x === '-fprintf' ? 2 : 1;
    }
  }
  if (mutating) a.mutate('find -delete');
}

/** Commands whose positional arguments (after options) are written. */
function analyzeWriters(base: string, argv: string[], cwd: string | null, flags: ExecFlags, a: Analyzer): boolean {
  const home = a.context.home;
  const positionals = (valueOpts: string[] = []): string[] => {
    const out: string[] = [];
    let end = false;
    for (let i = 1; i < argv.length; i++) {
      const x = argv[i] as string;
      if (!end && x === '--') {
        end = true;
        continue;
      }
      if (!end && x.startsWith('-') && x.length > 1) {
        if (valueOpts.includes(x)) i += 1;
        continue;
      }
      out.push(x);
    }
    return out;
  };
  const w = (raw: string): void => a.write(raw, resolvePath(raw, cwd, home), cwd);
  switch (base) {
    case 'touch':
    case 'mkdir':
    case 'truncate':
    case 'shred':
    case 'unlink':
    case 'rmdir':
      a.mutate(base);
      for (const p of positionals(['-s', '--size', '-r', '--reference', '-d', '-t', '-m', '--mode', '-n', '--iterations'])) w(p);
      if (flags.argsFromStdin) a.write('(targets from input)', null, cwd);
      return true;
    case 'chmod':
    case 'chown':
    case 'chgrp': {
      a.mutate(base);
      const ps = positionals(['--reference']);
      for (const p of ps.slice(1)) w(p);
      if (flags.argsFromStdin) a.write('(targets from input)', null, cwd);
      return true;
    }
    case 'tee':
      a.mutate('tee');
      for (const p of positionals()) w(p);
      return true;
    case 'cp':
    case 'mv':
    case 'install':
    case 'rsync': {
      a.mutate(base);
      const tIdx = argv.findIndex((x) => x === '-t' || x.startsWith('--target-directory'));
      const ps = positionals(['-S', '--suffix', '-m', '--mode', '-o', '-g', '--owner', '--group', '-e', '--exclude', '--include']);
      if (tIdx > 0) {
        const t = argv[tIdx] === '-t' ? (argv[tIdx + 1] ?? '') : ((argv[tIdx] as string).split('=')[1] ?? '');
        w(t);
      } else if (ps.length > 0) w(ps[ps.length - 1] as string);
      else if (flags.argsFromStdin) a.write('(target from input)', null, cwd);
      if (base === 'mv') for (const p of ps.slice(0, -1)) checkDelete(p, true, cwd, a, 'mv');
      if (flags.argsFromStdin && tIdx < 0) a.write('(target from input)', null, cwd);
      return true;
    }
    case 'ln': {
      a.mutate('ln');
      const ps = positionals(['-S', '--suffix', '-t', '--target-directory']);
      const target = ps[0];
      const link = ps.length >= 2 ? (ps[ps.length - 1] as string) : target ? (target.split('/').pop() as string) : '';
      if (target !== undefined) {
        // a symlink pointing at a protected place is a write path into it
        const linkPath = resolvePath(link, cwd, home);
        const linkDir = linkPath === null ? cwd : linkPath.replace(/\/[^/]*$/, '') || '/';
        const tgt = resolvePath(target, target.startsWith('/') || target.startsWith('~') ? cwd : linkDir, home);
        if (tgt !== null && protectedReason(tgt, a.context) === null && !isUnder(tgt, a.context.worktree) && !isTempPath(tgt, a.context)) {
          deny(a, 'blast_radius.outside_worktree', `ln ${show(target)}: a symlink to ${tgt}, outside the worktree, would let later writes escape it`);
        }
        a.write(target, tgt, cwd);
      }
      w(link);
      return true;
    }
    case 'dd':
      a.mutate('dd');
      for (const x of argv.slice(1)) if (x.startsWith('of=')) w(x.slice(3));
      return true;
    case 'sed': {
      const inPlace = argv.some((x) => (/^-[a-zA-Z]*i/.test(x) && !x.startsWith('--')) || x.startsWith('--in-place'));
      const scriptWrites = argv.some((x) => /(^|[;}\s])w\s|\/w\s|\be\b/.test(x) && x !== argv[0]);
      if (!inPlace && !scriptWrites) return true;
      a.mutate('sed -i');
      const ps = positionals(['-e', '-f', '--expression', '--file', '-l', '--line-length']);
      const hasScriptOpt = argv.some((x) => x === '-e' || x === '-f' || x.startsWith('--expression') || x.startsWith('--file'));
      for (const p of hasScriptOpt ? ps : ps.slice(1)) w(p);
      return true;
    }
    case 'tar': {
      a.mutate('tar');
      const extract = argv.slice(1).some((x) => x === '--extract' || x === '--get' || (/^-?[a-zA-Z]*x/.test(x) && !x.startsWith('--')));
      const create = argv.slice(1).find((x, k) => x === '-f' || x === '--file' || (/^-?[a-zA-Z]*f$/.test(x) && !x.startsWith('--') && k === 0));
      let dir: string | null = null;
      for (let i = 1; i < argv.length; i++) {
        const x = argv[i] as string;
        if (x === '-C' || x === '--directory') dir = argv[i + 1] ?? '';
        else if (x.startsWith('--directory=')) dir = x.slice(12);
      }
      if (extract) {
        const d = dir ?? '.';
        const p = resolvePath(d, cwd, home);
        a.write(`${d}/…`, p === null ? null : `${p}/extracted`, cwd);
      } else if (create) {
        const i = argv.indexOf(create);
        const f = argv[i + 1];
        if (f !== undefined && f !== '-') w(f);
      }
      return true;
    }
    case 'unzip': {
      a.mutate('unzip');
      const i = argv.indexOf('-d');
      const d = i > 0 ? (argv[i + 1] ?? '') : '.';
      const p = resolvePath(d, cwd, home);
      a.write(`${d}/…`, p === null ? null : `${p}/extracted`, cwd);
      return true;
    }
    case 'patch':
    case 'zip':
    case 'gzip':
    case 'gunzip':
    case 'make':
    case 'cmake':
    case 'ninja':
      a.mutate(base);
      return true;
    default:
      return false;
  }
}

function analyzeHttp(base: string, args: string[], cwd: string | null, a: Analyzer): void {
  const all = args.join(' ');
  if (mentionsMerge(all)) return deny(a, 'blast_radius.merge', `${base} to a merge endpoint or with a merge mutation: Polly never merges`);
  const url = args.find((x) => /^https?:\/\//.test(x)) ?? '';
  if (/graphql/.test(url) && args.some((x) => /^@|[=\s]@/.test(x) || x.startsWith('--data-binary') || x === '-T')) {
    return deny(a, 'blast_radius.unresolved_command', `${base} posts a GraphQL body read from a file or stdin: the gate cannot see the mutation`);
  }
  const forge = forgeWriteUrl(base, args, a.context);
  if (forge !== null) return denyForgeWrite(a, `${base} ${forge.method} ${forge.url.replace(/\u0000/g, '…')} (the sandbox's network allowlist blocks it too)`);
  let writes = false;
  for (let i = 0; i < args.length; i++) {
    const x = args[i] as string;
    if (x === '-o' || x === '--output' || (base === 'wget' && (x === '-O' || x === '--output-document'))) {
      const f = args[i + 1] ?? '';
      if (f !== '-') a.write(f, resolvePath(f, cwd, a.context.home), cwd);
      writes = true;
    }
    if (/^-(d|F|T|X)$|^--(data|form|upload-file|request|json)/.test(x)) writes = true;
    if (base === 'curl' && (x === '-O' || x === '--remote-name')) writes = true;
  }
  if (base === 'wget' && !args.some((x) => x === '-O' || x === '--output-document' || x === '--spider')) writes = true;
  if (writes) a.mutate(`${base} that sends data or writes files`);
}

function analyzeNpmLike(base: string, args: string[], a: Analyzer): void {
  const sub = args.find((x) => !x.startsWith('-'));
  const ro = new Set([
    'ls',
    'list',
    'll',
    'view',
    'info',
    'show',
    'outdated',
    'explain',
    'why',
    'search',
    'help',
    'config',
    'root',
    'prefix',
    'bin',
    'whoami',
    'ping',
    'doctor',
    'fund',
    'audit',
    '--version',
    'version',
  ]);
  if (sub === undefined || !ro.has(sub) || (sub === 'audit' && args.includes('fix')) || (sub === 'config' && !['get', 'list', 'ls'].includes(args[1] ?? ''))) {
    a.mutate(`${base} ${sub ?? ''}`.trim());
  }
}

/**
 * Analyse one command whose argv[0] is already a bare name (basename, wrappers stripped).
 * Unknown commands are allowed for implementers and count as changes for read-only roles.
 */
export function analyzeCommand(base: string, argv: string[], cwd: string | null, depth: number, flags: ExecFlags, a: Analyzer): void {
  const args = argv.slice(1);
  if (base === 'git') return analyzeGit(args, cwd, depth, a);
  if (base.startsWith('git-') && base.length > 4) return analyzeGit([base.slice(4), ...args], cwd, depth, a);
  if (base === 'gh') return analyzeGh(args, a, cwd);
  if (base === 'find') return analyzeFind(argv, cwd, depth, flags, a);
  if (base === 'curl' || base === 'wget' || base === 'http' || base === 'https' || base === 'xh' || base === 'httpie') return analyzeHttp(base, args, cwd, a);
  if (base === 'npm' || base === 'pnpm' || base === 'yarn') return analyzeNpmLike(base, args, a);
  if (base === 'hub') return analyzeHub(args, a, (gitArgs) => analyzeGit(gitArgs, cwd, depth, a));
  if (base === 'glab') return analyzeGlab(args, a);
  if ((base === 'tea' || base === 'bb') && (args.includes('merge') || mentionsMerge(args.join(' ')))) {
    return deny(a, 'blast_radius.merge', `${base} ${args.join(' ')}: Polly never merges; a human merges`);
  }
  const interp = interpreterName(base);
  if (interp) return analyzeInterpreter(interp, argv, cwd, depth, flags, a);
  if (base === 'awk' || base === 'gawk' || base === 'mawk' || base === 'nawk') {
    const prog = args.find((x) => !x.startsWith('-')) ?? '';
    if (/\bsystem\s*\(|\|\s*getline|"\s*\|\s*|\|&/.test(prog)) return deny(a, 'blast_radius.interpreter', `${base} program runs other programs (system, pipes)`);
    if (/\bprint[f]?\b[^;}]*>/.test(prog) || args.includes('-i')) a.mutate(`${base} writing files`);
    return;
  }
  if (base === 'alias') {
    for (const x of args) {
      const eq = x.indexOf('=');
      if (eq > 0) a.script(x.slice(eq + 1), cwd, depth + 1, `alias ${x.slice(0, eq)}`);
    }
    return;
  }
  if (base === 'source' || base === '.') {
    if ((args[0] ?? '').includes(UNKNOWN)) return deny(a, 'blast_radius.unresolved_command', `${base} of a file produced at run time`);
    a.mutate(`${base} ${args[0] ?? ''}`);
    return;
  }
  if (base === 'base64' || base === 'base32' || base === 'xxd' || base === 'openssl' || base === 'gpg') {
    // decoding is harmless on its own; a shell reading the output is caught at the shell
    if (base === 'openssl' || base === 'gpg') a.mutate(base);
    return;
  }
  if (base === 'rm') return analyzeRm(argv, cwd, flags, a);
  if (analyzeWriters(base, argv, cwd, flags, a)) return;
  if (READ_ONLY.has(base)) return;
  a.mutate(base);
}
