/**
 * The landing order, kept current (issue 29 item 3): one pass computes the order of the open PRs
 * (brain/forge/landing-order.ts `computeLanding`: pairwise `git merge-tree` of their heads, stacked
 * PRs after their parents), records it in the registry (`registry.landing`, which the dashboard
 * shows) and writes each Polly PR's "Landing order" section ("Land after #N") into its body
 * through the forge (`Forge.updateBody`: the local forge's record, or GitHub's
 * `PATCH /repos/{owner}/{repo}/pulls/{pull_number}`).
 *
 * Cheap when nothing moved: the order is computed again only when the set of open PRs, a head or a
 * base changed (`LandingRecord.key`), and a body is written only when its section changed
 * (`task.pr.landing` is the section last written). The Brain runs a pass after every after-merge
 * pass (every 30 s, so a PR that opens, moves or merges is reflected within one), and
 * `polly pr sync` runs one now. Journal: `pr.landing_order` {forge, order, after, conflicts} when
 * the order changes. Advice only: Polly never merges.
 */
import { isPollyError } from '../core/errors.js';
import type { Forge } from './forge.js';
import type { LandingRecord, Registry } from '../registry/registry-schema.js';
import type { GitRunner } from '../../workers/git/git.js';
import { computeLanding, landingSection, type OrderablePullRequest } from './landing-order.js';
import { prBodyInputOf, renderPrBody } from './pr-body.js';

/** One open PR the order covers, with what the dashboard and the bodies need. */
export interface LandingCandidate extends OrderablePullRequest {
  taskId: string | null;
  title: string;
}

const OPEN = new Set(['draft', 'open', 'ready']);

/**
 * The open PRs to order, from the registry alone (no forge call): the local forge's open records,
 * else (none open locally) the tasks' open GitHub PRs as the PR watcher last saw them. One forge's
 * PRs only, since local and GitHub numbers are different sequences. PRs without a known head are
 * left out. Pure.
 */
export function landingCandidates(reg: Registry): { forge: 'local' | 'github'; prs: LandingCandidate[] } {
  const local = Object.values(reg.pullRequests)
    .filter((p) => OPEN.has(p.state))
    .map((p) => ({ number: p.number, headCommit: p.headCommit, base: p.base, head: p.head, taskId: p.taskId, title: p.title }));
  if (local.length > 0) return { forge: 'local', prs: local.sort((a, b) => a.number - b.number) };
  const github = Object.values(reg.tasks)
    .filter((t) => t.pr?.forge === 'github' && OPEN.has(t.pr.state))
    .map((t) => ({
      number: t.pr!.number,
      headCommit: t.pr!.watch?.headCommit ?? t.headCommit ?? '',
      base: t.pr!.watch?.base ?? t.baseBranch ?? '',
      head: t.branch ?? `polly/${t.id}`,
      taskId: t.id,
      title: t.title,
    }))
    .filter((p) => p.headCommit !== '');
  return { forge: 'github', prs: github.sort((a, b) => a.number - b.number) };
}

/** The key of an order's input: `number:head:base` per PR, sorted. Pure. */
export function landingKey(prs: readonly OrderablePullRequest[]): string {
  return prs
    .map((p) => `${p.number}:${p.headCommit}:${p.base ?? ''}`)
    .sort()
    .join(' ');
}

/**
 * Compute the landing record of `prs` (see the module doc).
 * @throws PollyError `git_failed` when git cannot merge two heads (brain/forge/landing-order.ts).
 */
export async function computeLandingRecord(git: GitRunner, cwd: string, forge: 'local' | 'github', prs: readonly LandingCandidate[], at: string): Promise<LandingRecord> {
  const plan = await computeLanding(git, cwd, prs);
  return {
    forge,
    key: landingKey(prs),
    order: plan.order,
    after: Object.fromEntries(Object.entries(plan.after).map(([k, v]) => [k, v])),
    stackedOn: Object.fromEntries(Object.entries(plan.stackedOn).map(([k, v]) => [k, v])),
    pairs: plan.pairs,
    conflicts: plan.conflicts,
    exact: plan.exact,
    prs: Object.fromEntries(prs.map((p) => [String(p.number), { taskId: p.taskId, title: p.title, head: p.head ?? null, base: p.base ?? null }])),
    computedAt: at,
  };
}

/** The "Landing order" section of PR `number` under `landing`, or null when it is not in it. Pure. */
export function landingSectionOf(landing: LandingRecord, number: number, reg: Pick<Registry, 'tasks'>): string | null {
  const heads: Record<number, string> = {};
  for (const [n, p] of Object.entries(landing.prs)) if (p.head) heads[Number(n)] = p.head;
  const parent = landing.stackedOn[String(number)];
  // A stacked PR is retargeted to its parent's base once the parent merges (brain/forge/after-merge.ts).
  const parentTask = parent !== undefined ? landing.prs[String(parent)]?.taskId : null;
  const finalBase = parentTask ? (reg.tasks[parentTask]?.baseBranch ?? null) : null;
  return landingSection({
    number,
    plan: {
      order: landing.order,
      after: Object.fromEntries(Object.entries(landing.after).map(([k, v]) => [Number(k), v])),
      stackedOn: Object.fromEntries(Object.entries(landing.stackedOn).map(([k, v]) => [Number(k), v])),
      pairs: landing.pairs,
    },
    heads,
    finalBase,
  });
}

export interface LandingSyncInput {
  store: {
    read(): Promise<Registry>;
    update<T>(fn: (draft: Registry, tx: { emit(kind: string, data: Record<string, unknown>): void }) => T | Promise<T>): Promise<T>;
  };
  forge: Pick<Forge, 'kind' | 'updateBody'>;
  git: GitRunner;
  /** The repository whose object store holds the heads (the main checkout). */
  repoRoot: string;
  now?: () => Date;
}

export interface LandingSyncReport {
  /** The order now recorded (null: no open PR). */
  landing: LandingRecord | null;
  /** Whether the order was computed in this pass (false: the recorded one still held). */
  computed: boolean;
  /** PR numbers whose body was rewritten with a new "Landing order" section. */
  updated: number[];
  errors: Array<{ number: number; message: string }>;
}

/**
 * One pass (see the module doc). Errors writing one body are reported (and retried on the next
 * pass: its recorded section stays the old one); a git failure computing the order is thrown.
 */
export async function syncLandingOrder(input: LandingSyncInput): Promise<LandingSyncReport> {
  const now = input.now ?? (() => new Date());
  let reg = await input.store.read();
  const { forge, prs } = landingCandidates(reg);
  const report: LandingSyncReport = { landing: null, computed: false, updated: [], errors: [] };
  if (forge !== input.forge.kind && prs.length > 0) return { ...report, landing: reg.landing ?? null };
  let landing = reg.landing ?? null;
  if (prs.length === 0) {
    if (landing) await input.store.update((draft) => void (draft.landing = null));
    return report;
  }
  if (!landing || landing.forge !== forge || landing.key !== landingKey(prs)) {
    const fresh = await computeLandingRecord(input.git, input.repoRoot, forge, prs, now().toISOString());
    const changed = !landing || JSON.stringify([landing.order, landing.after]) !== JSON.stringify([fresh.order, fresh.after]);
    await input.store.update((draft, tx) => {
      draft.landing = fresh;
      if (changed) tx.emit('pr.landing_order', { forge, order: fresh.order, after: fresh.after, conflicts: fresh.conflicts });
    });
    landing = fresh;
    report.computed = true;
    reg = await input.store.read();
  }
  report.landing = landing;
  for (const p of prs) {
    const task = p.taskId ? reg.tasks[p.taskId] : undefined;
    if (!task?.pr || task.pr.number !== p.number || task.pr.forge !== forge) continue;
    const section = landingSectionOf(landing, p.number, reg);
    const bodyInput = prBodyInputOf(task, reg);
    // The issue line (`Fixes #N` / `Refs #N`, brain/forge/issue-ref.ts) turns to Fixes once the goal's other PRs merged.
    const issueLine = bodyInput.issueLine ?? null;
    if ((task.pr.landing ?? null) === section && (task.pr.issueLine ?? null) === issueLine) continue;
    const body = renderPrBody({ ...bodyInput, landing: section });
    try {
      await input.forge.updateBody(p.number, body);
    } catch (error) {
      report.errors.push({ number: p.number, message: isPollyError(error) ? error.message : String(error) });
      continue;
    }
    await input.store.update((draft) => {
      const t = draft.tasks[task.id];
      if (t?.pr?.number !== p.number) return;
      t.pr.landing = section;
      if (issueLine) t.pr.issueLine = issueLine;
      else delete t.pr.issueLine;
    });
    report.updated.push(p.number);
  }
  return report;
}
