/**
 * The issue tracker (issue 30): where goals come from and where the plan gate is answered away
 * from the terminal. One narrow interface with two implementations: GitHub's issues
 * (`github-issues.ts`, conditional requests) and the local forge's (`local-issues.ts`, the
 * registry's `issues`). The intake (`issue-intake.ts`) and the issue gate (`issue-gate.ts`) work on
 * either. Nothing here closes an issue or merges anything: GitHub closes an issue when a PR that
 * says `Fixes #N` is merged by a human.
 */

/** An issue as the intake reads it. */
export interface TrackerIssue {
  number: number;
  title: string;
  body: string;
  url: string;
  /** Who opened it (a login; `local` on the local forge). */
  author: string | null;
  state: 'open' | 'closed';
  labels: string[];
}

/** A comment on an issue. `updatedAt` later than `createdAt` means it was edited. Times ISO-8601. */
export interface TrackerComment {
  id: number;
  author: string | null;
  body: string;
  createdAt: string;
  updatedAt: string;
  /** GitHub's `author_association` (a hint, never the answer); absent on the local forge. */
  association?: string;
}

/** A login's standing on the repository (see brain/forge/github-permissions.ts): `unknown` when the lookup failed (ask again later). */
export interface TrackerTrust {
  trusted: boolean;
  permission: string;
}

/** Request accounting of a tracker (GitHub: HTTP requests and 304s; local: zero). */
export interface TrackerStats {
  requests: number;
  notModified: number;
}

export interface IssueTracker {
  readonly kind: 'local' | 'github';
  /**
   * The open issues carrying `label`, newest first; null when unchanged since this tracker's last
   * call (GitHub answered 304 to the conditional request). Pull requests are left out.
   */
  listLabelled(label: string): Promise<TrackerIssue[] | null>;
  /** One issue. @throws PollyError `not_found` for an unknown number (or a pull request's). */
  getIssue(number: number): Promise<TrackerIssue>;
  /** The logins that added `label` to issue `number` (its `labeled` events), oldest first. */
  labelledBy(number: number, label: string): Promise<string[]>;
  /**
   * The issue's comments, oldest first; null when unchanged since this tracker's last call for it
   * (with `fresh`, never null: the list is read in full).
   */
  listComments(number: number, options?: { fresh?: boolean }): Promise<TrackerComment[] | null>;
  /** Post a comment (Polly's marker added); returns its id. */
  comment(number: number, body: string): Promise<{ id: number }>;
  /** Replace the body of one of Polly's own comments (the marker kept). */
  editComment(id: number, body: string): Promise<void>;
  /** Whether `login` may take an issue in or answer the plan gate (write, maintain or admin). */
  trustOf(login: string | null): Promise<TrackerTrust>;
  stats(): TrackerStats;
}
