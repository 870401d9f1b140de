/**
 * The ref guard: refs and git metadata are compared around every agent turn and every acceptance
 * run, so a ref a worker moved (by any means: a script, `/usr/bin/git`, an interpreter, git's own
 * `rebase --exec`) is caught even where no sandbox exists (`workers.allow_unconfined`).
 *
 * A snapshot holds:
 * - every local ref (`git for-each-ref`, loose and packed alike) except remote-tracking refs
 *   (`refs/remotes/`: caches that any fetch rewrites; the remote itself is compared instead), and
 *   what the main checkout's `HEAD` points to;
 * - for each remote whose URL is a path on this machine (a bare `origin` next to the repository,
 *   `file://…`), every ref of that repository, read with `for-each-ref` in it (no upload-pack is
 *   run, so a `remote.<name>.uploadpack` a worker wrote cannot run either). Network remotes
 *   (GitHub over https/ssh) are not listed: a listing per turn costs a round trip and needs
 *   credentials that Polly keeps away from workers, and a sandboxed worker has no route to them
 *   (only the model endpoint is reachable); they are recorded as skipped, with the reason;
 * - the content of the git files that make git run programs or say where things are: the common
 *   `config`, every `worktrees/<name>/config.worktree`, every file under `hooks/`, and each linked
 *   worktree's `.git` file (keyed by its absolute path).
 *
 * {@link diffSnapshots} (pure) lists what changed, minus the refs the caller allows (the task's own
 * branch) and minus what Polly itself wrote in the meantime ({@link recordPollyRefWrite}: parallel
 * tasks commit, back up and push their own refs while another task's turn runs). The guard's
 * `restore` puts the old values back (local refs with `update-ref <ref> <old> <new>`, a compare-and-
 * swap; remote refs in the remote repository the same way; files rewritten or deleted, never
 * through a symlink: files are read `O_NOFOLLOW` and put back by temp file + rename), after
 * keeping every value it overwrites under `refs/polly/quarantine/<stamp>/…` so nothing is lost
 * (the user may have committed on `main` during the turn: the commit stays reachable there).
 *
 * Cost: two `for-each-ref` calls per snapshot plus a few small file reads (measured on a repository
 * with 1,000 refs: see `npm run bench -- ref-guard`).
 */
import { appendFileSync, existsSync, lstatSync, type Stats, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readRegularFile, writeFileBelow } from '../agents/state-dir-files.js';
import { hostWritable, type SandboxMount } from '../sandbox/sandbox-spec.js';
import { firstLine, type GitRunner } from './git.js';

/** Where a ref lives: the repository itself, or the repository of a path remote. */
export type RefScope = 'local' | `remote:${string}`;

/** A remote whose refs the snapshot holds, or why not. */
export interface RemoteSnapshot {
  name: string;
  url: string;
  /** Absolute path of the remote repository when it is on this machine; else null. */
  path: string | null;
  /** ref → object id; null when the remote was not listed (see `skipped`). */
  refs: Record<string, string> | null;
  /** Why the remote was not listed (network remote, missing path), else null. */
  skipped: string | null;
}

export interface RefSnapshot {
  /** ISO-8601 time the snapshot was taken. */
  takenAt: string;
  /** Local ref → object id (no `refs/remotes/`). */
  local: Record<string, string>;
  /** What the main checkout's HEAD is: `ref: refs/heads/main` or an object id. */
  head: string;
  remotes: RemoteSnapshot[];
  /**
   * Path relative to the common git dir (or a worktree's absolute `.git` file) → base64 content;
   * something that is not a regular file there (a symlink, a FIFO, a directory: never followed nor
   * read) is recorded as {@link NOT_A_FILE} followed by its kind, so replacing a file by a symlink
   * counts as a change.
   */
  files: Record<string, string>;
  /** The permission bits (`mode & 0o7777`) of each regular file in `files` (hooks keep their execute bit on restore). Absent in snapshots written before it existed. */
  modes?: Record<string, number>;
  /** Absolute common git dir the snapshot was taken of. */
  commonDir: string;
}

/** One change between two snapshots. `old`/`new` are object ids (refs) or short content hashes (files); null: absent. */
export interface RefChange {
  kind: 'ref' | 'head' | 'file';
  scope: RefScope;
  /** Ref name, `HEAD`, or the file's path relative to the common git dir. */
  name: string;
  old: string | null;
  new: string | null;
}

/** What `restore` did with each change. */
export interface RestoreReport {
  restored: RefChange[];
  /** Changes that could not be undone, each with the reason. */
  failed: Array<{ change: RefChange; reason: string }>;
  /** Quarantine refs keeping the values that were overwritten or deleted. */
  quarantined: string[];
}

export interface RefGuard {
  /**
   * Take a snapshot of the repository (see the module doc).
   * @param knownRemotes  the remotes of an earlier snapshot: the after-snapshot reads the same
   *   remote paths even if a worker rewrote `remote.<name>.url`.
   * @throws PollyError `git_failed` when git cannot list the refs.
   */
  snapshot(knownRemotes?: RemoteSnapshot[]): Promise<RefSnapshot>;
  /**
   * Undo `changes` (from {@link diffSnapshots} of `before` and a later snapshot). Files first (so
   * git runs with the trusted config again), then refs. Never throws for a change it cannot undo:
   * it is reported in `failed`.
   */
  restore(before: RefSnapshot, changes: readonly RefChange[]): Promise<RestoreReport>;
}

export interface RefGuardOptions {
  git: GitRunner;
  /** The repository's main checkout. */
  repoRoot: string;
  clock?: { now(): Date };
}

/**
 * One write Polly itself made to a ref (so another task's guard does not count it): the value
 * written (null: deleted), or `pending` while a write whose value is not known yet runs; `at` in
 * ms since the epoch.
 */
export interface PollyRefWrite {
  scope: 'local' | 'remote';
  ref: string;
  oid: string | null | 'pending';
  at: number;
}

const ledger: PollyRefWrite[] = [];
const LEDGER_MAX = 4096;

/**
 * The file where Polly's ref writes for a repository are also kept, so a Brain restarted after a
 * crash still knows what its predecessor wrote during a turn it adopts: `.polly/guard/ref-writes.jsonl`
 * under the main checkout (covered inside the sandbox: no worker sees or writes it). One JSON line
 * per write, `{scope, ref, oid, at, id}` with `oid: "pending"` for an announced write, and
 * `{id, done: true}` when an announcement ends. Written only where `.polly/` exists; compacted to
 * the last 24 h of writes when it passes 256 KiB.
 */
export function pollyRefWritesFile(repoRoot: string): string {
  return join(repoRoot, '.polly', 'guard', 'ref-writes.jsonl');
}

/** Entries older than this are dropped when the file is compacted (a turn never lasts a day). */
const PERSIST_KEEP_MS = 24 * 60 * 60 * 1000;
const PERSIST_COMPACT_BYTES = 256 * 1024;
let persistSeq = 0;

function persist(repoRoot: string | undefined, line: Record<string, unknown>): void {
  if (!repoRoot) return;
  const file = pollyRefWritesFile(repoRoot);
  // Only where Polly keeps its state (`polly init` made `.polly/`): never creates `.polly/` itself.
  if (!existsSync(dirname(dirname(file)))) return;
  try {
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `${JSON.stringify(line)}\n`);
    if (statSync(file).size > PERSIST_COMPACT_BYTES) {
      const keep = readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => {
          try {
            return (JSON.parse(l) as { at?: number }).at! >= Date.now() - PERSIST_KEEP_MS;
          } catch {
            return false;
          }
        });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, keep.map((l) => `${l}\n`).join(''));
      renameSync(tmp, file);
    }
  } catch {
    // The in-memory ledger still holds the write; only a restart in the middle of a turn loses it.
  }
}

/**
 * Polly's ref writes kept in {@link pollyRefWritesFile} at or after `since` (ms since the epoch),
 * by this or any earlier Brain process; an announced write that never ended counts as pending
 * (any value of its ref is Polly's). Malformed lines are skipped; a missing file is no writes.
 */
export function persistedPollyRefWrites(repoRoot: string, since: number): PollyRefWrite[] {
  let text: string;
  try {
    text = readFileSync(pollyRefWritesFile(repoRoot), 'utf8');
  } catch {
    return [];
  }
  const byId = new Map<string, PollyRefWrite>();
  const out: PollyRefWrite[] = [];
  for (const l of text.split('\n')) {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(l) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (e.done === true && typeof e.id === 'string') {
      const w = byId.get(e.id);
      if (w) out.splice(out.indexOf(w), 1);
      continue;
    }
    if ((e.scope !== 'local' && e.scope !== 'remote') || typeof e.ref !== 'string' || typeof e.at !== 'number') continue;
    if (e.oid !== null && typeof e.oid !== 'string') continue;
    const w: PollyRefWrite = { scope: e.scope, ref: e.ref, oid: e.oid, at: e.at };
    out.push(w);
    if (typeof e.id === 'string') byId.set(e.id, w);
  }
  return out.filter((w) => w.at >= since - 1000);
}

/**
 * Record that Polly itself set `ref` to `oid` (null: deleted), locally or on a remote. Called by
 * the worktree manager, the push tool and the local forge after each ref write. Process-wide:
 * the Brain process runs every task tool of a repository. With `repoRoot`, the write is also kept
 * in {@link pollyRefWritesFile} for a Brain that adopts the turn after a crash.
 */
export function recordPollyRefWrite(scope: 'local' | 'remote', ref: string, oid: string | null, repoRoot?: string): void {
  const at = Date.now();
  ledger.push({ scope, ref, oid, at });
  if (ledger.length > LEDGER_MAX) ledger.splice(0, ledger.length - LEDGER_MAX);
  persist(repoRoot, { scope, ref, oid, at });
}

/**
 * Announce a write by Polly to `ref` whose new value is known only once it is done (`git commit`
 * moves the branch, then Polly reads the commit id). Until `done(oid)` is called, any value of
 * `ref` counts as Polly's: another task's guard that snapshots between the commit and the record
 * would otherwise take Polly's own commit for a worker's, and put the branch back (measured: a
 * parallel task's commit rolled back under load). `done(oid)` records the value written;
 * `done(undefined)` withdraws the announcement (the write failed). With `repoRoot`, both are kept
 * in {@link pollyRefWritesFile} too (a Brain killed between the two leaves the write pending).
 */
export function beginPollyRefWrite(scope: 'local' | 'remote', ref: string, repoRoot?: string): (oid: string | null | undefined) => void {
  const entry: PollyRefWrite = { scope, ref, oid: 'pending', at: Date.now() };
  const id = `${process.pid}-${Date.now()}-${++persistSeq}`;
  ledger.push(entry);
  if (ledger.length > LEDGER_MAX) ledger.splice(0, ledger.length - LEDGER_MAX);
  persist(repoRoot, { ...entry, id });
  return (oid) => {
    const i = ledger.indexOf(entry);
    if (i >= 0) ledger.splice(i, 1);
    if (oid !== undefined) recordPollyRefWrite(scope, ref, oid, repoRoot);
    persist(repoRoot, { id, done: true, at: Date.now() });
  };
}

function pollyWrote(scope: RefScope, ref: string, oid: string | null, since: number, extra: readonly PollyRefWrite[]): boolean {
  const kind = scope === 'local' ? 'local' : 'remote';
  // Slack of 1 s: a write recorded just before the snapshot's timestamp was taken.
  const match = (e: PollyRefWrite) => e.scope === kind && e.ref === ref && (e.oid === oid || e.oid === 'pending') && e.at >= since - 1000;
  return ledger.some(match) || extra.some(match);
}

export interface DiffOptions {
  /** Local refs the worker may move (the task's own branch, e.g. `refs/heads/polly/t1`). */
  allowLocal?: readonly string[];
  /** Also accept changes Polly recorded with {@link recordPollyRefWrite}. Default true. */
  useLedger?: boolean;
  /**
   * More writes of Polly's to accept (with `useLedger`): {@link persistedPollyRefWrites}, for a
   * turn whose before-snapshot an earlier Brain process took.
   */
  pollyWrites?: readonly PollyRefWrite[];
}

/** The changes from `before` to `after`, minus the allowed ones. Pure but for the process-wide ledger. */
export function diffSnapshots(before: RefSnapshot, after: RefSnapshot, options: DiffOptions = {}): RefChange[] {
  const allow = new Set(options.allowLocal ?? []);
  const since = Date.parse(before.takenAt);
  const useLedger = options.useLedger ?? true;
  const extra = options.pollyWrites ?? [];
  const out: RefChange[] = [];
  const compareRefs = (scope: RefScope, a: Record<string, string>, b: Record<string, string>) => {
    for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const old = a[name] ?? null;
      const now = b[name] ?? null;
      if (old === now) continue;
      if (scope === 'local' && allow.has(name)) continue;
      if (useLedger && pollyWrote(scope, name, now, since, extra)) continue;
      out.push({ kind: 'ref', scope, name, old, new: now });
    }
  };
  compareRefs('local', before.local, after.local);
  if (before.head !== after.head) out.push({ kind: 'head', scope: 'local', name: 'HEAD', old: before.head, new: after.head });
  for (const r of before.remotes) {
    const later = after.remotes.find((x) => x.name === r.name);
    if (r.refs === null) continue;
    compareRefs(`remote:${r.name}`, r.refs, later?.refs ?? {});
  }
  for (const name of new Set([...Object.keys(before.files), ...Object.keys(after.files)])) {
    const old = before.files[name] ?? null;
    const now = after.files[name] ?? null;
    // A worktree's `.git` file appears and disappears with the worktree (Polly adds and removes
    // worktrees of parallel tasks); only a rewritten one counts.
    if (isAbsolute(name) && (old === null || now === null)) continue;
    if (old !== now) out.push({ kind: 'file', scope: 'local', name, old: old === null ? null : shortHash(old), new: now === null ? null : shortHash(now) });
  }
  return out;
}

/** `ref, old → new` lines for a task's reason and the journal (object ids shortened to 12). */
export function describeChanges(changes: readonly RefChange[]): string {
  const short = (v: string | null) => (v === null ? '(none)' : v.startsWith('ref: ') ? v.slice(5) : v.slice(0, 12));
  return changes
    .map((c) => {
      const where = c.scope === 'local' ? '' : `${c.scope.slice('remote:'.length)}: `;
      const what = c.kind === 'file' && !isAbsolute(c.name) ? `.git/${c.name}` : c.name;
      const verb = c.old === null ? 'created' : c.new === null ? 'deleted' : 'changed';
      return `${where}${what} ${verb}, ${short(c.old)} → ${short(c.new)}`;
    })
    .join('; ');
}

function shortHash(base64: string): string {
  // FNV-1a over the content: a stable short label for a file's content in messages.
  let h = 0x811c9dc5;
  for (let i = 0; i < base64.length; i++) {
    h ^= base64.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `content:${h.toString(16).padStart(8, '0')}`;
}

/** The path of a remote URL on this machine, or null for a network URL. */
export function localRemotePath(url: string, repoRoot: string): string | null {
  if (url.startsWith('file://')) return fileURLToPath(url);
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url)) return null; // https://, ssh://, git://
  if (/^[^/]+@[^/:]+:/.test(url) || /^[A-Za-z0-9.-]+:(?!\/\/)/.test(url)) return null; // scp-like user@host:path
  return isAbsolute(url) ? url : resolve(repoRoot, url);
}

/**
 * The common git dir of each repository root a guard was made for in this process: a guard is made
 * per step (brain/task-tools/ref-guard-step.ts), and where a repository keeps its git dir does not
 * change while Polly runs in it. Only answers are kept: a failed call is asked again.
 */
const commonDirs = new Map<string, Promise<string>>();

/** Create the ref guard of one repository. */
export function createRefGuard(options: RefGuardOptions): RefGuard {
  const { git, repoRoot } = options;
  const clock = options.clock ?? { now: () => new Date() };
  const commonDir = async (): Promise<string> => {
    const known = await commonDirs.get(repoRoot)?.catch(() => null);
    if (known && existsSync(known)) return known; // (a repository re-made at the same path is asked again)
    const asked = git.run(['rev-parse', '--path-format=absolute', '--git-common-dir'], { cwd: repoRoot }).then((r) => firstLine(r));
    commonDirs.set(repoRoot, asked);
    asked.catch(() => commonDirs.delete(repoRoot));
    return asked;
  };

  async function listRefs(cwd: string): Promise<Record<string, string>> {
    const r = await git.run(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd });
    const out: Record<string, string> = {};
    for (const line of r.stdout.split('\n')) {
      const sp = line.indexOf(' ');
      if (sp > 0) out[line.slice(sp + 1)] = line.slice(0, sp);
    }
    return out;
  }

  async function remotesOf(): Promise<RemoteSnapshot[]> {
    const r = await git.run(['config', '--get-regexp', '^remote\\..*\\.url$'], { cwd: repoRoot, okExitCodes: [1] });
    const out: RemoteSnapshot[] = [];
    for (const line of r.stdout.split('\n')) {
      const m = /^remote\.(.+)\.url (.*)$/.exec(line.trim());
      if (!m) continue;
      const path = localRemotePath(m[2]!, repoRoot);
      out.push({ name: m[1]!, url: m[2]!, path, refs: null, skipped: null });
    }
    return out;
  }

  /**
   * The metadata files of the common git dir `dir` (see the module doc). Nothing is followed: a
   * file is opened `O_NOFOLLOW` (state-dir-files.ts `readRegularFile`), a `hooks/` or
   * `worktrees/<name>/` that is not a real directory is recorded, not listed through, and a
   * non-regular file is recorded by its kind ({@link NOT_A_FILE}).
   */
  function readFiles(dir: string): { files: Record<string, string>; modes: Record<string, number> } {
    const files: Record<string, string> = {};
    const modes: Record<string, number> = {};
    const add = (key: string, p: string) => {
      const st = lstatOrNull(p);
      if (!st) return;
      const bytes = st.isFile() ? readRegularFile(p) : null;
      if (bytes === null) files[key] = `${NOT_A_FILE}${kindOf(st)}`;
      else {
        files[key] = bytes.toString('base64');
        modes[key] = st.mode & 0o7777;
      }
    };
    add('config', join(dir, 'config'));
    for (const sub of ['hooks', 'worktrees']) {
      const d = join(dir, sub);
      const st = lstatOrNull(d);
      if (!st) continue;
      if (!st.isDirectory()) {
        add(sub, d);
        continue;
      }
      for (const name of readdirSync(d).sort()) {
        if (sub === 'hooks') add(`hooks/${name}`, join(d, name));
        else {
          add(`worktrees/${name}/config.worktree`, join(d, name, 'config.worktree'));
          // The worktree's `.git` file (`gitdir: …`), which lives in the writable worktree: a
          // worker pointing it at a git dir of its own would have Polly's `git add` run that
          // dir's config (filters, …). Keyed by its absolute path.
          const gitdir = readRegularFile(join(d, name, 'gitdir'));
          const gitFile = gitdir?.toString('utf8').trim() ?? '';
          if (isAbsolute(gitFile)) add(gitFile, gitFile);
        }
      }
    }
    return { files, modes };
  }

  return {
    async snapshot(knownRemotes) {
      const takenAt = clock.now().toISOString();
      const dir = await commonDir();
      const { files, modes } = readFiles(dir);
      // The local listing and each remote's run in parallel (one git process each).
      const [local, remotes] = await Promise.all([
        listRefs(repoRoot),
        (async () => {
          const list = (knownRemotes ?? (await remotesOf())).map((r) => ({ ...r, refs: null as Record<string, string> | null, skipped: null as string | null }));
          await Promise.all(
            list.map(async (r) => {
              if (r.path === null) r.skipped = `network remote (${r.url}): not listed per turn; workers have no credentials and, in the sandbox, no route to it`;
              else if (!existsSync(r.path)) r.skipped = `remote path ${r.path} does not exist`;
              else r.refs = await listRefs(r.path);
            }),
          );
          return list;
        })(),
      ]);
      for (const name of Object.keys(local)) if (name.startsWith('refs/remotes/')) delete local[name];
      const head = readRegularFile(join(dir, 'HEAD'))?.toString('utf8').trim() ?? '';
      return { takenAt, local, head, remotes, files, modes, commonDir: dir };
    },

    async restore(before, changes) {
      const report: RestoreReport = { restored: [], failed: [], quarantined: [] };
      const stamp = clock.now().toISOString().replace(/[-:.]/g, '');
      // Files first: later git calls then run with the trusted config and hooks.
      // Removals before rewrites: a planted `hooks` link goes before the hooks below it are put back.
      const fileChanges = changes.filter((x) => x.kind === 'file');
      const absentBefore = (x: RefChange) => before.files[x.name] === undefined;
      for (const c of [...fileChanges.filter(absentBefore), ...fileChanges.filter((x) => !absentBefore(x))]) {
        // The directory Polly trusts for this file: the common git dir (read-only in the sandbox),
        // or, for a worktree's `.git` file, the worktree (a bind mount the worker cannot replace).
        const root = isAbsolute(c.name) ? dirname(c.name) : before.commonDir;
        const p = isAbsolute(c.name) ? c.name : join(before.commonDir, c.name);
        try {
          const old = before.files[c.name];
          if (old === undefined) rmSync(p, { force: true, recursive: true });
          else if (old.startsWith(NOT_A_FILE)) throw new Error(`it was no regular file before (${old.slice(NOT_A_FILE.length)}); Polly does not recreate it`);
          else restoreFile(root, p, Buffer.from(old, 'base64'), before.modes?.[c.name]);
          report.restored.push(c);
        } catch (error) {
          report.failed.push({ change: c, reason: (error as Error).message });
        }
      }
      for (const c of changes.filter((x) => x.kind !== 'file')) {
        if (c.kind === 'head') {
          report.failed.push({ change: c, reason: "the main checkout's HEAD is not moved back by Polly (its files would not follow); check out the branch again yourself" });
          continue;
        }
        const remote = c.scope === 'local' ? null : before.remotes.find((r) => `remote:${r.name}` === c.scope);
        const cwd = remote ? remote.path : repoRoot;
        if (!cwd) {
          report.failed.push({ change: c, reason: `no local path for ${c.scope}` });
          continue;
        }
        try {
          if (c.new !== null) {
            const q = `refs/polly/quarantine/${stamp}/${c.scope === 'local' ? 'local' : c.scope.slice('remote:'.length)}/${c.name.replace(/^refs\//, '')}`;
            // In this repository: the objects the worker wrote exist here (a push to a path
            // remote copied them from here). Keeps the overwritten value reachable.
            const have = await git.run(['cat-file', '-e', `${c.new}^{object}`], { cwd: repoRoot, okExitCodes: [1, 128] });
            if (have.exitCode === 0) {
              await git.run(['update-ref', '-m', 'polly ref guard: quarantine', q, c.new, ''], { cwd: repoRoot });
              recordPollyRefWrite('local', q, c.new, repoRoot);
              report.quarantined.push(q);
            }
          }
          const args = c.old === null ? ['update-ref', '-d', c.name, c.new ?? ''] : ['update-ref', '-m', 'polly ref guard: restore', c.name, c.old, c.new ?? ''];
          await git.run(args, { cwd });
          recordPollyRefWrite(c.scope === 'local' ? 'local' : 'remote', c.name, c.old, repoRoot);
          report.restored.push(c);
        } catch (error) {
          report.failed.push({ change: c, reason: (error as Error).message.split('\n')[0] ?? 'update-ref failed' });
        }
      }
      return report;
    },
  };
}

/** What {@link RefSnapshot.files} holds for a path that is not a regular file, followed by its kind. Never valid base64. */
export const NOT_A_FILE = '!not-a-file:';

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file too large';
  return 'special file';
}

/**
 * Put `data` back at `path` (below the trusted directory `root`) without writing through anything
 * planted there: a symlink or directory in place of the file, or in place of a directory between
 * `root` and it, is removed, never followed; the data goes to a fresh temp file (`O_EXCL |
 * O_NOFOLLOW`, `mode` set on its descriptor) that is renamed over `path` (state-dir-files.ts
 * `writeFileBelow`): a rename replaces a symlink, it never writes through one.
 */
function restoreFile(root: string, path: string, data: Buffer, mode: number | undefined): void {
  const st = lstatOrNull(path);
  if (st && !st.isFile()) rmSync(path, { recursive: true, force: true });
  writeFileBelow(root, path, data, mode ?? 0o644);
}

/** `path` with its longest existing prefix resolved (realpath), as bwrap resolves mount paths. */
function canonical(path: string): string {
  let head = path;
  const tail: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(head), ...tail.reverse());
    } catch {
      const up = dirname(head);
      if (up === head) return path;
      tail.push(basename(head));
      head = up;
    }
  }
}

/**
 * Whether a process confined with `mounts` could have made `change`: whether it could write a
 * file that holds it (a ref: its loose file, `packed-refs` or `reftable/` in the common git dir or
 * the path remote, a bare one or a `.git` inside; `HEAD`; a metadata file itself). Pure but for
 * realpath.
 */
export function sandboxCouldWrite(mounts: readonly SandboxMount[], before: Pick<RefSnapshot, 'commonDir' | 'remotes'>, change: RefChange): boolean {
  const storage = (dir: string, name: string) => [join(dir, name), join(dir, 'packed-refs'), join(dir, 'reftable', 'tables.list')];
  let paths: string[];
  if (change.kind === 'file') paths = [isAbsolute(change.name) ? change.name : join(before.commonDir, change.name)];
  else if (change.kind === 'head') paths = [join(before.commonDir, 'HEAD')];
  else if (change.scope === 'local') paths = storage(before.commonDir, change.name);
  else {
    const remote = before.remotes.find((r) => `remote:${r.name}` === change.scope);
    // A remote with no path on this machine was never listed: a change there cannot be seen here.
    if (!remote?.path) return true;
    paths = [...storage(remote.path, change.name), ...storage(join(remote.path, '.git'), change.name)];
  }
  return paths.some((p) => hostWritable(mounts, canonical(p)));
}
