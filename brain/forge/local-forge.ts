/**
 * The local forge: the embedded default when the repository has no GitHub remote.
 *
 * A pull request is a record in the registry (`pullRequests`, {@link LocalPullRequest}) plus the
 * head branch on the local remote (a bare repository is fine), pushed with a plain push — never a
 * force, never to the default branch or the base. A human reviews with `polly pr list|show|diff`
 * and merges with git (merge, fast-forward, squash or rebase, locally or on the remote); the forge
 * notices on the next read (see `merge-detection.ts`). Like every forge it has no merge method.
 *
 * Journal events (emitted with the registry update): `pr.opened`, `pr.ready`, `pr.review`,
 * `pr.comment`, `pr.merged`, `pr.closed` (the head branch was deleted from the remote unmerged, as
 * GitHub closes such a PR), `pr.head_moved`; and the PR's life after "ready" (issue 16):
 * `pr.feedback` (a human's comment or change request, with file and line when given),
 * `pr.conflicts` (the head no longer merges into the base's current tip: Polly checks it itself on
 * every refresh, see `pr-mergeability.ts`) and `pr.conflicts_resolved`.
 */
import { PollyError } from '../core/errors.js';
import type { Forge, ListPullRequestsOptions, NoMergeKeys, OpenPullRequestInput, OpenedPullRequest, PullRequestInfo, ReviewInput } from './forge.js';
import { detectMerge, NOT_MERGED } from './merge-detection.js';
import { checkMergeability, type Mergeability } from './pr-mergeability.js';
import type { LocalCheckRun, LocalPullRequest, Registry } from '../registry/registry-schema.js';
import { createGitRunner, firstLine, type GitRunner } from '../../workers/git/git.js';
import { recordPollyRefWrite } from '../../workers/git/ref-guard.js';

/** The part of `RegistryStore` (brain/registry-store.ts) the local forge uses. */
export interface LocalForgeStore {
  read(): Promise<Registry>;
  update<T>(fn: (draft: Registry, tx: { emit(kind: string, data: Record<string, unknown>): void }) => T | Promise<T>): Promise<T>;
}

export interface LocalForgeOptions {
  /** The repository's main checkout. */
  repoRoot: string;
  store: LocalForgeStore;
  /** The remote the branches are pushed to (default `origin`). */
  remote?: string;
  git?: GitRunner;
  now?: () => Date;
}

export interface LocalForge extends Forge {
  readonly kind: 'local';
  /** The registry record of PR `number`, refreshed (merge detection) first. */
  record(number: number): Promise<LocalPullRequest>;
  /** The registry records, refreshed once, newest first, filtered like {@link Forge.listPullRequests}. */
  records(options?: ListPullRequestsOptions): Promise<LocalPullRequest[]>;
  /** `git diff base...head` of the PR (what a reviewer sees), as text. */
  diff(number: number): Promise<string>;
  /**
   * Record a human's feedback on an open PR (`polly pr comment` / `polly pr request-changes`):
   * a review with `author: 'human'`, and a `pr.feedback` journal event the Brain and the follow-up
   * round act on. `line` needs `file`; both name the new side of the PR's diff.
   * @returns the review's id (its 1-based index in the record's reviews).
   * @throws PollyError `not_found` (unknown PR), `conflict` (merged or closed), `bad_input` (empty body, line without file).
   */
  addFeedback(number: number, input: { event: 'COMMENT' | 'REQUEST_CHANGES'; body: string; file?: string; line?: number }): Promise<{ id: number }>;
  /**
   * Record a check run on the PR's current head (`polly pr check`: a human or an outside CI reports
   * it, as it would with GitHub's check-runs API). A `failure` or `timed_out` run journals
   * `pr.checks_failed` {forge: 'local', number, taskId, headCommit, checks: [{name, conclusion,
   * summary, logExcerpt?}]} — the event the GitHub watcher emits — which the Brain routes as a
   * CHECKS_FAILED fix round; a `success` records that the check passes (a re-run), with no event.
   * @returns the head commit the run was recorded for.
   * @throws PollyError `not_found` (unknown PR), `conflict` (merged or closed), `bad_input` (empty name).
   */
  addCheckRun(number: number, input: { name: string; conclusion: LocalCheckRun['conclusion']; summary: string; logExcerpt?: string }): Promise<{ headCommit: string }>;
}

const OPEN_STATES: ReadonlySet<LocalPullRequest['state']> = new Set(['draft', 'open', 'ready']);
const BRANCH_NAME = /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._/-]+(?<!\.lock)(?<![./])$/;

/** The URL shown for a local PR. */
export function localPullRequestUrl(number: number): string {
  return `polly-local:pr/${number}`;
}

function toInfo(pr: LocalPullRequest): PullRequestInfo {
  return {
    forge: 'local',
    number: pr.number,
    url: localPullRequestUrl(pr.number),
    title: pr.title,
    state: pr.state,
    merged: pr.state === 'merged',
    mergeCommitSha: pr.state === 'merged' ? (pr.mergeCommit ?? null) : null,
    headSha: pr.headCommit,
    base: pr.base,
    head: pr.head,
  };
}

/** Create the local forge over `repoRoot`'s registry and remote. */
export function createLocalForge(options: LocalForgeOptions): LocalForge {
  const remote = options.remote ?? 'origin';
  const git = options.git ?? createGitRunner();
  const cwd = options.repoRoot;
  const now = () => (options.now ? options.now() : new Date()).toISOString();

  const checkBranchName = (what: string, name: string) => {
    if (!BRANCH_NAME.test(name)) throw new PollyError('bad_input', `${what} branch ${JSON.stringify(name)} is not a valid branch name.`, { details: { branch: name } });
  };

  const revParse = async (ref: string): Promise<string | null> => {
    const r = await git.run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd, okExitCodes: [1, 128] });
    return r.exitCode === 0 ? firstLine(r) : null;
  };

  /** The remote's default branch (its HEAD), or null when it has none. */
  const remoteDefaultBranch = async (): Promise<string | null> => {
    const r = await git.run(['ls-remote', '--symref', remote, 'HEAD'], { cwd, okExitCodes: [2] });
    const m = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(r.stdout);
    return m?.[1] ?? null;
  };

  /** Branch name → sha of every branch on the remote (`git ls-remote --heads`). */
  const remoteHeads = async (): Promise<Map<string, string>> => {
    const r = await git.run(['ls-remote', '--heads', remote], { cwd });
    const out = new Map<string, string>();
    for (const line of r.stdout.split('\n')) {
      const m = /^([0-9a-f]{40,64})\trefs\/heads\/(.+)$/.exec(line.trim());
      if (m) out.set(m[2]!, m[1]!);
    }
    return out;
  };

  /**
   * The commit (or object) each of `refs` names, in one `git for-each-ref` (exact names: a
   * pattern without a wildcard matches that ref only); a missing ref is absent from the map.
   */
  const refTips = async (refs: readonly string[]): Promise<Map<string, string>> => {
    const out = new Map<string, string>();
    if (refs.length === 0) return out;
    const r = await git.run(['for-each-ref', '--format=%(objectname) %(refname)', ...new Set(refs)], { cwd });
    for (const line of r.stdout.split('\n')) {
      const [oid, ref] = line.trim().split(' ');
      if (oid && ref) out.set(ref, oid);
    }
    return out;
  };

  /**
   * Open PRs found not merged, by number: the head and base tips they were checked at. detectMerge's
   * answer depends only on those commits (objects never change), so while none of them moved a
   * refresh skips its 10–20 git calls per PR. In memory: a Brain's forge lives as long as the Brain.
   */
  const notMergedAt = new Map<number, string>();

  /** Update the remote-tracking refs of `remote` (a plain fetch; only refs/remotes/<remote>/* move). */
  const fetch = async () => {
    await git.run(['fetch', '--quiet', '--no-tags', remote, `+refs/heads/*:refs/remotes/${remote}/*`], { cwd });
  };

  const load = async (number: number): Promise<LocalPullRequest> => {
    const pr = (await options.store.read()).pullRequests[String(number)];
    if (!pr) throw new PollyError('not_found', `no local pull request #${number}. Run "polly pr list" to see the PRs.`, { details: { number } });
    return pr;
  };

  /**
   * Re-read the remote and update open PRs: a head branch pushed again moves `headCommit`; a head
   * found merged into its base (remote or local) becomes `merged`; an unmerged PR whose head branch
   * is gone from the remote becomes `closed`. Persists only changes.
   */
  const refresh = async (prs: LocalPullRequest[]): Promise<void> => {
    const open = prs.filter((p) => OPEN_STATES.has(p.state));
    if (open.length === 0) return;
    await fetch();
    const heads = await remoteHeads();
    const baseRefs = (pr: LocalPullRequest) => [`refs/remotes/${remote}/${pr.base}`, `refs/heads/${pr.base}`];
    const tips = await refTips(open.flatMap(baseRefs));
    const changes: Array<{ number: number; headCommit?: string; merged?: { commit: string | null; how: string }; closed?: boolean; mergeability?: Mergeability }> = [];
    for (const pr of open) {
      const pushed = heads.get(pr.head) ?? null;
      const head = pushed ?? pr.headCommit;
      const checkedAt = [head, ...baseRefs(pr).map((ref) => tips.get(ref) ?? '-')].join(' ');
      const m = notMergedAt.get(pr.number) === checkedAt ? NOT_MERGED : await detectMerge(git, cwd, { head, baseRefs: baseRefs(pr) });
      if (m.merged) notMergedAt.delete(pr.number);
      else notMergedAt.set(pr.number, checkedAt);
      // As on GitHub: deleting an unmerged PR's head branch closes the PR.
      const closed = !m.merged && pushed === null;
      // Still open: does it merge into the base's current tip? (Re-checked only when either moved.)
      let mergeability: Mergeability | undefined;
      if (!m.merged && !closed) {
        const baseTip = (await revParse(`refs/remotes/${remote}/${pr.base}`)) ?? (await revParse(`refs/heads/${pr.base}`));
        const known = pr.mergeability;
        if (baseTip && (known?.baseCommit !== baseTip || known.headCommit !== head)) {
          mergeability = await checkMergeability(git, cwd, { baseCommit: baseTip, headCommit: head });
        }
      }
      if (head !== pr.headCommit || m.merged || closed || mergeability) {
        changes.push({
          number: pr.number,
          ...(head !== pr.headCommit ? { headCommit: head } : {}),
          ...(m.merged ? { merged: { commit: m.mergeCommitSha, how: m.how ?? '' } } : {}),
          ...(closed ? { closed } : {}),
          ...(mergeability ? { mergeability } : {}),
        });
      }
    }
    if (changes.length === 0) return;
    await options.store.update((draft, tx) => {
      for (const c of changes) {
        const pr = draft.pullRequests[String(c.number)];
        if (!pr || !OPEN_STATES.has(pr.state)) continue;
        if (c.headCommit) {
          tx.emit('pr.head_moved', { forge: 'local', number: pr.number, from: pr.headCommit, to: c.headCommit });
          pr.headCommit = c.headCommit;
        }
        if (c.merged) {
          pr.state = 'merged';
          pr.mergeCommit = c.merged.commit;
          tx.emit('pr.merged', { forge: 'local', number: pr.number, taskId: pr.taskId, mergeCommit: c.merged.commit, how: c.merged.how });
        } else if (c.closed) {
          pr.state = 'closed';
          tx.emit('pr.closed', { forge: 'local', number: pr.number, taskId: pr.taskId, reason: `branch ${pr.head} was deleted from ${remote} unmerged` });
        } else if (c.mergeability) {
          const was = pr.mergeability?.state ?? null;
          const { tree: _tree, ...checked } = c.mergeability;
          pr.mergeability = { ...checked, checkedAt: now() };
          if (c.mergeability.state === 'conflicts' && was !== 'conflicts') {
            tx.emit('pr.conflicts', {
              forge: 'local',
              number: pr.number,
              taskId: pr.taskId,
              base: pr.base,
              baseCommit: c.mergeability.baseCommit,
              headCommit: c.mergeability.headCommit,
              files: c.mergeability.files,
            });
          } else if (c.mergeability.state === 'clean' && was === 'conflicts') {
            tx.emit('pr.conflicts_resolved', {
              forge: 'local',
              number: pr.number,
              taskId: pr.taskId,
              baseCommit: c.mergeability.baseCommit,
              headCommit: c.mergeability.headCommit,
            });
          }
        }
        pr.updatedAt = now();
      }
    });
  };

  const refreshed = async (number: number): Promise<LocalPullRequest> => {
    await refresh([await load(number)]);
    return load(number);
  };

  const requireOpen = (pr: LocalPullRequest, action: string) => {
    if (!OPEN_STATES.has(pr.state)) {
      throw new PollyError('conflict', `local PR #${pr.number} is ${pr.state}; cannot ${action}.`, { details: { number: pr.number, state: pr.state } });
    }
  };

  const forge: LocalForge = {
    kind: 'local',

    async openDraftPullRequest(input: OpenPullRequestInput): Promise<OpenedPullRequest> {
      checkBranchName('head', input.head);
      checkBranchName('base', input.base);
      if (input.head === input.base) throw new PollyError('bad_input', `head and base are the same branch (${input.head}); a PR needs a task branch.`);
      const defaultBranch = await remoteDefaultBranch();
      if (input.head === defaultBranch) {
        throw new PollyError('bad_input', `refusing to push ${input.head}: it is ${remote}'s default branch, and Polly never pushes to it. Use the task's branch (polly/<id>).`);
      }
      const headCommit = await revParse(`refs/heads/${input.head}`);
      if (!headCommit) throw new PollyError('not_found', `branch ${input.head} does not exist in ${cwd}; commit the task's work on it first.`);
      await fetch();
      const baseCommit = (await revParse(`refs/remotes/${remote}/${input.base}`)) ?? (await revParse(`refs/heads/${input.base}`));
      if (!baseCommit) throw new PollyError('forge_failed', `base branch ${input.base} exists neither on ${remote} nor locally; a PR needs an existing base.`);
      const ahead = await git.run(['rev-list', '--count', `${baseCommit}..${headCommit}`], { cwd });
      if (Number(firstLine(ahead)) === 0) {
        throw new PollyError('forge_failed', `no commits between ${input.base} and ${input.head}: nothing to review.`);
      }
      const existing = Object.values((await options.store.read()).pullRequests).find((p) => p.head === input.head && p.base === input.base && OPEN_STATES.has(p.state));
      if (existing) {
        throw new PollyError('conflict', `a local PR for ${input.head} → ${input.base} is already open: #${existing.number}.`, { details: { number: existing.number } });
      }
      recordPollyRefWrite('remote', `refs/heads/${input.head}`, headCommit, options.repoRoot);
      // A plain push of the one branch: no --force, no leading "+", never the default branch.
      const push = await git.run(['push', '--quiet', '--porcelain', '--no-verify', remote, `refs/heads/${input.head}:refs/heads/${input.head}`], { cwd, okExitCodes: [1] });
      if (push.exitCode !== 0) {
        throw new PollyError(
          'forge_failed',
          `git push ${remote} ${input.head} was rejected: ${(push.stderr || push.stdout).trim().slice(-500)}. Polly never force-pushes; bring the branch up to date with ${remote}/${input.head} first.`,
          { details: { stderr: push.stderr } },
        );
      }
      const taskId = /^polly\/(.+)$/.exec(input.head)?.[1] ?? null;
      const number = await options.store.update((draft, tx) => {
        const n = (draft.counters.pullRequest += 1);
        const at = now();
        draft.pullRequests[String(n)] = {
          number: n,
          taskId,
          title: input.title,
          body: input.body,
          head: input.head,
          base: input.base,
          headCommit,
          baseCommit,
          state: 'draft',
          mergeCommit: null,
          reviews: [],
          createdAt: at,
          updatedAt: at,
        };
        tx.emit('pr.opened', { forge: 'local', number: n, taskId, head: input.head, base: input.base, headCommit, draft: true });
        return n;
      });
      return { forge: 'local', number, url: localPullRequestUrl(number), state: 'draft', headSha: headCommit };
    },

    async markReady(number: number): Promise<void> {
      const pr = await refreshed(number);
      requireOpen(pr, 'mark it ready');
      if (pr.state === 'ready') return;
      await options.store.update((draft, tx) => {
        const p = draft.pullRequests[String(number)]!;
        p.state = 'ready';
        p.updatedAt = now();
        tx.emit('pr.ready', { forge: 'local', number, taskId: p.taskId });
      });
    },

    async postReview(number: number, review: ReviewInput): Promise<{ id: number }> {
      requireOpen(await load(number), 'review it');
      return options.store.update((draft, tx) => {
        const p = draft.pullRequests[String(number)]!;
        p.reviews.push({
          event: review.event,
          body: review.body,
          comments: review.comments.map((c) => ({ file: c.path, line: c.line, message: c.body })),
          at: now(),
        });
        p.updatedAt = now();
        tx.emit('pr.review', { forge: 'local', number, event: review.event, comments: review.comments.length });
        return { id: p.reviews.length };
      });
    },

    /** Stored as a review with event COMMENT and no line comments (the record has no separate thread). */
    async comment(number: number, body: string): Promise<{ id: number }> {
      await load(number);
      return options.store.update((draft, tx) => {
        const p = draft.pullRequests[String(number)]!;
        p.reviews.push({ event: 'COMMENT', body, comments: [], at: now() });
        p.updatedAt = now();
        tx.emit('pr.comment', { forge: 'local', number });
        return { id: p.reviews.length };
      });
    },

    async updateBody(number: number, body: string): Promise<void> {
      await load(number);
      await options.store.update((draft) => {
        const p = draft.pullRequests[String(number)]!;
        if (p.body === body) return;
        p.body = body;
        p.updatedAt = now();
      });
    },

    async retarget(number: number, base: string): Promise<void> {
      checkBranchName('base', base);
      const pr = await refreshed(number);
      requireOpen(pr, `retarget it to ${base}`);
      if (pr.base === base) return;
      if (pr.head === base) throw new PollyError('bad_input', `PR #${number} cannot target its own head branch ${base}.`, { details: { number, base } });
      await fetch();
      const baseCommit = (await revParse(`refs/remotes/${remote}/${base}`)) ?? (await revParse(`refs/heads/${base}`));
      if (!baseCommit)
        throw new PollyError('forge_failed', `cannot retarget PR #${number} to ${base}: that branch exists neither on ${remote} nor locally.`, { details: { number, base } });
      await options.store.update((draft) => {
        const p = draft.pullRequests[String(number)]!;
        p.base = base;
        p.baseCommit = baseCommit;
        // Mergeability and the local check were about the old base: checked again against the new one.
        delete p.mergeability;
        p.updatedAt = now();
      });
    },

    async addFeedback(number: number, input: { event: 'COMMENT' | 'REQUEST_CHANGES'; body: string; file?: string; line?: number }): Promise<{ id: number }> {
      if (input.body.trim() === '') throw new PollyError('bad_input', `feedback on PR #${number} is empty; say what should change.`);
      if (input.line !== undefined && input.file === undefined) throw new PollyError('bad_input', `--line ${input.line} needs --file: a line comment names the file it is on.`);
      if (input.line !== undefined && (!Number.isInteger(input.line) || input.line < 1)) {
        throw new PollyError('bad_input', `--line ${input.line} is not a line number; give a 1-based line of the new version of ${input.file}.`, { details: { line: input.line } });
      }
      requireOpen(await load(number), 'give feedback on it');
      return options.store.update((draft, tx) => {
        const p = draft.pullRequests[String(number)]!;
        const comments = input.file === undefined ? [] : [{ file: input.file, line: input.line ?? 1, message: input.body }];
        p.reviews.push({ event: input.event, body: input.body, comments, at: now(), author: 'human' });
        p.updatedAt = now();
        tx.emit('pr.feedback', {
          forge: 'local',
          number,
          taskId: p.taskId,
          event: input.event,
          body: input.body.slice(0, 2000),
          ...(input.file !== undefined ? { file: input.file, line: input.line ?? 1 } : {}),
        });
        return { id: p.reviews.length };
      });
    },

    async addCheckRun(number: number, input: { name: string; conclusion: LocalCheckRun['conclusion']; summary: string; logExcerpt?: string }): Promise<{ headCommit: string }> {
      if (input.name.trim() === '') throw new PollyError('bad_input', `a check run on PR #${number} needs a name (--name, e.g. "ci/test").`);
      const pr = await refreshed(number);
      requireOpen(pr, 'report a check on it');
      return options.store.update((draft, tx) => {
        const p = draft.pullRequests[String(number)]!;
        const run: LocalCheckRun = {
          name: input.name.trim(),
          headCommit: p.headCommit,
          conclusion: input.conclusion,
          summary: input.summary,
          ...(input.logExcerpt ? { logExcerpt: input.logExcerpt.slice(-4000) } : {}),
          at: now(),
        };
        (p.checkRuns ??= []).push(run);
        p.updatedAt = run.at;
        if (run.conclusion !== 'success') {
          tx.emit('pr.checks_failed', {
            forge: 'local',
            number,
            taskId: p.taskId,
            headCommit: p.headCommit,
            checks: [{ name: run.name, conclusion: run.conclusion, summary: run.summary, ...(run.logExcerpt ? { logExcerpt: run.logExcerpt } : {}) }],
          });
        }
        return { headCommit: p.headCommit };
      });
    },

    async getPullRequest(number: number): Promise<PullRequestInfo> {
      return toInfo(await refreshed(number));
    },

    async listPullRequests(opts: ListPullRequestsOptions = {}): Promise<PullRequestInfo[]> {
      return (await forge.records(opts)).map(toInfo);
    },

    async findOpenPullRequest(head: string, base: string): Promise<PullRequestInfo | null> {
      const found = (await forge.records({ state: 'open' })).find((p) => p.head === head && p.base === base);
      return found ? toInfo(found) : null;
    },

    record: refreshed,

    async records(opts: ListPullRequestsOptions = {}): Promise<LocalPullRequest[]> {
      await refresh(Object.values((await options.store.read()).pullRequests));
      const want = opts.state ?? 'open';
      return Object.values((await options.store.read()).pullRequests)
        .filter((p) => want === 'all' || (want === 'open') === OPEN_STATES.has(p.state))
        .sort((a, b) => b.number - a.number);
    },

    async diff(number: number): Promise<string> {
      const pr = await refreshed(number);
      const base = (await revParse(`refs/remotes/${remote}/${pr.base}`)) ?? (await revParse(`refs/heads/${pr.base}`));
      if (!base) throw new PollyError('forge_failed', `base branch ${pr.base} of PR #${number} no longer exists.`);
      // After a merge, base...head is empty: show what the PR brought, from the base it was opened on.
      const from = pr.state === 'merged' && pr.baseCommit ? pr.baseCommit : base;
      return (await git.run(['diff', '--no-color', '--no-ext-diff', `${from}...${pr.headCommit}`], { cwd })).stdout;
    },
  };
  const noMerge: NoMergeKeys<typeof forge> = true;
  void noMerge;
  return forge;
}
