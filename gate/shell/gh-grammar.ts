/**
 * The GitHub CLI's argument grammar, modelled for the gate, and forge writes as an allowlist: a
 * worker needs no GitHub writes (Polly opens PRs, posts reviews and comments itself, and never
 * merges), so only the reads below pass; every other `gh` subcommand, and every `gh api` call that
 * writes, is denied in any spelling or flag order (`gh pr -R o/r merge 12`, `gh -R o/r pr merge`,
 * `gh api -XPUT …`, `gh api --method=PATCH …`, `-f`/`-F`/`--input` implying POST, a GraphQL
 * `mutation`). Sources: cli.github.com/manual/gh (persistent `-R, --repo`), cli.github.com/manual/gh_api
 * (method defaults to GET, POST once a parameter is added; flag table), spf13/pflag (short flags
 * bundle, `-XPUT` and `-X=PUT` carry the value). Pure; reports to an Analyzer.
 */
import { UNKNOWN, resolvePath } from '../paths.js';
import type { Analyzer } from '../types.js';

const show = (s: string): string => JSON.stringify(s.replace(/\u0000/g, '…'));
const deny = (a: Analyzer, rule: string, reason: string): void => a.finding({ decision: 'deny', rule, reason });

/** Merge endpoints of the forges' REST APIs (GitHub, GitLab, Bitbucket, Gitea). */
const MERGE_URL = [
  /\/pulls\/[^/\s]+\/merge\b/i,
  /\/repos\/[^/\s]+\/[^/\s]+\/merges\b/i,
  /\/merge-upstream\b/i,
  /\/merge_requests\/[^/\s]+\/merge\b/i,
  /\/pullrequests\/[^/\s]+\/merge\b/i,
  /\/pull-requests\/[^/\s]+\/merge\b/i,
];
/** GitHub GraphQL mutations that merge or queue a merge (docs.github.com/graphql/reference/mutations). */
const MERGE_GRAPHQL = /\b(mergePullRequest|enablePullRequestAutoMerge|mergeBranch|enqueuePullRequest|updatePullRequestBranch|mergeQueue)\b/;

/** True when a text names a merge endpoint or a GraphQL merge mutation. */
export function mentionsMerge(text: string): boolean {
  return MERGE_URL.some((re) => re.test(text)) || MERGE_GRAPHQL.test(text);
}

/**
 * The forge reads a worker may run, per command group (`*`: every subcommand). The subcommands
 * marked in {@link LOCAL_WRITES} read the forge but write local files or git state (a change for
 * read-only roles).
 */
const READS: Record<string, ReadonlySet<string> | '*'> = {
  pr: new Set(['view', 'list', 'ls', 'diff', 'checks', 'status']),
  issue: new Set(['view', 'list', 'ls', 'status']),
  run: new Set(['view', 'list', 'ls', 'watch', 'download']),
  workflow: new Set(['view', 'list', 'ls']),
  repo: new Set(['view', 'list', 'ls', 'clone']),
  release: new Set(['view', 'list', 'ls', 'download']),
  gist: new Set(['view', 'list', 'ls']),
  label: new Set(['list', 'ls']),
  cache: new Set(['list', 'ls']),
  ruleset: new Set(['view', 'list', 'ls', 'check']),
  project: new Set(['view', 'list', 'ls', 'field-list', 'item-list']),
  org: new Set(['list', 'ls']),
  variable: new Set(['get', 'list', 'ls']),
  secret: new Set(['list', 'ls']),
  'ssh-key': new Set(['list', 'ls']),
  'gpg-key': new Set(['list', 'ls']),
  alias: new Set(['list', 'ls']),
  extension: new Set(['list', 'ls', 'search']),
  ext: new Set(['list', 'ls', 'search']),
  config: new Set(['get', 'list', 'ls']),
  auth: new Set(['status']),
  attestation: new Set(['verify']),
  search: '*',
  status: '*',
  browse: '*',
  help: '*',
  version: '*',
  completion: '*',
};
const LOCAL_WRITES = new Set(['run download', 'release download', 'repo clone']);

/** Every top-level gh command (gh 2.x `gh help`): anything else is an alias or extension. */
const GROUPS = new Set([...Object.keys(READS), 'codespace', 'agent-task', 'copilot', 'preview', 'api']);

/** `gh api` flags that take a value (cli.github.com/manual/gh_api); the rest of its flags are booleans. */
const API_VALUE_SHORT = new Set(['X', 'f', 'F', 'H', 'q', 't', 'p']);
const API_VALUE_LONG = new Set(['method', 'raw-field', 'field', 'header', 'input', 'jq', 'template', 'hostname', 'cache', 'preview']);
const API_BOOL_SHORT = new Set(['i']);
const API_BOOL_LONG = new Set(['paginate', 'slurp', 'include', 'silent', 'verbose', 'help']);
const API_SHORT_LONG: Record<string, string> = { X: 'method', f: 'raw-field', F: 'field', H: 'header', q: 'jq', t: 'template', p: 'preview', i: 'include' };

interface ApiCall {
  method: string;
  endpoint: string;
  /** `-f`/`-F` values as written (`key=value`). */
  fields: string[];
  input: boolean;
  problem: string | null;
}

/** Parse `gh api <args>` with pflag's rules. */
function parseApi(args: string[]): ApiCall {
  const call: ApiCall = { method: '', endpoint: '', fields: [], input: false, problem: null };
  const take = (name: string, value: string): void => {
    if (name === 'method') call.method = value.toUpperCase();
    else if (name === 'field' || name === 'raw-field') call.fields.push(value);
    else if (name === 'input') call.input = true;
  };
  for (let i = 0; i < args.length; i++) {
    const x = args[i] as string;
    if (x === '--') {
      if (call.endpoint === '') call.endpoint = args[i + 1] ?? '';
      break;
    }
    if (x.startsWith('--')) {
      const eq = x.indexOf('=');
      const name = eq < 0 ? x.slice(2) : x.slice(2, eq);
      if (API_VALUE_LONG.has(name)) take(name, eq < 0 ? (args[++i] ?? '') : x.slice(eq + 1));
      else if (!API_BOOL_LONG.has(name)) call.problem ??= `unknown gh api option ${show(x)}`;
      continue;
    }
    if (x.startsWith('-') && x.length > 1) {
      for (let j = 1; j < x.length; j++) {
        const c = x[j] as string;
        if (API_VALUE_SHORT.has(c)) {
          const stuck = x.slice(j + 1).replace(/^=/, '');
          take(API_SHORT_LONG[c] as string, stuck !== '' ? stuck : (args[++i] ?? ''));
          break;
        }
        if (!API_BOOL_SHORT.has(c)) {
          call.problem ??= `unknown gh api option -${c}`;
          break;
        }
      }
      continue;
    }
    if (call.endpoint === '') call.endpoint = x;
  }
  if (call.method === '') call.method = call.fields.length > 0 || call.input ? 'POST' : 'GET';
  return call;
}

/** The GraphQL document of a `gh api graphql` call (`-f query=…`), or null when it is not visible. */
function graphqlQuery(call: ApiCall): string | null {
  if (call.input) return null;
  const q = call.fields.find((f) => f.startsWith('query='));
  if (q === undefined) return null;
  const body = q.slice(6);
  return body.startsWith('@') ? null : body;
}

function analyzeApi(args: string[], a: Analyzer): void {
  const all = args.join(' ');
  if (mentionsMerge(all)) return deny(a, 'blast_radius.merge', `gh api ${args.join(' ')} calls a merge endpoint or mutation: Polly never merges`);
  const call = parseApi(args);
  if (mentionsMerge(`/${call.endpoint.replace(/^\//, '')}`)) return deny(a, 'blast_radius.merge', `gh api ${args.join(' ')} calls a merge endpoint: Polly never merges`);
  if (call.problem !== null) return deny(a, 'blast_radius.unresolved_command', `${call.problem}: the gate does not guess whether it writes`);
  if (call.method.includes(UNKNOWN)) return deny(a, 'blast_radius.unresolved_command', `gh api method ${show(call.method)} is produced at run time`);
  const write = `gh api ${call.method} ${call.endpoint}`.replace(/\u0000/g, '…');
  if (call.endpoint === 'graphql' || /\/graphql$/.test(call.endpoint)) {
    const query = graphqlQuery(call);
    if (query === null) return deny(a, 'blast_radius.unresolved_command', 'gh api graphql with a query read from a file or stdin: the gate cannot see whether it is a mutation');
    if (query.includes(UNKNOWN))
      return deny(a, 'blast_radius.unresolved_command', 'gh api graphql with a query produced at run time: the gate cannot see whether it is a mutation');
    if (/\b(mutation|subscription)\b/.test(query)) return denyForgeWrite(a, `gh api graphql with a mutation`);
    return;
  }
  if (call.method === 'GET' || call.method === 'HEAD') return;
  if (/git\/refs/.test(call.endpoint)) return deny(a, 'blast_radius.force_push', `${write} rewrites or deletes refs directly`);
  return denyForgeWrite(a, write);
}

/** Deny (`blast_radius.forge_write`) a forge write or any gh command outside the reads. */
export const denyForgeWrite = (a: Analyzer, what: string): void =>
  deny(
    a,
    'blast_radius.forge_write',
    `${what} is not a forge read a worker may run (gh pr view/list/diff/checks/status, gh issue/run view/list, gh api GET): a worker makes no forge writes; Polly opens the PR and posts reviews and comments itself`,
  );

/**
 * Analyse `gh <args>`: forge reads pass (local downloads and clones count as changes), everything
 * else is denied — `blast_radius.merge` for merges, `blast_radius.force_push` for ref writes through
 * the API, `blast_radius.forge_write` for any other write, `blast_radius.unresolved_command` for
 * aliases, extensions and parts produced at run time.
 */
export function analyzeGh(args: string[], a: Analyzer, cwd: string | null = null): void {
  // group and subcommand: the first two words that are not options; `-R/--repo <o/r>` may stand anywhere
  const words: string[] = [];
  let flagBefore: string | null = null;
  let k = 0;
  for (; k < args.length && words.length < 2; k++) {
    const x = args[k] as string;
    if (x === '-R' || x === '--repo') k += 1;
    else if (x.startsWith('--repo=') || /^-R./.test(x)) continue;
    else if (x === '--help' || x === '-h' || x === '--version') continue;
    else if (x.startsWith('-') && x.length > 1) flagBefore ??= x;
    else words.push(x);
    if (words[0] === 'api') break;
  }
  const [group, sub] = words;
  const spelled = `gh ${args.join(' ')}`.replace(/\u0000/g, '…');
  if (group === undefined) return;
  if (group.includes(UNKNOWN) || (sub ?? '').includes(UNKNOWN)) return deny(a, 'blast_radius.unresolved_command', `${show(spelled)}: the gh command is produced at run time`);
  if (group === 'api') return analyzeApi(args.slice(k + 1), a);
  if (!GROUPS.has(group))
    return deny(a, 'blast_radius.unresolved_command', `"gh ${group}" is not a gh command the gate knows: it may be an alias or extension whose effect cannot be checked`);
  if ((group === 'pr' && sub === 'merge') || mentionsMerge(args.join(' '))) return deny(a, 'blast_radius.merge', `${spelled}: Polly never merges; a human merges on GitHub`);
  if ((group === 'alias' || group === 'extension' || group === 'ext') && !(READS[group] as ReadonlySet<string>).has(sub ?? '')) {
    return deny(a, 'blast_radius.unresolved_command', `gh ${group} ${sub ?? ''} defines commands the gate cannot check`);
  }
  if (group === 'auth' && sub === 'token') return deny(a, 'blast_radius.credentials', `${spelled} prints the GitHub token: a worker reads no credentials`);
  const reads = READS[group];
  const isRead = reads === '*' || (sub !== undefined && reads?.has(sub) === true);
  if (!isRead) return denyForgeWrite(a, spelled);
  if (flagBefore !== null && reads !== '*') {
    return deny(
      a,
      'blast_radius.unresolved_command',
      `${spelled}: option ${show(flagBefore)} before the subcommand may take a value and hide the real subcommand; put options after "gh ${group} <subcommand>"`,
    );
  }
  if (LOCAL_WRITES.has(`${group} ${sub}`)) a.mutate(`gh ${group} ${sub}`);
  if (group === 'repo' && sub === 'clone') {
    // `gh repo clone <repo> [<directory>]`: the directory is written (default: the repo's name, here)
    const rest = args.slice(k).filter((x) => !x.startsWith('-'));
    const dir = rest[1] ?? (rest[0] ?? '').split('/').pop() ?? '';
    if (dir !== '') a.write(dir, resolvePath(dir, cwd, a.context.home), cwd);
  }
}

/** hub's own reads (hub.github.com/hub.1.html); `pr`, `issue`, `release` read with `list`/`show` or no subcommand. */
const HUB_READS = new Set(['browse', 'compare', 'ci-status', 'help', 'version', '--version']);
const HUB_LISTS = new Set(['pr', 'issue', 'release']);
const HUB_OWN = new Set(['api', 'pull-request', 'fork', 'create', 'delete', 'gist', 'sync', 'am', 'apply', 'alias', ...HUB_READS, ...HUB_LISTS]);

/**
 * Analyse `hub <args>` (hub.github.com/hub.1.html): hub wraps git, so anything not a hub command is
 * git (`hub push -f` is a force push); `hub api` follows gh api's grammar; hub's own commands that
 * write to GitHub (`pull-request`, `fork`, `create`, `delete`, `gist`, `issue create`, `release
 * create`, …) are `blast_radius.forge_write`; `hub merge <PR URL>` is `blast_radius.merge`.
 */
export function analyzeHub(args: string[], a: Analyzer, git: (args: string[]) => void): void {
  const [cmd, sub] = args;
  if (cmd === 'merge' || mentionsMerge(args.join(' '))) return deny(a, 'blast_radius.merge', `hub ${args.join(' ')}: Polly never merges; a human merges`);
  if (cmd === undefined || !HUB_OWN.has(cmd)) return git(args);
  if (cmd === 'api') return analyzeApi(args.slice(1), a);
  if (HUB_READS.has(cmd)) return;
  if (HUB_LISTS.has(cmd) && (sub === undefined || sub === 'list' || sub === 'show' || sub.startsWith('-'))) return;
  return denyForgeWrite(a, `hub ${args.join(' ')}`.replace(/\u0000/g, '…'));
}

/** glab's reads (docs.gitlab.com/cli): `view`, `list`, `diff`, `status` of mrs, issues, pipelines, releases and repos. */
const GLAB_READ_SUBS = new Set(['view', 'list', 'ls', 'diff', 'status', 'trace', 'get', 'search']);

/**
 * Analyse `glab <args>`, GitLab's CLI, like gh: merges are `blast_radius.merge`, `glab api` follows
 * gh api's grammar (same -X/--method and -f/-F fields), and anything but a read is `blast_radius.forge_write`.
 */
export function analyzeGlab(args: string[], a: Analyzer): void {
  const words = args.filter((x) => !x.startsWith('-'));
  const [group, sub] = words;
  if (mentionsMerge(args.join(' ')) || (group === 'mr' && sub === 'merge')) return deny(a, 'blast_radius.merge', `glab ${args.join(' ')}: Polly never merges; a human merges`);
  if (group === undefined || group === 'help' || group === 'version' || (group === 'auth' && sub === 'status')) return;
  if (group === 'api') return analyzeApi(args.slice(args.indexOf('api') + 1), a);
  if (sub !== undefined && GLAB_READ_SUBS.has(sub)) return;
  return denyForgeWrite(a, `glab ${args.join(' ')}`.replace(/\u0000/g, '…'));
}
