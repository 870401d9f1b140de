/**
 * Shell-command analysis over a real parse (unbash 6: a Bash 5.3 parser with nested `$()`,
 * backticks, `<()`, heredoc bodies and source-positioned errors). Every nested context is walked;
 * each simple command's words are evaluated statically (quotes removed, `$'…'` decoded, `~`/`$HOME`
 * resolved, anything produced at run time marked unknown), wrappers are stripped, and the command
 * rules report findings, writes and changes to an {@link Analyzer}. Pure.
 */
import { parse } from 'unbash';
import type { Assignment, Command as ShCommand, ParsedScript, Redirection, Word, WordPart } from 'unbash';
import { analyzeCommand } from './command-rules.js';
import { MKTEMP_PATH, freshTempVariables, mayAssign } from './assignments.js';
import { UNKNOWN, isHarmlessDevice, isUnder, resolvePath } from '../paths.js';
import { noOpProgramSetting } from '../git/git-config.js';
import { checkWrite, denyInlineCodeForReadOnly } from '../policy.js';
import { isNamedPolicyRule, sandboxHolds } from '../sandbox-leeway.js';
import type { Analyzer, ExecFlags, GateContext, GateFinding, GateRole, GatePolicy } from '../types.js';
import { unwrap } from './wrappers.js';

type AnyNode = { type: string; [k: string]: unknown };

/** Depth limit for nested scripts (sh -c inside eval inside $() …): deeper input is denied. */
export const MAX_DEPTH = 12;

/** What an analysis found, in source order. */
export interface ShellReport {
  findings: GateFinding[];
  /** `cwd`: what a relative `raw` is relative to (null: unknown). */
  writes: Array<{ raw: string; path: string | null; cwd: string | null }>;
  mutations: string[];
}

interface Scope {
  cwd: string | null;
  vars: Map<string, string>;
}

/** The value of a variable that holds a fresh `mktemp` name (./assignments.ts), while a word is evaluated. */
const FRESH_TEMP = '\u0001mktemp\u0001';
/** A key in `Scope.vars` saying the input may assign PWD, so `$PWD` is not the cwd (copied with the vars). */
const PWD_ASSIGNED = '\u0000PWD';

/** The value of a command substitution known before it runs (by its source text), or null when unknown. */
export type SubstitutionValue = (text: string, scope: Scope) => string | null;

/** Evaluate a word statically. Unknown parts become {@link UNKNOWN}; `substitution` resolves the few substitutions whose value is known. */
export function wordValue(word: Word | undefined, scope: Scope, home: string, substitution?: SubstitutionValue): string {
  if (!word) return '';
  if (!word.parts || word.parts.length === 0) {
    return expandTilde(word.value, home);
  }
  let out = '';
  word.parts.forEach((p, i) => {
    out += partValue(p, scope, home, i === 0, substitution);
  });
  // a fresh mktemp name is a temp path only as the whole word; with a suffix ("$tmp"/*) it could be empty
  if (out === FRESH_TEMP) return MKTEMP_PATH;
  return out.includes(FRESH_TEMP) ? out.split(FRESH_TEMP).join(UNKNOWN) : out;
}

function expandTilde(v: string, home: string): string {
  return v === '~' || v.startsWith('~/') ? home + v.slice(1) : v;
}

/**
 * Only HOME and PWD resolve (to `home`, which is {@link UNKNOWN} when the input may assign HOME, and
 * to the cwd); a variable assigned in the script is unknown (its value may depend on control flow),
 * but for one that only ever holds a fresh mktemp name.
 */
function varValue(name: string, scope: Scope, home: string): string {
  if (scope.vars.has(name)) return scope.vars.get(name) === FRESH_TEMP ? FRESH_TEMP : UNKNOWN;
  if (name === 'HOME') return home;
  if (name === 'PWD' && scope.cwd && !scope.vars.has(PWD_ASSIGNED)) return scope.cwd;
  return UNKNOWN;
}

function partValue(p: WordPart, scope: Scope, home: string, first: boolean, substitution?: SubstitutionValue): string {
  switch (p.type) {
    case 'Literal':
      return first ? expandTilde(p.value, home) : p.value;
    case 'SingleQuoted':
    case 'AnsiCQuoted':
      return p.value;
    case 'DoubleQuoted':
    case 'LocaleString':
      return p.parts.map((c) => partValue(c as WordPart, scope, home, false, substitution)).join('');
    case 'SimpleExpansion':
      return varValue(p.text.replace(/^\$/, ''), scope, home);
    case 'ParameterExpansion':
      return p.operation || p.prefix || p.index ? UNKNOWN : varValue(p.parameter, scope, home);
    case 'Glob':
      return p.text;
    case 'BraceExpansion':
      return UNKNOWN;
    case 'CommandExpansion':
      return substitution?.(p.text, scope) ?? UNKNOWN;
    default:
      return UNKNOWN;
  }
}

/**
 * Command substitutions whose output the gate knows when the cwd is inside the worktree: the
 * current branch (issue 13: `git push origin "$(git branch --show-current)"`) and the top level
 * (`cd "$(git rev-parse --show-toplevel)"`), by their source text with whitespace collapsed.
 */
const KNOWN_SUBSTITUTIONS = new Map<string, 'branch' | 'toplevel'>([
  ['git branch --show-current', 'branch'],
  ['git rev-parse --abbrev-ref HEAD', 'branch'],
  ['git symbolic-ref --short HEAD', 'branch'],
  ['git symbolic-ref --short -q HEAD', 'branch'],
  ['git symbolic-ref -q --short HEAD', 'branch'],
  ['git rev-parse --show-toplevel', 'toplevel'],
]);

/** Environment variables that name a program git runs, and the config key each stands for. */
const GIT_PROGRAM_VARS: Record<string, string> = {
  GIT_EDITOR: 'core.editor',
  GIT_SEQUENCE_EDITOR: 'sequence.editor',
  GIT_PAGER: 'core.pager',
  EDITOR: 'core.editor',
  VISUAL: 'core.editor',
  PAGER: 'core.pager',
};
/** `NODE_OPTIONS` flags that load no code (nodejs.org/api/cli.html#node_optionsoptions): memory limits, warnings, source maps. */
const HARMLESS_NODE_OPTION =
  /^--(max-old-space-size=\d+|max-semi-space-size=\d+|stack-size=\d+|stack-trace-limit=\d+|enable-source-maps|no-warnings|no-deprecation|trace-warnings|trace-deprecation|experimental-vm-modules|unhandled-rejections=[a-z-]+|openssl-legacy-provider|dns-result-order=[a-z-]+|max-http-header-size=\d+|disable-warning=[A-Za-z0-9_-]+)$/;

/**
 * True when a variable set for a command is one the gate would deny but whose value is harmless:
 * `GIT_EDITOR=true`, `GIT_PAGER=cat` (see {@link noOpProgramSetting}), or `NODE_OPTIONS` holding only
 * flags that load no code (`--max-old-space-size=4096`, `--experimental-vm-modules`).
 */
function harmlessSetting(name: string, value: string): boolean {
  if (value.includes(UNKNOWN)) return false;
  const key = GIT_PROGRAM_VARS[name];
  if (key !== undefined) return noOpProgramSetting(key, value);
  if (name === 'NODE_OPTIONS')
    return value
      .trim()
      .split(/\s+/)
      .every((f) => HARMLESS_NODE_OPTION.test(f));
  return false;
}

/** {@link harmlessSetting} for a `NAME=value` word (after `export`, `declare` …). */
function harmlessAssignmentWord(word: string): boolean {
  const eq = word.indexOf('=');
  return eq > 0 && harmlessSetting(word.slice(0, eq), word.slice(eq + 1));
}

/** The command inside `$(…)` or backticks, whitespace collapsed. */
function substitutionSource(text: string): string {
  const inner = text.startsWith('$(') && text.endsWith(')') ? text.slice(2, -1) : text.startsWith('`') && text.endsWith('`') ? text.slice(1, -1) : text;
  return inner.trim().replace(/\s+/g, ' ');
}

/** True when a command may switch the worktree to another branch (or rename it). */
function switchesBranch(base: string, args: string[]): boolean {
  if (base !== 'git' && base !== 'gh' && !base.startsWith('git-')) return false;
  const words = args.filter((x) => !x.startsWith('-'));
  if (base.startsWith('git-')) words.unshift(base.slice(4));
  return (
    words.some((w) => ['checkout', 'switch', 'bisect', 'rebase', 'worktree', 'symbolic-ref', 'update-ref', 'am', 'pull'].includes(w)) ||
    (words.includes('branch') && args.some((x) => /^-[a-zA-Z]*[mMcC]|^--(move|copy)/.test(x)))
  );
}

/**
 * Analyse a command line: parse it, walk every nested context, and collect findings (denials and
 * asks), write targets and changes, in source order. Pure; never throws for bad shell (a parse
 * error is a `blast_radius.parse_error` finding).
 */
export function analyzeShell(source: string, cwd: string, role: GateRole, context: GateContext, policy: GatePolicy, startDepth = 0): ShellReport {
  const report: ShellReport = { findings: [], writes: [], mutations: [] };
  const leeway = sandboxHolds(role, context);
  // HOME, ~ and PWD mean the context's home and the cwd only while nothing in the input may assign them
  const home = mayAssign(source, 'HOME') ? UNKNOWN : context.home;
  const pwdAssigned = mayAssign(source, 'PWD');
  const freshTemps = leeway ? freshTempVariables(source) : new Set<string>();
  const newScope = (c: string | null): Scope => ({ cwd: c, vars: pwdAssigned ? new Map([[PWD_ASSIGNED, UNKNOWN]]) : new Map() });
  const analyzer: Analyzer = {
    context,
    policy,
    role,
    finding: (f) => void report.findings.push(f),
    write: (raw, path, c) => void report.writes.push({ raw, path, cwd: c ?? null }),
    mutate: (what) => void report.mutations.push(what),
    script: (src, c, depth, origin) => runScript(src, newScope(c), depth, origin),
    exec: (argv, c, depth, flags) => exec(argv, c, depth, flags),
    probe: (src, c, depth) => {
      if (depth > MAX_DEPTH) return null;
      const sub = analyzeShell(src, c ?? cwd, role, context, policy, depth);
      const named = sub.findings.find((f) => f.decision === 'deny' && isNamedPolicyRule(f.rule));
      if (named) return named;
      for (const w of sub.writes) {
        const f = checkWrite(w.path, w.raw, role, context, policy, { cwd: w.cwd, source: src });
        if (f && f.decision === 'deny' && isNamedPolicyRule(f.rule)) return f;
      }
      return null;
    },
  };
  const deny = (rule: string, reason: string): void => analyzer.finding({ decision: 'deny', rule, reason });
  /** Set once a command in this input may switch the worktree's branch: later `$(git branch --show-current)` is then unknown. */
  let branchMayMove = false;
  const substitution: SubstitutionValue = (text, scope) => {
    const known = KNOWN_SUBSTITUTIONS.get(substitutionSource(text));
    if (known === undefined || scope.cwd === null || !isUnder(scope.cwd, context.worktree)) return null;
    if (known === 'branch') return branchMayMove ? null : context.branch;
    return context.worktree;
  };

  function runScript(src: string, scope: Scope, depth: number, origin: string): void {
    if (depth > MAX_DEPTH) return deny('blast_radius.unresolved_command', `commands nested more than ${MAX_DEPTH} levels deep (${origin})`);
    if (src.includes(UNKNOWN))
      return deny('blast_radius.hidden_command', `${origin} runs a script produced at run time (decoded, substituted or read); the gate cannot check what it does`);
    let ast: ParsedScript;
    try {
      ast = parse(src);
    } catch (error) {
      return deny('blast_radius.parse_error', `${origin}: the shell parser failed (${(error as Error).message})`);
    }
    walk(ast as unknown as AnyNode, scope, depth, false);
  }

  function exec(argv: string[], cwd: string | null, depth: number, flags: ExecFlags): void {
    if (depth > MAX_DEPTH) return deny('blast_radius.unresolved_command', `wrappers nested more than ${MAX_DEPTH} levels deep`);
    const name = argv[0];
    if (name === undefined) return;
    const tail = name.split('/').pop() ?? '';
    // Under the sandbox a program in a directory the gate cannot resolve is judged by its own name
    // ("$(go env GOPATH)/bin/misspell" as misspell); a name produced at run time stays denied.
    const namedProgram = leeway && cwd !== null && isUnder(cwd, context.worktree) && name.includes('/') && tail !== '' && !tail.includes(UNKNOWN);
    if ((name.includes(UNKNOWN) && !namedProgram) || name === '') {
      return deny('blast_radius.unresolved_command', `the command word ${JSON.stringify(name.replace(/\u0000/g, '…'))} is produced at run time; the gate cannot tell what runs`);
    }
    const base = name.includes('/') ? (name.split('/').pop() as string) : name;
    if (!branchMayMove && switchesBranch(base, argv.slice(1))) branchMayMove = true;
    if (base === '') return deny('blast_radius.unresolved_command', `command ${JSON.stringify(name)} names a directory`);
    const w = unwrap([base, ...argv.slice(1)]);
    switch (w.kind) {
      case 'exec':
        return exec(w.argv, w.cwd ?? cwd, depth + 1, {
          ...flags,
          argsFromStdin: flags.argsFromStdin || w.argsFromStdin === true,
          stdinText: w.argsFromStdin ? null : flags.stdinText,
        });
      case 'script':
        if (w.origin !== 'watch' && w.origin !== 'parallel' && denyInlineCodeForReadOnly(analyzer, w.origin)) return;
        return runScript(w.source, newScope(cwd), depth + 1, w.origin);
      case 'stdin-shell':
        if (flags.stdinText != null && denyInlineCodeForReadOnly(analyzer, `${w.origin} reading a here-document`)) return;
        if (flags.stdinText != null) return runScript(flags.stdinText, newScope(cwd), depth + 1, `${w.origin} reading a here-document`);
        if (flags.stdinFromPipe)
          return deny('blast_radius.hidden_command', `a shell (${w.origin}) reads commands from a pipe: anything decoded or downloaded into a shell is denied`);
        return;
      case 'lookup':
        return;
      case 'unresolved':
        return deny('blast_radius.unresolved_command', w.reason);
      case 'none':
        return analyzeCommand(base, [base, ...argv.slice(1)], cwd, depth, flags, analyzer);
    }
  }

  function checkErrors(node: AnyNode): boolean {
    const errors = (node as { errors?: Array<{ message: string; pos?: number }> }).errors;
    if (errors && errors.length > 0) {
      const e = errors[0] as { message: string; pos?: number };
      deny('blast_radius.parse_error', `the command does not parse as shell (${e.message}${e.pos !== undefined ? ` at offset ${e.pos}` : ''}); fix the quoting`);
      return true;
    }
    return false;
  }

  /** Walk words of a node for nested scripts ($(), backticks, <()) without treating them as the node's command. */
  function walkWordParts(parts: readonly unknown[] | undefined, scope: Scope, depth: number): void {
    if (!parts) return;
    for (const p of parts as AnyNode[]) {
      if (!p || typeof p !== 'object') continue;
      if (p.type === 'CommandExpansion' || p.type === 'ProcessSubstitution' || p.type === 'ArithmeticCommandExpansion') {
        const script = p.script as AnyNode | undefined;
        if (!script) {
          deny('blast_radius.parse_error', `a substitution ${JSON.stringify(String(p.text))} does not parse`);
          continue;
        }
        if (depth + 1 > MAX_DEPTH) return deny('blast_radius.unresolved_command', 'substitutions nested too deeply');
        walk(script, { cwd: scope.cwd, vars: new Map(scope.vars) }, depth + 1, false);
        continue;
      }
      for (const key of [
        'parts',
        'operand',
        'pattern',
        'replacement',
        'offset',
        'length',
        'index',
        'operation',
        'expression',
        'left',
        'right',
        'test',
        'consequent',
        'alternate',
      ]) {
        const child = p[key] as AnyNode | AnyNode[] | undefined;
        if (Array.isArray(child)) walkWordParts(child, scope, depth);
        else if (child && typeof child === 'object') walkWordParts([child], scope, depth);
      }
    }
  }

  function walkWord(w: unknown, scope: Scope, depth: number): void {
    const word = w as AnyNode | undefined;
    if (!word) return;
    if (word.type === 'Word') walkWordParts(word.parts as unknown[] | undefined, scope, depth);
    else if (word.type === 'Assignment') {
      const val = word.value as AnyNode;
      if (val?.type === 'ArrayValue') for (const e of val.elements as unknown[]) walkWord(e, scope, depth);
      else walkWord(val, scope, depth);
    } else walkWordParts([word], scope, depth);
  }

  function redirects(list: readonly Redirection[], scope: Scope, depth: number): { stdinText: string | null } {
    let stdinText: string | null = null;
    for (const r of list) {
      if (r.type === 'Redirect') {
        walkWord(r.target, scope, depth);
        const op = r.operator;
        if (op === '>' || op === '>>' || op === '>|' || op === '&>' || op === '&>>' || op === '<>' || (op === '>&' && r.target && !/^\d+-?$|^-$/.test(r.target.value))) {
          const raw = wordValue(r.target, scope, home, substitution);
          const path = resolvePath(raw, scope.cwd, context.home);
          analyzer.write(raw, path, scope.cwd);
          if (path === null || !isHarmlessDevice(path)) analyzer.mutate(`redirect to ${raw.replace(/\u0000/g, '…')}`);
        }
      } else if (r.type === 'HereString') {
        walkWord(r.target, scope, depth);
        stdinText = wordValue(r.target, scope, home, substitution);
      } else if (r.type === 'HereDoc') {
        const body = r.body;
        walkWordParts(body.parts as unknown[] | undefined, scope, depth);
        stdinText = r.delimiter?.quoted || !body.parts ? body.text : body.parts.some((p) => p.type !== 'Literal') ? UNKNOWN + body.text : body.text;
      }
    }
    return { stdinText };
  }

  function simpleCommand(node: ShCommand, scope: Scope, depth: number, pipeIn: boolean): void {
    // nested scripts in every word first (they run before the command)
    for (const pre of node.prefix) if (pre.type === 'Assignment') walkWord(pre, scope, depth);
    walkWord(node.name, scope, depth);
    for (const arg of node.suffix) if (arg.type === 'Word' || arg.type === 'Assignment') walkWord(arg, scope, depth);
    const { stdinText } = redirects(node.redirects, scope, depth);
    for (const pre of node.prefix) {
      if (pre.type !== 'Assignment') continue;
      if (node.name && pre.value.type === 'Word' && harmlessSetting(pre.name, wordValue(pre.value, scope, home, substitution))) continue;
      if (
        /^GIT_(CONFIG|EXEC_PATH|DIR$|WORK_TREE$|COMMON_DIR$|INDEX_FILE$|OBJECT_DIRECTORY$|SSH|ASKPASS|EDITOR|PAGER|PROXY)|^(BASH_ENV|ENV|PROMPT_COMMAND|LD_PRELOAD|LD_LIBRARY_PATH|NODE_OPTIONS|PYTHONSTARTUP|PERL5OPT|RUBYOPT|GIT_SEQUENCE_EDITOR|EDITOR|VISUAL|PAGER)$/.test(
          pre.name,
        )
      ) {
        if (node.name) return deny('blast_radius.git_config', `setting ${pre.name} for a command changes what it loads or runs`);
      }
      if (!node.name && /^GIT_(DIR|WORK_TREE|COMMON_DIR|INDEX_FILE|OBJECT_DIRECTORY)$/.test(pre.name)) {
        return deny('blast_radius.git_config', `setting ${pre.name} (exported by \`set -a\` or an earlier export) points later git commands at another repository`);
      }
      if (!node.name) scope.vars.set(pre.name, freshTemps.has(pre.name) ? FRESH_TEMP : UNKNOWN);
    }
    if (!node.name) return;
    const argv = [node.name, ...node.suffix.filter((s): s is Word => s.type === 'Word')].map((w) => wordValue(w, scope, home, substitution));
    // `export GIT_DIR=…` parses as an assignment in the suffix: check its name like a word
    const assigned = node.suffix
      .filter((s): s is Assignment => s.type === 'Assignment')
      .map((s) => `${s.name}=${s.value.type === 'Word' ? wordValue(s.value, scope, home, substitution) : UNKNOWN}`);
    // env-style NAME=value words after a wrapper are handled by the wrappers; export/declare can hide GIT_CONFIG
    const first = argv[0] as string;
    if (
      (first === 'export' || first === 'declare' || first === 'typeset' || first === 'local' || first === 'readonly') &&
      [...argv.slice(1), ...assigned].some(
        (x) =>
          !harmlessAssignmentWord(x) &&
          /^(GIT_CONFIG|GIT_EXEC_PATH|GIT_DIR=|GIT_WORK_TREE=|GIT_COMMON_DIR=|GIT_INDEX_FILE=|GIT_OBJECT_DIRECTORY=|GIT_EDITOR=|GIT_SEQUENCE_EDITOR=|GIT_PAGER=|EDITOR=|VISUAL=|BASH_ENV|ENV=|PROMPT_COMMAND|LD_PRELOAD|NODE_OPTIONS)/.test(
            x,
          ),
      )
    ) {
      return deny('blast_radius.git_config', `${argv.join(' ').replace(/\u0000/g, '…')} sets a variable that changes what later commands load or run`);
    }
    if (first === 'cd' || first === 'pushd') {
      const target = argv[1];
      scope.cwd = target === undefined || target === '-' ? (target === undefined && home !== UNKNOWN ? context.home : null) : resolvePath(target, scope.cwd, context.home);
      return;
    }
    if (first === 'eval') {
      if (denyInlineCodeForReadOnly(analyzer, 'eval')) return;
      return runScript(argv.slice(1).join(' '), scope, depth + 1, 'eval');
    }
    const envWrap = argv[0] === 'env' || argv[0]?.endsWith('/env');
    if (envWrap && argv.some((x) => /^GIT_(CONFIG|EXEC_PATH|DIR=|WORK_TREE=|COMMON_DIR=|INDEX_FILE=|OBJECT_DIRECTORY=)/.test(x)))
      return deny('blast_radius.git_config', `env sets GIT_CONFIG*/GIT_EXEC_PATH/GIT_DIR/GIT_WORK_TREE, changing what git runs or which repository it changes`);
    exec(argv, scope.cwd, depth, { stdinFromPipe: pipeIn, stdinText, argsFromStdin: false });
  }

  function walk(node: AnyNode | undefined, scope: Scope, depth: number, pipeIn: boolean): void {
    if (!node) return;
    switch (node.type) {
      case 'Script':
        if (checkErrors(node)) return;
        for (const s of node.commands as AnyNode[]) walk(s, scope, depth, false);
        return;
      case 'Statement':
        return walk(node.command as AnyNode, scope, depth, pipeIn);
      case 'CompoundList':
        for (const s of node.commands as AnyNode[]) walk(s, scope, depth, pipeIn);
        return;
      case 'AndOr':
        for (const c of node.commands as AnyNode[]) walk(c, scope, depth, pipeIn);
        return;
      case 'Pipeline': {
        const cmds = node.commands as AnyNode[];
        for (const [i, c] of cmds.entries()) walk(c, i === 0 ? scope : { cwd: scope.cwd, vars: new Map(scope.vars) }, depth, i > 0 || pipeIn);
        return;
      }
      case 'Command':
        return simpleCommand(node as unknown as ShCommand, scope, depth, pipeIn);
      case 'Redirected': {
        // `{ …; } > file`, `while …; done < file`: the redirections, then the compound command
        const { stdinText } = redirects(node.redirects as Redirection[], scope, depth);
        // a here-document fed to a compound command is read by commands inside it: treat it like a pipe
        return walk(node.command as AnyNode, scope, depth, pipeIn || stdinText !== null);
      }
      case 'Subshell':
      case 'BraceGroup':
        return walk(node.body as AnyNode, node.type === 'Subshell' ? { cwd: scope.cwd, vars: new Map(scope.vars) } : scope, depth, pipeIn);
      case 'If':
        walk(node.clause as AnyNode, scope, depth, pipeIn);
        walk(node.then as AnyNode, scope, depth, pipeIn);
        for (const e of node.elif as AnyNode[]) {
          walk(e.clause as AnyNode, scope, depth, pipeIn);
          walk(e.then as AnyNode, scope, depth, pipeIn);
        }
        return walk(node.else as AnyNode | undefined, scope, depth, pipeIn);
      case 'For':
      case 'Select':
        for (const w of (node.wordlist as unknown[] | undefined) ?? []) walkWord(w, scope, depth);
        scope.vars.set(String((node.name as Word).value), UNKNOWN);
        return walk(node.body as AnyNode, scope, depth, pipeIn);
      case 'While':
        walk(node.clause as AnyNode, scope, depth, pipeIn);
        return walk(node.body as AnyNode, scope, depth, pipeIn);
      case 'ArithmeticFor':
        walkWordParts([node.initialize, node.test, node.update].filter(Boolean) as unknown[], scope, depth);
        return walk(node.body as AnyNode, scope, depth, pipeIn);
      case 'Case':
        walkWord(node.word, scope, depth);
        for (const item of node.items as AnyNode[]) {
          for (const p of item.pattern as unknown[]) walkWord(p, scope, depth);
          walk(item.body as AnyNode, scope, depth, pipeIn);
        }
        return;
      case 'Function':
        return walk(node.body as AnyNode, { cwd: scope.cwd, vars: new Map(scope.vars) }, depth, false);
      case 'Coproc':
        return walk(node.body as AnyNode, scope, depth, pipeIn);
      case 'TestCommand':
        walkTest(node.expression as AnyNode, scope, depth);
        return;
      case 'ArithmeticCommand':
        if (node.expression) walkWordParts([node.expression], scope, depth);
        return;
      default:
        deny('internal_error', `unhandled shell node ${node.type}`);
    }
  }

  function walkTest(e: AnyNode | undefined, scope: Scope, depth: number): void {
    if (!e) return;
    if (e.type === 'TestUnary') walkWord(e.operand, scope, depth);
    else if (e.type === 'TestBinary') {
      walkWord(e.left, scope, depth);
      walkWord(e.right, scope, depth);
    } else if (e.type === 'TestLogical') for (const o of e.operands as AnyNode[]) walkTest(o, scope, depth);
    else if (e.type === 'TestNot') walkTest(e.operand as AnyNode, scope, depth);
    else if (e.type === 'TestGroup') walkTest(e.expression as AnyNode, scope, depth);
  }

  runScript(source, newScope(cwd), startDepth, 'the command');
  return report;
}
