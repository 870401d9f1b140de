/**
 * What a confined process sees of the repository's git dir (issue 27 item 1, docs/read-view.md):
 * not the repository's common git dir, but a private one per task, bound read-only over the
 * common dir's path inside the sandbox, so the worktree's `.git` file (`gitdir:
 * <common>/worktrees/<name>`) and the admin dir's `commondir` (`../..`) resolve to it unchanged.
 *
 * The private git dir (`<repoStateDir>/read-view/tasks/<name>.git`) holds:
 * - `config`: the repository's own config file (never the files it includes) reduced to an
 *   allowlist ({@link sanitizedGitConfig}): no credentials in remote URLs, no `include`/`includeIf`,
 *   no credential helper, no program git would run (`core.sshCommand`, `core.fsmonitor`, filters, …);
 * - `HEAD` and one ref: the task's branch (`refs/heads/polly/<id>`) at its current tip. No stash,
 *   no other task's branch, no `refs/polly/…` (backups, quarantine), no remote-tracking ref, no tag;
 * - `objects/`: the task's own commits (fetched from the repository at each sandbox start, when the
 *   tip moved), and through `objects/info/alternates` the shared base store
 *   (`<repoStateDir>/read-view/base.git`), which holds only what is reachable from the bases
 *   workers got (the task's commits' nearest ancestors on a branch, tag or remote-tracking ref that
 *   is not Polly's: `git rev-list --boundary`). Neither holds the stash's objects, another task's
 *   commits, or anything only a backup ref reaches, so `git cat-file` of their ids finds nothing;
 * - `info/exclude` copied from the repository (so `git status` ignores what it ignores there);
 * - an empty `worktrees/<name>/`, the mount point of the worktree's real admin dir (index, HEAD).
 *
 * Polly's own git (workers/git/, outside the sandbox) keeps using the real repository: the view is
 * only ever mounted inside a sandbox, and nothing in it is fetched back (Polly commits what the
 * worker leaves in its worktree; the worker cannot commit: workers/git/git-policy.ts).
 *
 * Sources: gitrepository-layout(7) (`commondir`, `objects/info/alternates`, `worktrees/<id>`),
 * git-worktree(1), git-fetch(1), git-rev-list(1) `--boundary`/`--exclude`, git-config(1) (syntax).
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { PollyError } from '../../brain/core/errors.js';
import { createGitRunner, type GitRunner } from '../git/git.js';
import { repoStateDir } from './agent-state-dir.js';

/** The mounts of one task's read view (all absolute, canonical host paths). */
export interface GitReadView {
  /** The repository's real common git dir: where the view is mounted inside the sandbox. */
  commonDir: string;
  /** The task's private git dir, bound read-only at {@link commonDir}. */
  viewDir: string;
  /** The worktree's real admin dir (`<commonDir>/worktrees/<name>`), bound at its own path inside the view. */
  adminDir: string;
  /** The shared base store's `objects/` (the alternates target), bound read-only at its own path. */
  baseObjects: string;
  /** Files of the admin dir covered by an empty one (`config.worktree`: the user's, not sanitized). */
  maskedFiles: string[];
}

export interface GitReadViewInput {
  repoRoot: string;
  /** The process's working directory: a linked worktree of `repoRoot`, or anything else (then no view). */
  worktree: string;
  /** Where the stores live; default `<repoStateDir(repoRoot)>/read-view`. */
  stateDir?: string;
  /** Default {@link createGitRunner}(). */
  git?: GitRunner;
}

/**
 * The allowlisted keys of the view's config (lower-case, as `git config --list` prints them;
 * `*` is one subsection). Everything else is left out: credential helpers, `include*`, `url.*`,
 * programs (`core.sshCommand`, `core.fsmonitor`, `core.hooksPath`, `core.editor`, `core.pager`,
 * `filter.*`, `diff.*.textconv`, `merge.*.driver`), `http.*` (extra headers), `user.*`.
 */
const KEPT_KEYS: readonly RegExp[] = [
  /^core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|autocrlf|eol|safecrlf|quotepath|checkstat|trustctime|abbrev|whitespace|longpaths)$/,
  /^extensions\.(objectformat|worktreeconfig)$/,
  /^remote\.[^\n]+\.(url|pushurl|fetch)$/,
];

/**
 * A remote URL without credentials: the user name and password of a URL with a scheme removed
 * (`https://x-access-token:T@github.com/o/r` → `https://github.com/o/r`; for `ssh://` the user name
 * is kept, the password removed); scp-like (`git@host:path`) and local paths are kept as they are.
 * Pure. URL syntax: git-fetch(1) "GIT URLS".
 */
export function sanitizedRemoteUrl(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(.*)$/is.exec(url);
  if (!m) return url;
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string];
  const at = authority.lastIndexOf('@');
  if (at < 0) return url;
  const userinfo = authority.slice(0, at);
  const host = authority.slice(at + 1);
  const user = userinfo.split(':')[0] ?? '';
  const keepUser = /^(ssh|git\+ssh|ssh\+git)$/i.test(scheme) && user !== '' && !userinfo.includes(':');
  return `${scheme}://${keepUser ? `${user}@` : ''}${host}${rest}`;
}

function quoted(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t')}"`;
}

/**
 * The view's config text from `entries` (`git config --file <common>/config --null --list`
 * pairs, in order; that never follows `include`): only the {@link KEPT_KEYS}, remote URLs
 * through {@link sanitizedRemoteUrl}. Pure. Syntax: git-config(1) "CONFIGURATION FILE".
 */
export function sanitizedGitConfig(entries: ReadonlyArray<readonly [string, string]>): string {
  const sections = new Map<string, string[]>();
  for (const [key, value] of entries) {
    if (!KEPT_KEYS.some((k) => k.test(key))) continue;
    const first = key.indexOf('.');
    const last = key.lastIndexOf('.');
    const section = key.slice(0, first);
    const sub = first === last ? null : key.slice(first + 1, last);
    const name = key.slice(last + 1);
    const header = sub === null ? `[${section}]` : `[${section} ${quoted(sub)}]`;
    const v = /^remote\./.test(key) && (name === 'url' || name === 'pushurl') ? sanitizedRemoteUrl(value) : value;
    const lines = sections.get(header) ?? [];
    lines.push(`\t${name} = ${quoted(v)}`);
    sections.set(header, lines);
  }
  return [...sections].map(([h, lines]) => `${h}\n${lines.join('\n')}\n`).join('');
}

/** Where a worktree's `.git` file points (its admin dir), or null when `.git` is not such a file. */
function adminDirOf(worktree: string): string | null {
  let text: string;
  try {
    text = readFileSync(join(worktree, '.git'), 'utf8');
  } catch {
    return null; // no .git, or a directory (the main checkout)
  }
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  if (!m) return null;
  return isAbsolute(m[1]!) ? m[1]! : resolve(worktree, m[1]!);
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** Create `dir` as an empty bare store of `format` unless it is one already. */
async function ensureStore(git: GitRunner, dir: string, format: string): Promise<void> {
  const made = () => existsSync(join(dir, 'objects')) && existsSync(join(dir, 'HEAD'));
  if (made()) return;
  mkdirSync(dirname(dir), { recursive: true });
  // Another sandbox's init of the same store at the same moment is as good as ours.
  const r = await git.run(['init', '-q', '--bare', '--template=', `--object-format=${format}`, dir], { cwd: dirname(dir), okExitCodes: [1, 128] });
  if (r.exitCode !== 0 && !made())
    throw new PollyError('sandbox_unavailable', `Polly could not create the sandbox's git view store ${dir}: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
}

/**
 * Fetch commit `sha` from the repository's common git dir into store `dir` as `ref` (forced; no
 * tags, no FETCH_HEAD). Two sandboxes of one repository starting at once may fetch the same base
 * into the shared store and collide on its ref's lock: success is the ref holding `sha`
 * afterwards, and a failed fetch is tried again (three times in all, 0.2 s and 0.4 s apart).
 */
async function fetchInto(git: GitRunner, dir: string, commonDir: string, sha: string, ref: string, shallow: boolean): Promise<void> {
  const args = [
    '--git-dir',
    dir,
    '-c',
    'core.bare=true',
    '-c',
    'gc.auto=0',
    'fetch',
    '-q',
    '--no-tags',
    '--no-write-fetch-head',
    ...(shallow ? ['--update-shallow'] : []),
    commonDir,
    `+${sha}:${ref}`,
  ];
  let last = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 200 * attempt));
    const r = await git.run(args, { cwd: dir, okExitCodes: [1, 128], timeoutMs: 600_000 });
    if (r.exitCode === 0 || refValue(dir, ref) === sha) return;
    last = `${r.command} failed: ${r.stderr.trim() || `exit ${r.exitCode}`}`;
  }
  throw new PollyError('sandbox_unavailable', `Polly could not build the sandbox's git view (${dir}): ${last}. Remove ${dir} to have it built afresh.`, { details: { dir, sha } });
}

/**
 * Build (or bring up to date) the read view of `input.worktree`'s git dir, or null when the
 * worktree is not a linked worktree whose admin dir is `<common>/worktrees/<name>` (the main
 * checkout, a plain directory): such a process keeps today's view. Runs git outside the sandbox,
 * against the real repository, with Polly's runner (./../git/git.ts: no hooks, scrubbed env).
 * Cost: a few file reads and a `stat`, no git call, when nothing moved (tip, merge heads, index,
 * the repository's config); one local `git fetch` of the new commits when the task's tip moved;
 * the first time a base is seen, one fetch of its history (docs/read-view.md has the figures); a
 * fresh task on a base already seen: `init`, `rev-list`, `config` and `diff-index`, run at once, nothing fetched.
 * Needs git ≥ 2.29 (`fetch --no-write-fetch-head`, `init --object-format`); Polly needs 2.38.
 * @throws PollyError `sandbox_unavailable` when a fetch fails (the message names the command and git's words).
 */
export async function prepareGitReadView(input: GitReadViewInput): Promise<GitReadView | null> {
  const adminDir = adminDirOf(input.worktree);
  if (!adminDir || basename(dirname(adminDir)) !== 'worktrees') return null;
  const commondirText = readText(join(adminDir, 'commondir'));
  if (commondirText === null) return null;
  const commonDir = resolve(adminDir, commondirText.trim());
  refuseUnhandledFormat(commonDir);
  const git = input.git ?? createGitRunner();
  const name = basename(adminDir);
  const stateDir = input.stateDir ?? join(repoStateDir(input.repoRoot), 'read-view');
  const baseDir = join(stateDir, 'base.git');
  const viewDir = join(stateDir, 'tasks', `${name}.git`);
  const wt = { cwd: input.worktree };
  const head = (readText(join(adminDir, 'HEAD')) ?? '').trim();
  const branch = /^ref:\s*(refs\/heads\/\S+)$/.exec(head)?.[1] ?? null;
  const ref = branch ?? 'refs/view/head';
  let tip = branch ? refValue(commonDir, branch) : OID.test(head) ? head : null;
  if (tip === null) {
    const r = await git.run(['rev-parse', '--verify', '-q', 'HEAD^{commit}'], { ...wt, okExitCodes: [1] });
    tip = r.exitCode === 0 ? r.stdout.trim() : null;
  }
  // A merge (or cherry-pick, revert, rebase) in progress: its other commit, and the index's blobs
  // (a merge's result is staged before Polly commits it: integrate_base), belong in the view too.
  const specials = SPECIAL_HEADS.map((n) => (readText(join(adminDir, n)) ?? '').trim().split('\n')[0] ?? '').filter((l) => OID.test(l));
  let indexStat = '';
  try {
    const st = statSync(join(adminDir, 'index'));
    indexStat = `${st.size}:${st.mtimeMs}:${st.ino}`;
  } catch {
    // no index yet
  }
  // What the view was last built from, beside it (never inside it: the view is what the sandbox
  // shows, and this holds the unsanitized config).
  // What the view was built from, kept beside it to tell when to rebuild: a SHA-256, never the
  // repository's raw config itself (it may hold a token in a remote URL, and the state root is
  // readable from sandboxes started under another HOME or XDG_STATE_HOME).
  const seenText = createHash('sha256')
    .update(JSON.stringify({ config: readText(join(commonDir, 'config')) ?? '', specials, indexStat }))
    .digest('hex');
  const sourceCopy = `${viewDir}.seen`;
  const result = (): GitReadView => {
    const worktreeConfig = join(adminDir, 'config.worktree');
    return { commonDir, viewDir, adminDir, baseObjects: join(baseDir, 'objects'), maskedFiles: existsSync(worktreeConfig) ? [worktreeConfig] : [] };
  };
  // Nothing moved since the last sandbox of this task: the view is as it should be.
  if (readText(sourceCopy) === seenText && readText(join(viewDir, 'HEAD')) === headLine(branch, tip, head) && (!tip || refValue(viewDir, ref) === tip)) {
    return result();
  }
  const format = objectFormat(readText(join(commonDir, 'config')) ?? '');
  const shallow = existsSync(join(commonDir, 'shallow'));
  // A tip that does not descend from what the view holds (the branch was reset or rewritten, or a
  // new task reuses the name): a fresh view, so the earlier commits (kept by Polly under a backup
  // ref, or gone) are not readable by id from it.
  const held = refValue(viewDir, ref);
  if (held && tip && held !== tip) {
    const a = await git.run(['merge-base', '--is-ancestor', held, tip], { ...wt, okExitCodes: [1, 128] });
    if (a.exitCode !== 0) rmSync(viewDir, { recursive: true, force: true });
  }
  const tips = [...(tip && refValue(viewDir, ref) !== tip ? [tip] : []), ...specials];
  // The calls below read the repository and write nothing the others read: they run at once (a
  // fresh task's view went from four git calls in a row to the longest of them, issue 33 item 6).
  const [, , bases, configList, staged] = await Promise.all([
    ensureStore(git, baseDir, format),
    ensureStore(git, viewDir, format),
    // The bases: the task's commits' nearest ancestors on a ref that is not Polly's (not
    // `polly/*` branches, their remote-tracking twins, the stash or `refs/polly/*`), or the tip
    // itself when it is on such a ref already.
    Promise.all(
      tips.map(async (t) => {
        const rl = await git.run(['rev-list', '--boundary', t, '--not', '--exclude=polly/*', '--branches', '--exclude=*/polly/*', '--remotes', '--tags'], wt);
        const lines = rl.stdout.split('\n').filter(Boolean);
        return lines.length === 0 ? [t] : lines.filter((l) => l.startsWith('-')).map((l) => l.slice(1));
      }),
    ),
    // The repository's config (it may have changed since the last turn). `git config --file` never follows `include`.
    git.run(['config', '--file', join(commonDir, 'config'), '--null', '--list'], { ...wt, okExitCodes: [1] }),
    stagedBlobIds(git, input.worktree),
  ]);
  if (shallow) {
    copyFileSync(join(commonDir, 'shallow'), join(baseDir, 'shallow'));
    copyFileSync(join(commonDir, 'shallow'), join(viewDir, 'shallow'));
  }
  for (const sha of new Set(bases.flat())) {
    if (refValue(baseDir, `refs/bases/${sha}`) === sha) continue;
    await fetchInto(git, baseDir, commonDir, sha, `refs/bases/${sha}`, shallow);
  }
  // Config, alternates, info/exclude and the admin dir's mount point (cheap).
  const entries = configList.stdout
    .split('\0')
    .filter(Boolean)
    .map((e) => {
      const nl = e.indexOf('\n');
      return (nl < 0 ? [e, ''] : [e.slice(0, nl), e.slice(nl + 1)]) as [string, string];
    });
  writeFileSync(join(viewDir, 'config'), sanitizedGitConfig(entries));
  mkdirSync(join(viewDir, 'objects', 'info'), { recursive: true });
  writeFileSync(join(viewDir, 'objects', 'info', 'alternates'), `${join(baseDir, 'objects')}\n`);
  mkdirSync(join(viewDir, 'worktrees', name), { recursive: true });
  mkdirSync(join(viewDir, 'info'), { recursive: true });
  writeFileSync(join(viewDir, 'info', 'exclude'), readText(join(commonDir, 'info', 'exclude')) ?? '');
  if (tip && refValue(viewDir, ref) !== tip) {
    // A tip that is a base in the shared store (a fresh task: no commits of its own yet) is
    // readable through the alternates already: the ref is written, nothing fetched.
    if (refValue(baseDir, `refs/bases/${tip}`) === tip) writeRef(viewDir, ref, tip);
    else await fetchInto(git, viewDir, commonDir, tip, ref, shallow);
  }
  await writeDefaultBranch(git, input.worktree, commonDir, viewDir, tip, ref);
  writeFileSync(join(viewDir, 'HEAD'), headLine(branch, tip, head));
  await copyStagedBlobs(git, staged, commonDir, viewDir);
  // Last: the fast path above trusts the view only once everything else is written.
  writeFileSync(sourceCopy, seenText);
  return result();
}

const OID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/**
 * Refuse a repository whose format the view cannot rebuild: the reftable ref backend (git ≥ 2.45,
 * `extensions.refStorage = reftable`: refs are not files, and a worktree's own refs live in its
 * admin dir's reftable). Read from the common dir's config file.
 * @throws PollyError `sandbox_unavailable` naming the setting and what to do.
 */
function refuseUnhandledFormat(commonDir: string): void {
  const config = readText(join(commonDir, 'config')) ?? '';
  if (/^\s*refstorage\s*=\s*"?reftable"?\s*$/im.test(config))
    throw new PollyError(
      'sandbox_unavailable',
      `Polly cannot give a worker a read view of ${dirname(commonDir)}: it stores its refs in the reftable format (extensions.refStorage = reftable in ${join(commonDir, 'config')}), which the view does not handle yet. To fix: convert it to files refs with \`git refs migrate --ref-format=files\` (git 2.46 or newer), or clone it again without --ref-format=reftable.`,
      { details: { commonDir } },
    );
}

/**
 * The name of the repository's default branch, from its files: `refs/remotes/origin/HEAD`'s
 * target (`refs/remotes/origin/main` → `main`), else the main checkout's branch (its `HEAD`) when it
 * is not one of Polly's; null when neither names one.
 */
function defaultBranchName(commonDir: string): string | null {
  const originHead = /^ref:\s*refs\/remotes\/origin\/(\S+)$/m.exec(readText(join(commonDir, 'refs', 'remotes', 'origin', 'HEAD')) ?? '')?.[1];
  if (originHead && originHead !== 'HEAD') return originHead;
  const head = /^ref:\s*refs\/heads\/(\S+)$/m.exec(readText(join(commonDir, 'HEAD')) ?? '')?.[1];
  return head && !head.startsWith('polly/') ? head : null;
}

/**
 * Give the view the default branch (`refs/heads/main`), read-only like the rest, pointing at what
 * the task may see of it: the fork point of the task's commit and the branch's tip in the
 * repository (`git merge-base`), which the base store holds (it is reachable from a base). So
 * `git diff main` and `git log main..` work inside; a later commit of the branch is not shown.
 * Left out when the repository names no default branch, when it is the task's own branch, or when
 * the two share no history.
 */
async function writeDefaultBranch(git: GitRunner, worktree: string, commonDir: string, viewDir: string, tip: string | null, taskRef: string): Promise<void> {
  const name = defaultBranchName(commonDir);
  if (!name || !tip || `refs/heads/${name}` === taskRef) return;
  const mainTip = refValue(commonDir, `refs/heads/${name}`) ?? refValue(commonDir, `refs/remotes/origin/${name}`);
  if (!mainTip) return;
  // a task started on the default branch's tip (the usual fresh task) forks there: no git call
  const mb = mainTip === tip ? null : await git.run(['merge-base', mainTip, tip], { cwd: worktree, okExitCodes: [1, 128] });
  const fork = mb === null ? tip : mb.exitCode === 0 ? mb.stdout.trim() : '';
  if (!OID.test(fork)) return;
  const path = join(viewDir, 'refs', 'heads', ...name.split('/'));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${fork}\n`);
}

/** The admin dir's files naming a commit of an operation in progress (gitrepository-layout(7), git-merge(1), git-rebase(1)). */
const SPECIAL_HEADS = ['MERGE_HEAD', 'CHERRY_PICK_HEAD', 'REVERT_HEAD', 'REBASE_HEAD'] as const;

/**
 * The blobs of the worktree's index the view may lack (a merge result staged by Polly, a
 * conflict's stages), which {@link copyStagedBlobs} copies in. The index's entries that differ from HEAD come from one
 * `git diff-index --cached --raw` (its blobs in the index column); HEAD's own blobs are in the view
 * with its tip, so an index equal to HEAD (a fresh worktree: no other git call) needs nothing. With
 * an unmerged entry or no HEAD, every staged entry is checked (`git ls-files --stage`). Then one
 * `cat-file --batch-check` in the view, and, when some are missing, one `pack-objects` of exactly
 * those into the view's pack dir. Gitlinks (mode 160000) are left out: they name another
 * repository's commits. Formats: git-diff-index(1) "RAW OUTPUT FORMAT", git-ls-files(1) `--stage`.
 */
async function stagedBlobIds(git: GitRunner, worktree: string): Promise<Set<string>> {
  const ids = new Set<string>();
  const diff = await git.run(['diff-index', '--cached', '--raw', '-z', '--no-renames', 'HEAD', '--'], { cwd: worktree, okExitCodes: [128] });
  // `:<src mode> <dst mode> <src id> <dst id> <status>` NUL `<path>` NUL per changed entry, read
  // in pairs (a path may itself start with ':'); anything else falls back to the full listing
  const parts = diff.stdout.split('\0');
  let records: string[] | null = diff.exitCode === 0 ? [] : null;
  for (let i = 0; records !== null && i + 1 < parts.length; i += 2) {
    const meta = parts[i] as string;
    // an unmerged entry (its stages are not in the raw output) or a line not understood: full listing
    if (/^:\d+ \d+ [0-9a-f]+ [0-9a-f]+ [A-TV-Z]\d*$/.test(meta)) records.push(meta);
    else records = null;
  }
  if (records !== null) {
    for (const r of records) {
      const [, dstMode, , dstId, status] = r.slice(1).split(' ');
      if (!status?.startsWith('D') && dstMode !== '160000' && dstId && !/^0+$/.test(dstId)) ids.add(dstId);
    }
  } else {
    const ls = await git.run(['ls-files', '--stage', '-z'], { cwd: worktree, okExitCodes: [128] });
    if (ls.exitCode !== 0) return ids;
    for (const entry of ls.stdout.split('\0')) {
      const m = /^(\d+) ([0-9a-f]+) \d\t/.exec(entry);
      if (m && m[1] !== '160000') ids.add(m[2]!);
    }
  }
  return ids;
}

/** Copy the blobs of `ids` (from {@link stagedBlobIds}) that the view lacks: see there. */
async function copyStagedBlobs(git: GitRunner, ids: ReadonlySet<string>, commonDir: string, viewDir: string): Promise<void> {
  if (ids.size === 0) return;
  const check = await git.run(['--git-dir', viewDir, 'cat-file', '--batch-check'], { cwd: viewDir, input: `${[...ids].join('\n')}\n` });
  const missing = check.stdout
    .split('\n')
    .filter((l) => l.endsWith(' missing'))
    .map((l) => l.split(' ')[0]!);
  if (missing.length === 0) return;
  mkdirSync(join(viewDir, 'objects', 'pack'), { recursive: true });
  // Best effort: a blob the repository lacks too (a corrupt index) stays missing, as it is outside.
  await git.run(['--git-dir', commonDir, 'pack-objects', '-q', join(viewDir, 'objects', 'pack', 'pack')], { cwd: viewDir, input: `${missing.join('\n')}\n`, okExitCodes: [128] });
}

/**
 * The object format a repository's config file names (`extensions.objectFormat`, else sha1), read
 * from its text without running git. Syntax: git-config(1) "CONFIGURATION FILE"; the key:
 * gitrepository-layout(7) "extensions.objectFormat".
 */
export function objectFormat(configText: string): string {
  let section = '';
  for (const line of configText.split('\n')) {
    const header = /^\s*\[\s*([A-Za-z0-9.-]+)/.exec(line);
    if (header) section = (header[1] as string).toLowerCase();
    const kv = /^\s*(?:\[[^\]]*\]\s*)?([A-Za-z][A-Za-z0-9-]*)\s*=\s*"?([A-Za-z0-9]+)"?\s*(?:[#;].*)?$/.exec(line);
    if (section === 'extensions' && kv && (kv[1] as string).toLowerCase() === 'objectformat') return (kv[2] as string).toLowerCase();
  }
  return 'sha1';
}

/** Write `gitDir`'s loose ref `ref` (e.g. `refs/heads/polly/t1`) to hold `sha`: the layout git reads (gitrepository-layout(7)). */
function writeRef(gitDir: string, ref: string, sha: string): void {
  mkdirSync(dirname(join(gitDir, ref)), { recursive: true });
  writeFileSync(join(gitDir, ref), `${sha}\n`);
}

/** The view's HEAD file: the task's branch as a symbolic ref, else the detached commit. */
function headLine(branch: string | null, tip: string | null, head: string): string {
  return branch ? `ref: ${branch}\n` : `${tip ?? head}\n`;
}

/**
 * The commit id `ref` holds in git dir `gitDir`, read from its files (a loose ref, else
 * `packed-refs`; gitrepository-layout(7)), or null (absent, symbolic, or another ref backend).
 */
function refValue(gitDir: string, ref: string): string | null {
  const loose = readText(join(gitDir, ref))?.trim();
  if (loose !== undefined) return OID.test(loose) ? loose : null;
  for (const line of (readText(join(gitDir, 'packed-refs')) ?? '').split('\n')) {
    const [sha, name] = line.split(' ');
    if (name === ref && sha && OID.test(sha)) return sha;
  }
  return null;
}

/**
 * Remove the read view of the linked worktree `worktree` (its task's private git dir), if any:
 * Polly calls it when it removes the worktree. Reads the worktree's `.git` file, so call it before
 * the worktree is gone. Never throws.
 * @param stateDir where the views live; default `<repoStateDir(repoRoot)>/read-view`.
 */
export function removeGitReadView(repoRoot: string, worktree: string, stateDir = join(repoStateDir(repoRoot), 'read-view')): void {
  const adminDir = adminDirOf(worktree);
  if (!adminDir) return;
  const viewDir = join(stateDir, 'tasks', `${basename(adminDir)}.git`);
  rmSync(viewDir, { recursive: true, force: true });
  rmSync(`${viewDir}.seen`, { force: true });
}
