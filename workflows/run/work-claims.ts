/**
 * Work claims: the shared queue of several Polly processes on one run store (`runs.store:
 * postgres`). Each piece of work (a plan task) has a **work key** that every Polly given the same
 * work computes alike ({@link workKey}); before a Polly dispatches a task it claims the key, and the
 * claim is granted to exactly one of them. The holder keeps it alive with a lease it renews; when
 * the task ends the holder settles the claim with its outcome, which the others read to settle
 * their own record of the task. A holder that stops renewing (its Brain died and did not come
 * back) lets its lease lapse, and another Polly may then take the claim over.
 *
 * Contract (what `postgres-work-claims.ts` keeps, atomically across processes and machines):
 * - `claim(key, …)` grants the key to `owner` when nobody holds it, when `owner` already holds it
 *   (a renewal), when the holder's lease has lapsed (a takeover; `takeovers` counts them), or when
 *   the key was settled before `newerThan` (work approved again after it ended is new work: a new
 *   `generation`). Otherwise it returns the current holder's claim with `granted: false`.
 * - `renew` extends the lease only while `owner` holds the key unsettled; false means it lost it.
 * - `settle` records the outcome only while `owner` holds the key unsettled; false means it lost it.
 * - Times (`leaseUntil`, `settledAt`) are the store's clock, so machines' clocks do not decide a lease.
 */
import { createHash } from 'node:crypto';

/** One claim as stored. Times are ISO-8601 (the store's clock). */
export interface WorkClaim {
  key: string;
  /** The holder's owner id (a Polly's id: stable across its restarts). */
  owner: string;
  /** The holder in words for people (`polly status`, reasons): e.g. `host:/path/to/clone`. */
  label: string;
  /** The lease's end; a claim whose lease ended unsettled may be taken over. */
  leaseUntil: string;
  claimedAt: string;
  /** When the holder settled it (the task ended), or null while it runs. */
  settledAt: string | null;
  /** The task's final status at the holder (e.g. `ready`, `failed`), and a PR URL or reason. */
  outcome: string | null;
  detail: string | null;
  /** 1 for the first claim of the key; +1 each time settled work was claimed anew. */
  generation: number;
  /** How many times the claim was taken from a holder whose lease lapsed. */
  takeovers: number;
}

/** The answer to {@link WorkClaims.claim}: the claim as it now stands, and whether it is the caller's. */
export interface ClaimResult {
  granted: boolean;
  claim: WorkClaim;
}

/** The shared claims of one run store (see the module doc for the contract). */
export interface WorkClaims {
  /**
   * Claim `key` for `owner` for `leaseSeconds` (> 0). `newerThan`: the time the work was approved
   * here (ISO-8601); a claim settled before it is claimed anew.
   * @throws PollyError `registry_corrupt` on a store fault.
   */
  claim(key: string, owner: string, label: string, leaseSeconds: number, newerThan: string): Promise<ClaimResult>;
  /** Extend `owner`'s unsettled lease on `key` by `leaseSeconds`; false when `owner` does not hold it (any more). */
  renew(key: string, owner: string, leaseSeconds: number): Promise<boolean>;
  /** Record the end of `owner`'s work on `key`; false when `owner` does not hold it (any more). */
  settle(key: string, owner: string, outcome: string, detail: string | null): Promise<boolean>;
  /** The claim of `key`, or null. */
  get(key: string): Promise<WorkClaim | null>;
  close(): Promise<void>;
}

/** How long a Brain's claim lives without a renewal (s); the Brain renews at a quarter of it. */
export const WORK_CLAIM_LEASE_SECONDS = 120;

/**
 * A repository's identity across its clones: `origin`'s URL without the scheme, user, port
 * separator style and `.git` suffix, lower-cased host (`git@github.com:o/r.git`,
 * `https://github.com/o/r` → `github.com/o/r`). A local path stays the path. Pure.
 */
export function repoIdentity(originUrl: string): string {
  const u = originUrl.trim();
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(u); // scp-like: user@host:path
  const url = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?(\/.*)$/i.exec(u);
  const [host, path] = url ? [url[1]!, url[2]!] : scp && !u.startsWith('/') ? [scp[1]!, scp[2]!] : ['', u];
  const clean = path
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .replace(/^\/+/, '');
  return host ? `${host.toLowerCase()}/${clean}` : `/${clean}`;
}

/**
 * The work key of a plan task: sha256 (first 32 hex digits) over the repository's identity, the
 * plan's tasks (canonical JSON of what each task is: key, title, purpose, worker, prompt,
 * acceptance, dependencies) and the task's key. Several Pollys given the same plan for the same
 * origin compute the same key; a plan that differs in any task is other work. Pure.
 */
export function workKey(repo: string, planTasks: readonly unknown[], taskKey: string): string {
  return createHash('sha256')
    .update(JSON.stringify([repo, canonical(planTasks), taskKey]))
    .digest('hex')
    .slice(0, 32);
}

/** `value` with object keys sorted, so equal content gives equal JSON whatever the key order. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)]),
    );
  return value;
}
