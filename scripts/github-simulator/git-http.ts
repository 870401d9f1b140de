/**
 * Git over HTTP for the GitHub API simulator: a local bare repository served with git's own
 * smart-HTTP server, `git http-backend` (a CGI program, https://git-scm.com/docs/git-http-backend),
 * so that `git fetch` / `git push` against the simulated `http://HOST/OWNER/REPO.git` reach a real
 * repository, as they reach GitHub's. Pushes are accepted (`http.receivepack`), forced ones too:
 * GitHub accepts a force-push to an unprotected branch, so the simulator records it instead of
 * refusing it (see `GitHubSimulator.refUpdates`).
 *
 * Also the few git reads the simulator needs on that repository (branch tips, ancestry,
 * mergeability by `git merge-tree`, a merge commit written the way GitHub's merge button does).
 * Git runs with the caller's `GIT_*` environment removed (tests may run inside a git hook).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';

/** The environment for git on the served repository: no inherited `GIT_*` variables, a fixed committer. */
function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return {
    ...env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'GitHub',
    GIT_AUTHOR_EMAIL: 'noreply@github.com',
    GIT_COMMITTER_NAME: 'GitHub',
    GIT_COMMITTER_EMAIL: 'noreply@github.com',
    ...extra,
  };
}

/** Run git in `gitDir`; stdout trimmed. Throws on a non-zero exit unless it is in `ok`. */
export function gitIn(gitDir: string, args: string[], ok: number[] = []): { code: number; out: string } {
  const r = spawnSync('git', ['--git-dir', gitDir, ...args], { env: gitEnv(), encoding: 'utf8' });
  const code = r.status ?? 1;
  if (code !== 0 && !ok.includes(code)) throw new Error(`simulator: git ${args.join(' ')} in ${gitDir} exited ${code}: ${r.stderr.trim()}`);
  return { code, out: r.stdout.trim() };
}

/** Branch name → commit of every `refs/heads/*` in the bare repository. */
export function branchTips(gitDir: string): Map<string, string> {
  const out = execFileSync('git', ['--git-dir', gitDir, 'for-each-ref', '--format=%(refname:strip=2) %(objectname)', 'refs/heads'], { env: gitEnv(), encoding: 'utf8' });
  const tips = new Map<string, string>();
  for (const line of out.split('\n')) {
    const [name, sha] = line.trim().split(' ');
    if (name && sha) tips.set(name, sha);
  }
  return tips;
}

/** Whether `ancestor` is an ancestor of (or equal to) `commit`. */
export function isAncestor(gitDir: string, ancestor: string, commit: string): boolean {
  return gitIn(gitDir, ['merge-base', '--is-ancestor', ancestor, commit], [1, 128]).code === 0;
}

/**
 * Whether `head` merges cleanly into `base`: `git merge-tree --write-tree` (git ≥ 2.38) exits 1 on
 * a conflict. Returns the conflicting paths (empty: it merges).
 */
export function mergeConflicts(gitDir: string, base: string, head: string): string[] {
  const r = gitIn(gitDir, ['merge-tree', '--write-tree', '--name-only', '--no-messages', base, head], [1]);
  if (r.code === 0) return [];
  return r.out.split('\n').slice(1).filter(Boolean);
}

/**
 * Merge `head` into branch `base` as GitHub's merge button does (`merge`: a merge commit with two
 * parents; `squash`: one commit with the PR's tree change; `rebase` is written as a squash here),
 * and move the branch. Returns the new commit.
 * @throws Error when the head does not merge cleanly.
 */
export function mergeOnServer(gitDir: string, base: string, head: string, method: 'merge' | 'squash' | 'rebase', message: string): string {
  const baseSha = gitIn(gitDir, ['rev-parse', `refs/heads/${base}`]).out;
  const r = gitIn(gitDir, ['merge-tree', '--write-tree', baseSha, head], [1]);
  if (r.code !== 0) throw new Error(`simulator: ${head} does not merge cleanly into ${base}`);
  const tree = r.out.split('\n')[0]!;
  const parents = method === 'merge' ? ['-p', baseSha, '-p', head] : ['-p', baseSha];
  const commit = gitIn(gitDir, ['commit-tree', tree, ...parents, '-m', message]).out;
  gitIn(gitDir, ['update-ref', `refs/heads/${base}`, commit, baseSha]);
  return commit;
}

interface CgiRequest {
  method: string;
  /** Path below the repository, e.g. `/info/refs` or `/git-receive-pack`. */
  pathInfo: string;
  queryString: string;
  headers: Record<string, string | string[] | undefined>;
  pipe(to: NodeJS.WritableStream): unknown;
}
interface CgiResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  write(chunk: Buffer): unknown;
  end(): unknown;
}

/**
 * Answer one smart-HTTP request with `git http-backend` on the bare repository `gitDir` (CGI:
 * RFC 3875 variables in, a header block and the body out). `done` is called after the backend
 * exits (the simulator re-reads the branches after a push).
 */
export function serveGitHttp(gitDir: string, req: CgiRequest, res: CgiResponse, done: () => void): void {
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(', ') : (v ?? '');
  };
  const cgiEnv: Record<string, string> = {
    GIT_PROJECT_ROOT: gitDir,
    GIT_HTTP_EXPORT_ALL: '1',
    PATH_INFO: req.pathInfo,
    REQUEST_METHOD: req.method,
    QUERY_STRING: req.queryString,
    CONTENT_TYPE: header('content-type'),
    REMOTE_USER: 'polly-operator',
    REMOTE_ADDR: '127.0.0.1',
    // Pushes over HTTP are off unless enabled (git http-backend "SERVICES").
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.receivepack',
    GIT_CONFIG_VALUE_0: 'true',
  };
  if (header('content-length')) cgiEnv.CONTENT_LENGTH = header('content-length');
  if (header('content-encoding')) cgiEnv.HTTP_CONTENT_ENCODING = header('content-encoding');
  if (header('git-protocol')) cgiEnv.GIT_PROTOCOL = header('git-protocol');
  const child = spawn('git', ['http-backend'], { env: gitEnv(cgiEnv), stdio: ['pipe', 'pipe', 'pipe'] });
  req.pipe(child.stdin);
  let head = Buffer.alloc(0);
  let headersDone = false;
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    headersDone = true;
    res.statusCode = 200;
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const i = line.indexOf(':');
      if (i < 0) continue;
      const name = line.slice(0, i).trim();
      const value = line.slice(i + 1).trim();
      if (name.toLowerCase() === 'status') res.statusCode = Number.parseInt(value, 10) || 500;
      else res.setHeader(name, value);
    }
    const rest = head.subarray(end + 4);
    if (rest.length) res.write(rest);
  });
  child.on('close', (code) => {
    if (!headersDone) {
      res.statusCode = 500;
      res.setHeader('content-type', 'text/plain');
      res.write(Buffer.from(`git http-backend exited ${code}: ${stderr}`));
    }
    res.end();
    done();
  });
}
