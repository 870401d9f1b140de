/**
 * A GitHub API simulator for forge tests, on loopback.
 *
 * Built on `@simulacrum/github-api-simulator` (which routes and validates every REST request — path,
 * method, parameters and body — and every handler's response against GitHub's official OpenAPI
 * description, github/rest-api-description `api.github.com.json`, bundled in the package), extended
 * here with:
 * - stateful pull requests, reviews, review comments (file + line), issue comments, check runs,
 *   commit statuses and mergeability (`mergeable` / `mergeable_state`, `null` while "computing")
 *   for one repository (`owner/repo`),
 * - issues (numbered in the same sequence as pull requests, as on GitHub) with labels, their
 *   `labeled` / `unlabeled` events (who did it), and comments that a human can edit or delete
 *   (`updated_at` moves on an edit; a deleted comment is gone from the list),
 * - GraphQL for the mutations the forge needs, parsed and validated against GitHub's public GraphQL
 *   schema (`schema.docs.graphql`, bundled in the same package) and executed on the same state,
 * - a request log (every request, its status, whether it counted against the rate limit),
 * - ETags on GET responses and `If-None-Match` → 304 (free against the rate limit, as on GitHub),
 * - a primary rate limit with `x-ratelimit-*` headers on a window of one hour of the injected clock,
 *   and fault injection (403/429 with `retry-after` or an exhausted limit),
 * - test controls that play the human and CI: merge (merge, squash, rebase) or close a PR, review
 *   it, comment on it, report check runs and commit statuses, open an issue, label it, comment on
 *   it and edit or delete a comment — without an API request, so the
 *   request log shows only what the code under test sent,
 * - refusals: every merge endpoint (REST `PUT …/pulls/{n}/merge`, `POST …/merges`, GraphQL
 *   `mergePullRequest` / `enablePullRequestAutoMerge` / `mergeBranch`) and every forced or
 *   non-fast-forward ref update (`PATCH …/git/refs/{ref}`) is refused with 403 and recorded, so
 *   a test can assert that no such request was ever sent,
 * - optionally (`git`), a real bare repository behind `http://HOST/OWNER/REPO.git` (git smart
 *   HTTP through `git http-backend`, `git-http.ts`): pushes move the simulated branches, every
 *   branch move is recorded with whether it was a fast-forward, mergeability is computed by
 *   `git merge-tree`, and the human's merge writes a real merge commit.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { simulation } from '@simulacrum/github-api-simulator';
import { branchTips, isAncestor, mergeConflicts, mergeOnServer, serveGitHttp } from './git-http.js';
import { buildSchema, execute, parse, validate, type DocumentNode, type GraphQLSchema, Kind, type OperationDefinitionNode } from 'graphql';

/** A clock the forge and the simulator share: ms since the epoch, and a sleep that may be simulated. */
export interface TestClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** A simulated clock: `sleep` advances time at once (and records the sleep). */
export function createFakeClock(startMs = Date.UTC(2026, 10, 1, 12, 0, 0)): TestClock & { sleeps: number[]; advance(ms: number): void } {
  let t = startMs;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    advance(ms) {
      t += ms;
    },
    async sleep(ms) {
      sleeps.push(ms);
      t += Math.max(0, ms);
      await Promise.resolve();
    },
  };
}

export interface SimRequest {
  method: string;
  /** Path without query, e.g. `/repos/o/r/pulls/1`. */
  path: string;
  query: Record<string, unknown>;
  body: unknown;
  ifNoneMatch: string | null;
  /** Whether an Authorization header was sent (its value is never recorded). */
  authorized: boolean;
  /** Simulated time of the request (ms). */
  at: number;
  /** Response status (0 when none was sent through JSON, e.g. a stream). */
  status: number;
  /** Counted against the primary rate limit. */
  charged: boolean;
  /** For POST /graphql: the top-level field names of each operation (e.g. `markPullRequestReadyForReview`). */
  graphqlFields: string[];
}

interface SimReview {
  id: number;
  event: string;
  state: string;
  body: string;
  commitId: string;
  /** The reviewer's login. */
  login: string;
  submittedAt: string;
  comments: Array<{ id: number; path: string; line: number | null; side: string | null; body: string }>;
}

/** A check run on one commit (GitHub "checks/list-for-ref"). */
export interface SimCheckRun {
  name: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: 'success' | 'failure' | 'neutral' | 'cancelled' | 'skipped' | 'timed_out' | 'action_required' | null;
  /** The check's output: title, summary (markdown) and text (details, e.g. a log tail). */
  output?: { title?: string; summary?: string; text?: string };
}

/** A commit status (GitHub "repos/get-combined-status-for-ref"). */
export interface SimCommitStatus {
  context: string;
  state: 'error' | 'failure' | 'pending' | 'success';
  description?: string;
  targetUrl?: string;
}

export interface SimPull {
  number: number;
  nodeId: string;
  title: string;
  body: string;
  head: string;
  base: string;
  headSha: string;
  baseSha: string;
  draft: boolean;
  state: 'open' | 'closed';
  merged: boolean;
  mergeCommitSha: string | null;
  mergedAt: string | null;
  closedAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** Who opened it: a hash of the Authorization header (never the token). */
  author: string;
  reviews: SimReview[];
  comments: SimComment[];
  /** Paths the head changes (set with `setChangedFiles`); a PR merged first that touches one of them makes this one conflict. */
  files: string[];
  /** The head no longer merges into the base (set when a PR touching the same files merged; cleared when the head moves). */
  conflicting: boolean;
  /**
   * GitHub computes `mergeable` in the background after the base or head moves: `stale` answers
   * `null` once (`computing`), and the next request sees the computed value (`known`).
   */
  mergeability: 'known' | 'stale' | 'computing';
}

/** An issue (GitHub "issues/get"); its number is from the pull requests' sequence. */
export interface SimIssue {
  number: number;
  title: string;
  body: string;
  /** Who opened it. */
  login: string;
  state: 'open' | 'closed';
  labels: string[];
  /** `labeled` / `unlabeled` events, oldest first (GitHub "issues/list-events"). */
  events: Array<{ id: number; event: 'labeled' | 'unlabeled'; label: string; actor: string; createdAt: string }>;
  comments: SimComment[];
  createdAt: string;
  updatedAt: string;
}

/** A comment on an issue or on a PR's conversation. `updatedAt` differs from `createdAt` once edited. */
export interface SimComment {
  id: number;
  body: string;
  login: string;
  createdAt: string;
  updatedAt: string;
}

/** One move of a branch on the simulated repository (a push, a merge, a ref update, a test control). */
export interface RefUpdate {
  branch: string;
  /** The commit before (null: the branch was created). */
  from: string | null;
  to: string;
  /** Whether `to` descends from `from` (always true for a created branch). */
  fastForward: boolean;
}

export interface FaultSpec {
  status: 403 | 429;
  /** Send `retry-after: N` (a secondary rate limit). */
  retryAfterSeconds?: number;
  /** Send `x-ratelimit-remaining: 0` with the current window's reset (a primary limit used up elsewhere). */
  exhausted?: boolean;
}

export interface GitHubSimulator {
  /** Octokit `baseUrl` (no trailing slash). */
  baseUrl: string;
  owner: string;
  repo: string;
  /** Every request received, in order. */
  requests: SimRequest[];
  /** Requests that hit a merge endpoint: REST `PUT …/pulls/{n}/merge` or `POST …/merges`, GraphQL `mergePullRequest`, `enablePullRequestAutoMerge` or `mergeBranch`. */
  mergeRequests(): SimRequest[];
  /** Requests the simulator refused because Polly must never send them (merges, forced or non-fast-forward ref updates). */
  refusedRequests(): SimRequest[];
  /** `PATCH …/git/refs/{ref}` requests that were forced or not a fast-forward (all refused). */
  forceUpdates(): SimRequest[];
  pulls: Map<number, SimPull>;
  /** Every branch move, in order (with `git`, pushes over HTTP included; forced ones are accepted, as GitHub does, and recorded here). */
  refUpdates: RefUpdate[];
  /** With `git`: the clone URL of the served repository (`http://HOST/OWNER/REPO.git`); null without. */
  gitUrl: string | null;
  /** Create or move a branch on the simulated repository. */
  setBranch(name: string, sha: string): void;
  branchSha(name: string): string | undefined;
  /** The human merges on GitHub (no API request is logged). Returns the commit now on base. */
  humanMerge(number: number, method?: 'merge' | 'squash' | 'rebase'): string;
  /** A human (`login`) opens a PR from `head` into `base` (no API request is logged). Returns its number. */
  humanOpenPull(pull: { login: string; head: string; base: string; title: string; body?: string }): number;
  /** The human closes the PR without merging (no API request is logged). */
  humanClose(number: number): void;
  /** A human (`login`) submits a review with line comments (no API request is logged). Returns the review id. */
  humanReview(
    number: number,
    review: { login: string; event: 'COMMENT' | 'REQUEST_CHANGES' | 'APPROVE'; body: string; comments?: Array<{ path: string; line: number; body: string }> },
  ): number;
  /** A human (`login`) comments on the PR's conversation or on an issue (no API request is logged). Returns the comment id. */
  humanComment(number: number, comment: { login: string; body: string }): number;
  /** Issues by number (pull requests are in {@link pulls}). */
  issues: Map<number, SimIssue>;
  /** A human (`login`) opens an issue, with labels set at once (as an issue template does: the events' actor is the opener). Returns its number. */
  humanOpenIssue(issue: { login: string; title: string; body?: string; labels?: string[] }): number;
  /** A human (`login`) adds `label` to issue `number` (a `labeled` event by `login`). */
  humanLabel(number: number, label: { login: string; label: string }): void;
  /** A human (`login`) removes `label` from issue `number` (an `unlabeled` event). */
  humanUnlabel(number: number, label: { login: string; label: string }): void;
  /** A human edits comment `id` (on an issue or a PR): the body changes and `updated_at` moves. */
  humanEditComment(id: number, body: string): void;
  /** A human deletes comment `id`: it is gone from the list. */
  humanDeleteComment(id: number): void;
  /** CI reports a check run on commit `sha` (replacing an earlier run of the same name). */
  setCheckRun(sha: string, run: SimCheckRun): void;
  /** CI reports a commit status on `sha` (replacing an earlier one of the same context). */
  setCommitStatus(sha: string, status: SimCommitStatus): void;
  /** The paths PR `number`'s head changes (for conflicts when another PR touching them merges first). */
  setChangedFiles(number: number, files: string[]): void;
  /**
   * Give `login` a role on the repository (null: the account does not exist, so its permission
   * lookup answers 404). Reviews and comments then carry the matching `author_association`.
   */
  setRole(login: string, role: SimRole | null): void;
  /** Fail the next `count` requests with `fault` (before any handler runs). */
  failNext(fault: FaultSpec, count?: number): void;
  /** The primary rate limit: limit per hour, remaining now, reset (epoch seconds). */
  rateLimit(): { limit: number; remaining: number; reset: number };
  close(): Promise<void>;
}

/** A repository role (https://docs.github.com/en/organizations/managing-user-access-to-your-organizations-repositories/managing-repository-roles/repository-roles-for-an-organization); `none`: an account with no access. */
export type SimRole = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';

export interface GitHubSimulatorOptions {
  /**
   * Login → role on the repository: what `GET /repos/{o}/{r}/collaborators/{u}/permission` answers
   * and what `author_association` reviews and comments carry. A login not listed has `defaultRole`.
   */
  roles?: Record<string, SimRole>;
  /** The role of a login not in `roles` (default `write`, so a test that names no roles sees collaborators; null: unknown accounts, 404). */
  defaultRole?: SimRole | null;
  owner?: string;
  repo?: string;
  /** Branch name → sha at start. Default: `main` at a fixed sha. */
  branches?: Record<string, string>;
  /** Clock for timestamps and the rate-limit window (default: real time). */
  clock?: Pick<TestClock, 'now'>;
  /** Requests per hour (GitHub: 5000 for a user token). */
  rateLimit?: number;
  /** The login of whoever sends API requests (the token's user; default `polly-operator`). */
  tokenLogin?: string;
  /**
   * A bare git repository served at `/OWNER/REPO.git` (see the module comment): its branches are
   * the simulated repository's branches (`branches` is ignored).
   */
  git?: string;
}

const requireFromHere = createRequire(import.meta.url);
let graphqlSchema: GraphQLSchema | null = null;

/** GitHub's public GraphQL schema as shipped with the simulator package (built once per process). */
function githubGraphqlSchema(): GraphQLSchema {
  if (!graphqlSchema) {
    const pkgDir = dirname(requireFromHere.resolve('@simulacrum/github-api-simulator/package.json'));
    graphqlSchema = buildSchema(readFileSync(join(pkgDir, 'schema', 'schema.docs.graphql'), 'utf8'), { assumeValidSDL: true });
  }
  return graphqlSchema;
}

/** The REST paths the simulator serves (a merge endpoint included, so that a mistaken call is routed and logged). */
const SERVED_PATHS = [
  '/repos/{owner}/{repo}/pulls',
  '/repos/{owner}/{repo}/pulls/{pull_number}',
  '/repos/{owner}/{repo}/pulls/{pull_number}/reviews',
  '/repos/{owner}/{repo}/pulls/{pull_number}/merge',
  '/repos/{owner}/{repo}/issues/{issue_number}/comments',
  '/repos/{owner}/{repo}/issues',
  '/repos/{owner}/{repo}/issues/{issue_number}',
  '/repos/{owner}/{repo}/issues/{issue_number}/events',
  '/repos/{owner}/{repo}/issues/comments/{comment_id}',
  '/repos/{owner}/{repo}/pulls/{pull_number}/comments',
  '/repos/{owner}/{repo}/commits/{ref}/check-runs',
  '/repos/{owner}/{repo}/commits/{ref}/status',
  '/repos/{owner}/{repo}/merges',
  '/repos/{owner}/{repo}/git/refs/{ref}',
  '/repos/{owner}/{repo}/collaborators/{username}/permission',
];
let trimmedSchemaPath: string | null = null;

/**
 * GitHub's official description (as bundled with the simulator) restricted to {@link SERVED_PATHS}
 * and the components they reference, written once per process to a temp file. The operations are
 * verbatim; only unrelated paths are left out. (The router of openapi-backend scans every path of
 * the description for each request: with all ~1000 operations a request costs ~40 ms, with these
 * a few ms.) Unserved endpoints then answer 404 instead of an example response.
 */
function trimmedGitHubDescription(): string {
  if (trimmedSchemaPath) return trimmedSchemaPath;
  const pkgDir = dirname(requireFromHere.resolve('@simulacrum/github-api-simulator/package.json'));
  const full = JSON.parse(readFileSync(join(pkgDir, 'schema', 'api.github.com.json'), 'utf8')) as {
    paths: Record<string, unknown>;
    components: Record<string, Record<string, unknown>>;
  };
  const paths: Record<string, unknown> = {};
  for (const p of SERVED_PATHS) paths[p] = full.paths[p];
  const keep = new Map<string, Set<string>>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') {
        const m = /^#\/components\/([^/]+)\/(.+)$/.exec(v);
        if (m && !keep.get(m[1]!)?.has(m[2]!)) {
          if (!keep.has(m[1]!)) keep.set(m[1]!, new Set());
          keep.get(m[1]!)!.add(m[2]!);
          visit(full.components[m[1]!]?.[m[2]!]);
        }
      } else visit(v);
    }
  };
  visit(paths);
  // OpenAPI 3.0.3 ("nullable" clarification, https://github.com/OAI/OpenAPI-Specification/blob/main/proposals/2019-10-31-Clarify-Nullable.md):
  // a nullable enum admits null only when null is among its values. GitHub's description marks
  // such fields nullable without listing null (check-run \`conclusion\`, review comment
  // \`start_side\`), though GitHub sends null there; null is added to those enums so the
  // validator admits what GitHub really answers.
  const admitNull = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(admitNull);
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if (o.nullable === true && Array.isArray(o.enum) && !o.enum.includes(null)) o.enum = [...o.enum, null];
    for (const v of Object.values(o)) admitNull(v);
  };
  // OpenAPI 3.0.3 allows `nullable` only beside `type`; ajv (the validator behind the router)
  // refuses to compile a schema that has it alone or beside a composition (GitHub's issue schema:
  // `issue-field-value.value` is `{anyOf: […], nullable: true}`). Such a node becomes "the same,
  // or null": `{anyOf: [the node without nullable, {enum: [null]}]}` — what GitHub means by it.
  const typelessNullable = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(typelessNullable);
    if (!node || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    for (const v of Object.values(o)) typelessNullable(v);
    if (o.nullable !== true || o.type !== undefined) return;
    const { nullable: _n, description, ...rest } = o;
    for (const k of Object.keys(o)) delete o[k];
    if (description !== undefined) o.description = description;
    o.anyOf = Object.keys(rest).length === 0 ? [{}] : [rest, { enum: [null] }];
  };
  const components: Record<string, Record<string, unknown>> = {};
  for (const [kind, names] of keep) {
    components[kind] = {};
    for (const n of names) components[kind][n] = full.components[kind]![n];
  }
  admitNull(paths);
  admitNull(components);
  typelessNullable(paths);
  typelessNullable(components);
  const text = JSON.stringify({ ...full, paths, components });
  // One file per content (shared by test processes, never growing): written to a temp name, then renamed.
  const file = join(tmpdir(), `polly-ghsim-${sha(text).slice(0, 16)}.json`);
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  }
  trimmedSchemaPath = file;
  return file;
}

function sha(seed: string): string {
  return createHash('sha1').update(seed).digest('hex');
}

const MERGE_PATH = /^\/repos\/[^/]+\/[^/]+\/pulls\/\d+\/merge$/;
const MERGES_PATH = /^\/repos\/[^/]+\/[^/]+\/merges$/;
const MERGE_MUTATIONS = /^(mergePullRequest|enablePullRequestAutoMerge|mergeBranch)$/;

/** Start the simulator on 127.0.0.1 at a free port. */
export async function startGitHubSimulator(options: GitHubSimulatorOptions = {}): Promise<GitHubSimulator> {
  const owner = options.owner ?? 'octo-org';
  const repo = options.repo ?? 'demo';
  const clock = options.clock ?? { now: () => Date.now() };
  const limit = options.rateLimit ?? 5000;
  const gitDir = options.git ?? null;
  const roles = new Map<string, SimRole | null>(Object.entries(options.roles ?? {}));
  const defaultRole = options.defaultRole === undefined ? 'write' : options.defaultRole;
  const roleOf = (login: string): SimRole | null => (roles.has(login) ? roles.get(login)! : defaultRole);
  /** GitHub's `author_association` for `login` (https://docs.github.com/en/graphql/reference/enums#commentauthorassociation). */
  const associationOf = (login: string): string => {
    const role = roleOf(login);
    if (role === null || role === 'none') return 'NONE';
    return login === owner ? 'OWNER' : 'COLLABORATOR';
  };
  const branches = new Map<string, string>(gitDir ? branchTips(gitDir) : Object.entries(options.branches ?? { main: sha('main-initial') }));
  const refUpdates: RefUpdate[] = [];
  const pulls = new Map<number, SimPull>();
  const issues = new Map<number, SimIssue>();
  const requests: SimRequest[] = [];
  const faults: FaultSpec[] = [];
  const tokenLogin = options.tokenLogin ?? 'polly-operator';
  const checkRuns = new Map<string, Array<SimCheckRun & { id: number; startedAt: string; completedAt: string | null }>>();
  const statuses = new Map<string, Array<SimCommitStatus & { id: number; at: string }>>();
  /** Requests refused because Polly must never send them. */
  const refused = new Set<SimRequest>();
  const forced = new Set<SimRequest>();
  /** Commit → its parent on the branch it was set on (`setBranch`, merges): enough to tell a fast-forward. */
  const parents = new Map<string, string>();
  const descendsFrom = (commit: string, ancestor: string): boolean => {
    if (gitDir) return isAncestor(gitDir, ancestor, commit);
    for (let c: string | undefined = commit, n = 0; c !== undefined && n < 10_000; c = parents.get(c), n++) if (c === ancestor) return true;
    return false;
  };
  const moveBranch = (name: string, to: string) => {
    const from = branches.get(name);
    if (from === to) return;
    refUpdates.push({ branch: name, from: from ?? null, to, fastForward: from === undefined || descendsFrom(to, from) });
    if (from !== undefined && !parents.has(to)) parents.set(to, from);
    branches.set(name, to);
  };
  /** With `git`: whether the PR's head no longer merges into its base (`git merge-tree`). */
  const gitConflicting = (p: Pick<SimPull, 'base' | 'head'>): boolean => {
    const baseTip = branches.get(p.base);
    const headTip = branches.get(p.head);
    return gitDir !== null && baseTip !== undefined && headTip !== undefined && mergeConflicts(gitDir, baseTip, headTip).length > 0;
  };
  /** With `git`: take the served repository's branch tips (after a push, or one straight into the bare repository). */
  const syncFromGit = () => {
    if (!gitDir) return;
    for (const [name, tip] of branchTips(gitDir)) {
      if (branches.get(name) === tip) continue;
      stateVersion += 1;
      moveBranch(name, tip);
      staleMergeability(name);
    }
  };
  /** The base moved or the head moved: GitHub recomputes `mergeable` for the open PRs involved. */
  const staleMergeability = (branch: string) => {
    for (const p of pulls.values()) {
      if (p.state !== 'open' || (p.base !== branch && p.head !== branch)) continue;
      if (gitDir) p.conflicting = gitConflicting(p);
      else if (p.head === branch) p.conflicting = false; // the new head brought the base in (tests move heads only to resolve)
      p.mergeability = 'stale';
    }
  };
  /** Bumped by every write; remembered ETags are current only for the version they were served at. */
  let stateVersion = 0;
  const currentEtags = new Map<string, string>();
  let nextNumber = 1;
  let nextId = 1000;
  let window = { reset: Math.floor(clock.now() / 1000) + 3600, remaining: limit };
  const iso = () => new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  /** Now, or one second after `t` when the clock has not moved past it (GitHub's timestamps are whole seconds): an edit's `updated_at`. */
  const laterThan = (t: string): string => {
    const now = iso();
    return Date.parse(now) > Date.parse(t) ? now : new Date(Date.parse(t) + 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  };

  const refreshWindow = () => {
    const nowS = Math.floor(clock.now() / 1000);
    if (nowS >= window.reset) window = { reset: nowS + 3600, remaining: limit };
  };
  const rateHeaders = (res: { setHeader(k: string, v: string): unknown }) => {
    res.setHeader('x-ratelimit-limit', String(limit));
    res.setHeader('x-ratelimit-remaining', String(Math.max(0, window.remaining)));
    res.setHeader('x-ratelimit-used', String(limit - Math.max(0, window.remaining)));
    res.setHeader('x-ratelimit-reset', String(window.reset));
    res.setHeader('x-ratelimit-resource', 'core');
  };

  // Response templates: the OpenAPI description's own examples, so every field GitHub documents is there.
  type Api = { mockResponseForOperation(id: string): { status: number; mock: unknown } };
  const templates = new Map<string, Record<string, unknown>>();
  const template = (api: Api, operationId: string): Record<string, unknown> => {
    if (!templates.has(operationId)) {
      const { mock } = api.mockResponseForOperation(operationId);
      templates.set(operationId, (Array.isArray(mock) ? mock[0] : mock) as Record<string, unknown>);
    }
    return structuredClone(templates.get(operationId)!);
  };

  const prJson = (api: Api, p: SimPull, simple: boolean): Record<string, unknown> => {
    const t = template(api, simple ? 'pulls/list' : 'pulls/get');
    const repoUrl = `https://api.github.com/repos/${owner}/${repo}`;
    const htmlUrl = `https://github.com/${owner}/${repo}/pull/${p.number}`;
    const head = t.head as Record<string, unknown>;
    const base = t.base as Record<string, unknown>;
    Object.assign(t, {
      id: p.number + 100_000,
      node_id: p.nodeId,
      number: p.number,
      url: `${repoUrl}/pulls/${p.number}`,
      html_url: htmlUrl,
      diff_url: `${htmlUrl}.diff`,
      patch_url: `${htmlUrl}.patch`,
      issue_url: `${repoUrl}/issues/${p.number}`,
      title: p.title,
      body: p.body,
      state: p.state,
      draft: p.draft,
      locked: false,
      active_lock_reason: null,
      // The description's own example fails its schema here (requested_teams[0] lacks `type`); a fresh PR has none of these.
      labels: [],
      milestone: null,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      requested_teams: [],
      auto_merge: null,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
      closed_at: p.closedAt,
      merged_at: p.mergedAt,
      merge_commit_sha: p.mergeCommitSha ?? sha(`test-merge-${p.number}-${p.headSha}`),
      head: { ...head, ref: p.head, sha: p.headSha, label: `${owner}:${p.head}` },
      base: { ...base, ref: p.base, sha: p.baseSha, label: `${owner}:${p.base}` },
    });
    if (!simple)
      Object.assign(t, {
        merged_by: null,
        merged: p.merged,
        mergeable: p.state !== 'open' || p.mergeability !== 'known' ? null : !p.conflicting,
        mergeable_state: p.state !== 'open' || p.mergeability !== 'known' ? 'unknown' : p.conflicting ? 'dirty' : p.draft ? 'draft' : 'clean',
        comments: p.comments.length,
        review_comments: p.reviews.reduce((n, r) => n + r.comments.length, 0),
      });
    return t;
  };

  /** Record a new open PR (its mergeability not computed yet, as on GitHub). */
  const newPull = (x: { title: string; body: string; head: string; base: string; draft: boolean; author: string }): SimPull => {
    const number = nextNumber++;
    const now = iso();
    const p: SimPull = {
      number,
      nodeId: Buffer.from(`PullRequest:${number}`).toString('base64'),
      ...x,
      headSha: branches.get(x.head)!,
      baseSha: branches.get(x.base)!,
      state: 'open',
      merged: false,
      mergeCommitSha: null,
      mergedAt: null,
      closedAt: null,
      createdAt: now,
      updatedAt: now,
      reviews: [],
      comments: [],
      files: [],
      conflicting: gitConflicting(x),
      mergeability: 'stale',
    };
    pulls.set(number, p);
    return p;
  };
  const authorOf = (req: ExpressReq) => sha(String(req.headers.authorization ?? 'anonymous'));
  type Ctx = { api: Api; request: { params: Record<string, string>; query: Record<string, string | string[]>; requestBody: Record<string, unknown> } };
  const notFound = { status: 404, json: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest', status: '404' } };
  const unprocessable = (message: string, field: string, code = 'invalid') => ({
    status: 422,
    json: { message: 'Validation Failed', documentation_url: 'https://docs.github.com/rest', errors: [{ resource: 'PullRequest', field, code, message }] },
  });
  const isOurRepo = (c: Ctx) => c.request.params.owner === owner && c.request.params.repo === repo;
  const pullOf = (c: Ctx) => (isOurRepo(c) ? pulls.get(Number(c.request.params.pull_number ?? c.request.params.issue_number)) : undefined);
  const issueOf = (c: Ctx) => (isOurRepo(c) ? issues.get(Number(c.request.params.issue_number)) : undefined);
  /** The conversation of issue or PR `issue_number` (GitHub's issue comments serve both). */
  const conversationOf = (c: Ctx): { comments: SimComment[]; kind: 'issues' | 'pull'; touch(): void } | undefined => {
    const i = issueOf(c);
    if (i) return { comments: i.comments, kind: 'issues', touch: () => void (i.updatedAt = iso()) };
    const p = pullOf(c);
    if (p) return { comments: p.comments, kind: 'pull', touch: () => void (p.updatedAt = iso()) };
    return undefined;
  };
  /** Find comment `id` on any issue or PR. */
  const findComment = (id: number): { list: SimComment[]; comment: SimComment; number: number; kind: 'issues' | 'pull' } | undefined => {
    for (const i of issues.values()) {
      const comment = i.comments.find((x) => x.id === id);
      if (comment) return { list: i.comments, comment, number: i.number, kind: 'issues' };
    }
    for (const p of pulls.values()) {
      const comment = p.comments.find((x) => x.id === id);
      if (comment) return { list: p.comments, comment, number: p.number, kind: 'pull' };
    }
    return undefined;
  };
  /** GitHub's `issue-comment` for `x` on issue or PR `number` (from the description's example). */
  const commentJson = (api: Api, operationId: string, x: SimComment, number: number, kind: 'issues' | 'pull') => {
    const t = template(api, operationId);
    return Object.assign(t, {
      id: x.id,
      node_id: Buffer.from(`IssueComment:${x.id}`).toString('base64'),
      user: userJson(t.user, x.login),
      author_association: associationOf(x.login),
      body: x.body,
      created_at: x.createdAt,
      updated_at: x.updatedAt,
      html_url: `https://github.com/${owner}/${repo}/${kind}/${number}#issuecomment-${x.id}`,
      issue_url: `https://api.github.com/repos/${owner}/${repo}/issues/${number}`,
    });
  };
  /** GitHub's `issue` for `i` (from the description's example; labels as `{id, name, color}` objects). */
  const issueJson = (api: Api, operationId: string, i: SimIssue) => {
    const t = template(api, operationId);
    return Object.assign(t, {
      id: i.number + 200_000,
      node_id: Buffer.from(`Issue:${i.number}`).toString('base64'),
      number: i.number,
      url: `https://api.github.com/repos/${owner}/${repo}/issues/${i.number}`,
      repository_url: `https://api.github.com/repos/${owner}/${repo}`,
      labels_url: `https://api.github.com/repos/${owner}/${repo}/issues/${i.number}/labels{/name}`,
      comments_url: `https://api.github.com/repos/${owner}/${repo}/issues/${i.number}/comments`,
      events_url: `https://api.github.com/repos/${owner}/${repo}/issues/${i.number}/events`,
      html_url: `https://github.com/${owner}/${repo}/issues/${i.number}`,
      title: i.title,
      body: i.body,
      state: i.state,
      state_reason: null,
      user: userJson(t.user, i.login),
      author_association: associationOf(i.login),
      labels: i.labels.map((name) => ({
        id: Number.parseInt(sha(`label:${name}`).slice(0, 8), 16),
        node_id: Buffer.from(`Label:${name}`).toString('base64'),
        url: `https://api.github.com/repos/${owner}/${repo}/labels/${encodeURIComponent(name)}`,
        name,
        description: null,
        color: 'ededed',
        default: false,
      })),
      assignee: null,
      assignees: [],
      milestone: null,
      locked: false,
      active_lock_reason: null,
      comments: i.comments.length,
      pull_request: undefined,
      closed_at: i.state === 'closed' ? i.updatedAt : null,
      closed_by: null,
      created_at: i.createdAt,
      updated_at: i.updatedAt,
    });
  };

  const openapiHandlers = () => ({
    'pulls/create': async (c: Ctx, req: ExpressReq) => {
      if (!isOurRepo(c)) return notFound;
      const b = c.request.requestBody;
      const head = String(b.head ?? '').replace(/^[^:]+:/, '');
      const base = String(b.base ?? '');
      if (!b.title) return unprocessable('title is required', 'title', 'missing_field');
      if (!branches.has(base)) return unprocessable(`base branch ${base} does not exist`, 'base');
      if (!branches.has(head)) return unprocessable(`head branch ${head} does not exist`, 'head');
      if (branches.get(head) === branches.get(base)) return unprocessable(`No commits between ${base} and ${head}`, 'head', 'custom');
      for (const p of pulls.values()) {
        if (p.state === 'open' && p.head === head && p.base === base) return unprocessable(`A pull request already exists for ${owner}:${head}.`, 'head', 'custom');
      }
      const p = newPull({ title: String(b.title), body: String(b.body ?? ''), head, base, draft: b.draft === true, author: authorOf(req) });
      return { status: 201, json: prJson(c.api, p, false) };
    },
    'pulls/get': async (c: Ctx) => {
      const p = pullOf(c);
      if (!p) return notFound;
      p.headSha = p.state === 'open' ? (branches.get(p.head) ?? p.headSha) : p.headSha;
      p.baseSha = p.state === 'open' ? (branches.get(p.base) ?? p.baseSha) : p.baseSha;
      // As on GitHub: a read after the base or head moved starts the background computation and says null.
      if (p.state === 'open' && p.mergeability === 'stale') {
        const json = prJson(c.api, p, false);
        p.mergeability = 'computing';
        return { status: 200, json };
      }
      return { status: 200, json: prJson(c.api, p, false) };
    },
    // Update a pull request (https://docs.github.com/en/rest/pulls/pulls#update-a-pull-request): title, body and base.
    'pulls/update': async (c: Ctx) => {
      const p = pullOf(c);
      if (!p) return notFound;
      const b = c.request.requestBody ?? {};
      if (typeof b.base === 'string' && b.base !== p.base) {
        // As on GitHub: the new base must be a branch of this repository, and the PR must be open.
        if (p.state !== 'open') return unprocessable('Cannot change the base branch of a closed pull request.', 'base', 'invalid');
        if (!branches.has(b.base)) return unprocessable(`Proposed base branch '${b.base}' was not found`, 'base', 'invalid');
        if (b.base === p.head) return unprocessable(`Cannot change the base branch to the head branch ${p.head}`, 'base', 'invalid');
        p.base = b.base;
        p.baseSha = branches.get(b.base)!;
        p.mergeability = 'stale';
        p.conflicting = gitConflicting(p);
      }
      if (typeof b.body === 'string') p.body = b.body;
      if (typeof b.title === 'string') p.title = b.title;
      return { status: 200, json: prJson(c.api, p, false) };
    },
    'pulls/list': async (c: Ctx) => {
      if (!isOurRepo(c)) return notFound;
      const q = c.request.query;
      const state = String(q.state ?? 'open');
      const perPage = Math.min(100, Number(q.per_page ?? 30));
      const page = Math.max(1, Number(q.page ?? 1));
      const all = [...pulls.values()]
        .filter((p) => state === 'all' || p.state === state)
        .filter((p) => (q.base ? p.base === q.base : true))
        .filter((p) => (q.head ? p.head === String(q.head).replace(/^[^:]+:/, '') : true))
        .sort((a, b) => b.number - a.number);
      return { status: 200, json: all.slice((page - 1) * perPage, page * perPage).map((p) => prJson(c.api, p, true)) };
    },
    'pulls/create-review': async (c: Ctx, req: ExpressReq) => {
      const p = pullOf(c);
      if (!p) return notFound;
      const b = c.request.requestBody;
      const event = b.event === undefined ? 'PENDING' : String(b.event);
      // As on GitHub: a PR's author may comment on it but not approve it or request changes.
      if (p.author === authorOf(req) && (event === 'APPROVE' || event === 'REQUEST_CHANGES')) {
        return {
          status: 422,
          json: {
            message: `Unprocessable Entity: ${event === 'APPROVE' ? 'Can not approve your own pull request' : 'Can not request changes on your own pull request'}`,
            documentation_url: 'https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request',
          },
        };
      }
      if ((event === 'REQUEST_CHANGES' || event === 'COMMENT') && !b.body) {
        return unprocessable(`body is required for ${event}`, 'body', 'missing_field');
      }
      if (p.state !== 'open') return unprocessable('Can not review a closed pull request', 'state', 'custom');
      const comments = ((b.comments as Array<Record<string, unknown>> | undefined) ?? []).map((x) => ({
        id: nextId++,
        path: String(x.path),
        line: typeof x.line === 'number' ? x.line : null,
        side: typeof x.side === 'string' ? x.side : null,
        body: String(x.body),
      }));
      if (comments.some((x) => x.line === null)) return unprocessable('each comment needs a line (or position)', 'comments', 'missing_field');
      const state = { APPROVE: 'APPROVED', REQUEST_CHANGES: 'CHANGES_REQUESTED', COMMENT: 'COMMENTED', PENDING: 'PENDING' }[event] ?? 'COMMENTED';
      const review: SimReview = {
        id: nextId++,
        event,
        state,
        body: String(b.body ?? ''),
        commitId: String(b.commit_id ?? p.headSha),
        login: tokenLogin,
        submittedAt: iso(),
        comments,
      };
      p.reviews.push(review);
      p.updatedAt = iso();
      const t = template(c.api, 'pulls/create-review');
      Object.assign(t, {
        id: review.id,
        node_id: Buffer.from(`PullRequestReview:${review.id}`).toString('base64'),
        body: review.body,
        state,
        commit_id: review.commitId,
        html_url: `https://github.com/${owner}/${repo}/pull/${p.number}#pullrequestreview-${review.id}`,
        pull_request_url: `https://api.github.com/repos/${owner}/${repo}/pulls/${p.number}`,
        submitted_at: iso(),
      });
      return { status: 200, json: t };
    },
    'pulls/list-reviews': async (c: Ctx) => {
      const p = pullOf(c);
      if (!p) return notFound;
      return {
        status: 200,
        json: page(c, p.reviews).map((r) => {
          const t = template(c.api, 'pulls/list-reviews');
          return Object.assign(t, {
            id: r.id,
            node_id: Buffer.from(`PullRequestReview:${r.id}`).toString('base64'),
            user: userJson(t.user, r.login),
            author_association: associationOf(r.login),
            body: r.body,
            state: r.state,
            commit_id: r.commitId,
            submitted_at: r.submittedAt,
            html_url: `https://github.com/${owner}/${repo}/pull/${p.number}#pullrequestreview-${r.id}`,
            pull_request_url: `https://api.github.com/repos/${owner}/${repo}/pulls/${p.number}`,
          });
        }),
      };
    },
    'pulls/list-review-comments': async (c: Ctx) => {
      const p = pullOf(c);
      if (!p) return notFound;
      const all = p.reviews.flatMap((r) => r.comments.map((x) => ({ r, x })));
      return {
        status: 200,
        json: page(c, all).map(({ r, x }) => {
          const t = template(c.api, 'pulls/list-review-comments');
          return Object.assign(t, {
            id: x.id,
            node_id: Buffer.from(`PullRequestReviewComment:${x.id}`).toString('base64'),
            pull_request_review_id: r.id,
            path: x.path,
            line: x.line,
            original_line: x.line,
            side: x.side ?? 'RIGHT',
            start_line: null,
            original_start_line: null,
            start_side: null,
            in_reply_to_id: undefined,
            commit_id: r.commitId,
            original_commit_id: r.commitId,
            user: userJson(t.user, r.login),
            author_association: associationOf(r.login),
            body: x.body,
            created_at: r.submittedAt,
            updated_at: r.submittedAt,
            html_url: `https://github.com/${owner}/${repo}/pull/${p.number}#discussion_r${x.id}`,
            pull_request_url: `https://api.github.com/repos/${owner}/${repo}/pulls/${p.number}`,
          });
        }),
      };
    },
    'issues/list-comments': async (c: Ctx) => {
      const conv = conversationOf(c);
      if (!conv) return notFound;
      const number = Number(c.request.params.issue_number);
      return { status: 200, json: page(c, conv.comments).map((x) => commentJson(c.api, 'issues/list-comments', x, number, conv.kind)) };
    },
    // https://docs.github.com/en/rest/issues/comments#update-an-issue-comment
    'issues/update-comment': async (c: Ctx, req: ExpressReq) => {
      if (!isOurRepo(c)) return notFound;
      const found = findComment(Number(c.request.params.comment_id));
      if (!found) return notFound;
      // As on GitHub: only the comment's author (or a maintainer) may edit it; Polly edits its own.
      if (found.comment.login !== tokenLogin || authorOf(req) === sha('anonymous')) {
        return {
          status: 403,
          json: { message: 'Must have admin rights to Repository.', documentation_url: 'https://docs.github.com/rest/issues/comments#update-an-issue-comment' },
        };
      }
      found.comment.body = String(c.request.requestBody.body ?? '');
      found.comment.updatedAt = laterThan(found.comment.createdAt);
      return { status: 200, json: commentJson(c.api, 'issues/update-comment', found.comment, found.number, found.kind) };
    },
    // https://docs.github.com/en/rest/issues/issues#list-repository-issues: issues and PRs, filtered by state and labels (all of them, comma-separated).
    'issues/list-for-repo': async (c: Ctx) => {
      if (!isOurRepo(c)) return notFound;
      const q = c.request.query;
      const state = String(q.state ?? 'open');
      const want = String(q.labels ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
      const all = [...issues.values()]
        .filter((i) => state === 'all' || i.state === state)
        .filter((i) => want.every((l) => i.labels.includes(l)))
        .sort((a, b) => b.number - a.number);
      return { status: 200, json: page(c, all).map((i) => issueJson(c.api, 'issues/list-for-repo', i)) };
    },
    'issues/get': async (c: Ctx) => {
      const i = issueOf(c);
      if (!i) return notFound;
      return { status: 200, json: issueJson(c.api, 'issues/get', i) };
    },
    // https://docs.github.com/en/rest/issues/events#list-issue-events: here the `labeled` / `unlabeled` events, each with its actor.
    'issues/list-events': async (c: Ctx) => {
      const i = issueOf(c);
      if (!i) return notFound;
      return {
        status: 200,
        json: page(c, i.events).map((e) => {
          const t = template(c.api, 'issues/list-events');
          return Object.assign(t, {
            id: e.id,
            node_id: Buffer.from(`LabeledEvent:${e.id}`).toString('base64'),
            url: `https://api.github.com/repos/${owner}/${repo}/issues/events/${e.id}`,
            actor: userJson(t.actor, e.actor),
            event: e.event,
            commit_id: null,
            commit_url: null,
            created_at: e.createdAt,
            performed_via_github_app: null,
            label: { name: e.label, color: 'ededed' },
          });
        }),
      };
    },
    // https://docs.github.com/en/rest/collaborators/collaborators#get-repository-permissions-for-a-user:
    // `permission` is admin, write, read or none (maintain reads as write, triage as read; `role_name` is the role).
    'repos/get-collaborator-permission-level': async (c: Ctx) => {
      if (!isOurRepo(c)) return notFound;
      const login = c.request.params.username!;
      const role = roleOf(login);
      if (role === null) return notFound;
      const permission = { admin: 'admin', maintain: 'write', write: 'write', triage: 'read', read: 'read', none: 'none' }[role];
      const t = template(c.api, 'repos/get-collaborator-permission-level');
      const level = ['none', 'read', 'triage', 'write', 'maintain', 'admin'].indexOf(role);
      const user = {
        ...(t.user as Record<string, unknown>),
        ...userJson(t.user, login),
        role_name: role,
        permissions: { pull: level >= 1, triage: level >= 2, push: level >= 3, maintain: level >= 4, admin: level >= 5 },
      };
      return { status: 200, json: Object.assign(t, { permission, role_name: role, user }) };
    },
    'checks/list-for-ref': async (c: Ctx) => {
      if (!isOurRepo(c)) return notFound;
      const ref = c.request.params.ref!;
      const runs = checkRuns.get(branches.get(ref) ?? ref) ?? [];
      const headSha = branches.get(ref) ?? ref;
      return {
        status: 200,
        json: {
          total_count: runs.length,
          check_runs: page(c, runs).map((r) => {
            const t = template(c.api, 'checks/list-for-ref');
            const run = ((t.check_runs as Record<string, unknown>[] | undefined)?.[0] ?? t) as Record<string, unknown>;
            return Object.assign(structuredClone(run), {
              id: r.id,
              node_id: Buffer.from(`CheckRun:${r.id}`).toString('base64'),
              head_sha: headSha,
              name: r.name,
              status: r.status,
              conclusion: r.status === 'completed' ? r.conclusion : null,
              started_at: r.startedAt,
              completed_at: r.completedAt,
              html_url: `https://github.com/${owner}/${repo}/runs/${r.id}`,
              details_url: `https://ci.example.test/${owner}/${repo}/runs/${r.id}`,
              url: `https://api.github.com/repos/${owner}/${repo}/check-runs/${r.id}`,
              external_id: String(r.id),
              pull_requests: [],
              output: {
                title: r.output?.title ?? null,
                summary: r.output?.summary ?? null,
                text: r.output?.text ?? null,
                annotations_count: 0,
                annotations_url: `https://api.github.com/repos/${owner}/${repo}/check-runs/${r.id}/annotations`,
              },
            });
          }),
        },
      };
    },
    'repos/get-combined-status-for-ref': async (c: Ctx) => {
      if (!isOurRepo(c)) return notFound;
      const ref = c.request.params.ref!;
      const headSha = branches.get(ref) ?? ref;
      const list = statuses.get(headSha) ?? [];
      const t = template(c.api, 'repos/get-combined-status-for-ref');
      const one = ((t.statuses as Record<string, unknown>[] | undefined)?.[0] ?? {}) as Record<string, unknown>;
      // GitHub: failure if any is error or failure, pending if none yet or any pending, else success.
      const state = list.some((x) => x.state === 'error' || x.state === 'failure')
        ? 'failure'
        : list.length === 0 || list.some((x) => x.state === 'pending')
          ? 'pending'
          : 'success';
      return {
        status: 200,
        json: Object.assign(t, {
          state,
          sha: headSha,
          total_count: list.length,
          statuses: list.map((x) =>
            Object.assign(structuredClone(one), {
              id: x.id,
              node_id: Buffer.from(`StatusContext:${x.id}`).toString('base64'),
              state: x.state,
              context: x.context,
              description: x.description ?? null,
              target_url: x.targetUrl ?? null,
              created_at: x.at,
              updated_at: x.at,
            }),
          ),
          commit_url: `https://api.github.com/repos/${owner}/${repo}/commits/${headSha}`,
          url: `https://api.github.com/repos/${owner}/${repo}/commits/${headSha}/status`,
        }),
      };
    },
    'issues/create-comment': async (c: Ctx) => {
      const conv = conversationOf(c);
      if (!conv) return notFound;
      const body = String(c.request.requestBody.body ?? '');
      const id = nextId++;
      const x: SimComment = { id, body, login: tokenLogin, createdAt: iso(), updatedAt: iso() };
      conv.comments.push(x);
      conv.touch();
      return { status: 201, json: commentJson(c.api, 'issues/create-comment', x, Number(c.request.params.issue_number), conv.kind) };
    },
    // Refused and recorded: Polly never merges (nothing changes; the request is in refusedRequests()).
    'pulls/merge': async (c: Ctx) => refuse(c, 'merging a pull request'),
    'repos/merge': async (c: Ctx) => refuse(c, 'merging a branch'),
    'git/update-ref': async (c: Ctx) => {
      if (!isOurRepo(c)) return notFound;
      const ref = String(c.request.params.ref ?? '').replace(/^heads\//, '');
      const to = String(c.request.requestBody.sha ?? '');
      const from = branches.get(ref);
      if (from === undefined) return { status: 422, json: { message: 'Reference does not exist', documentation_url: 'https://docs.github.com/rest/git/refs#update-a-reference' } };
      if (c.request.requestBody.force === true || !descendsFrom(to, from)) {
        forced.add(requests[requests.length - 1]!);
        return refuse(c, `a ${c.request.requestBody.force === true ? 'forced' : 'non-fast-forward'} update of ${ref}`);
      }
      moveBranch(ref, to);
      staleMergeability(ref);
      const t = template(c.api, 'git/update-ref');
      return { status: 200, json: Object.assign(t, { ref: `refs/heads/${ref}`, object: { ...(t.object as Record<string, unknown>), sha: to } }) };
    },
  });

  /** Refuse a request Polly must never send: 403, nothing changes, and it is recorded. */
  const refuse = (_c: Ctx, what: string) => {
    refused.add(requests[requests.length - 1]!);
    return {
      status: 403,
      json: { message: `Refused by the simulator: ${what}. Polly never merges or force-updates a ref.`, documentation_url: 'https://docs.github.com/rest' },
    };
  };

  /** One page of a list (GitHub's `per_page`, default 30, at most 100, and `page`, from 1). */
  const page = <T>(c: Ctx, all: readonly T[]): T[] => {
    const perPage = Math.min(100, Number(c.request.query.per_page ?? 30));
    const n = Math.max(1, Number(c.request.query.page ?? 1));
    return all.slice((n - 1) * perPage, n * perPage);
  };
  /** A `simple-user` for `login`, from the description's example user. */
  const userJson = (example: unknown, login: string) => ({
    ...(example as Record<string, unknown>),
    login,
    id: Number.parseInt(sha(login).slice(0, 8), 16),
    node_id: Buffer.from(`User:${login}`).toString('base64'),
    type: 'User',
    url: `https://api.github.com/users/${login}`,
    html_url: `https://github.com/${login}`,
  });

  const mergeInto = (p: SimPull, method: 'merge' | 'squash' | 'rebase'): string => {
    if (gitDir) syncFromGit();
    const head = branches.get(p.head) ?? p.headSha;
    const commit = gitDir
      ? mergeOnServer(gitDir, p.base, head, method, `Merge pull request #${p.number} from ${owner}/${p.head}\n\n${p.title}`)
      : sha(`${method}-${p.number}-${p.headSha}-${branches.get(p.base)}`);
    p.headSha = head;
    moveBranch(p.base, commit);
    staleMergeability(p.base);
    // Another open PR that changes one of the same files no longer merges (with git: computed by merge-tree above).
    for (const q of pulls.values()) {
      if (!gitDir && q !== p && q.state === 'open' && q.base === p.base && q.files.some((f) => p.files.includes(f))) q.conflicting = true;
    }
    p.state = 'closed';
    p.merged = true;
    p.mergeCommitSha = commit;
    p.mergedAt = iso();
    p.closedAt = p.mergedAt;
    p.updatedAt = p.mergedAt;
    return commit;
  };

  const graphqlRoot = {
    markPullRequestReadyForReview: ({ input }: { input: { pullRequestId: string } }) => {
      const p = [...pulls.values()].find((x) => x.nodeId === input.pullRequestId);
      if (!p) throw new Error(`Could not resolve to a node with the global id of '${input.pullRequestId}'`);
      if (p.state !== 'open') throw new Error('Pull request is closed');
      p.draft = false;
      p.updatedAt = iso();
      return { pullRequest: gqlPull(p) };
    },
    mergePullRequest: () => {
      throw new Error('Refused by the simulator: merging a pull request. Polly never merges.');
    },
    enablePullRequestAutoMerge: () => {
      throw new Error('Refused by the simulator: enabling auto-merge. Polly never merges.');
    },
    mergeBranch: () => {
      throw new Error('Refused by the simulator: merging a branch. Polly never merges.');
    },
  };
  const gqlPull = (p: SimPull) => ({
    id: p.nodeId,
    number: p.number,
    isDraft: p.draft,
    state: p.merged ? 'MERGED' : p.state === 'open' ? 'OPEN' : 'CLOSED',
    merged: p.merged,
    url: `https://github.com/${owner}/${repo}/pull/${p.number}`,
    title: p.title,
  });

  // Quiet two known, harmless warnings of the simulator's libraries while it runs: handlers it
  // registers for endpoints outside the trimmed description, and ajv's unknown `repo.nwo` format.
  const warn = console.warn;
  const quiet = (...args: unknown[]) => {
    if (/^(Unknown operationId |unknown format "repo\.nwo")/.test(String(args[0]))) return;
    warn.apply(console, args);
  };
  console.warn = quiet;
  const app = simulation({
    apiSchema: trimmedGitHubDescription(),
    initialState: {
      users: [],
      organizations: [{ login: owner }],
      repositories: [{ owner, name: repo }],
      branches: [...branches.keys()].map((name) => ({ name })),
      blobs: [],
    },
    extend: {
      openapiHandlers: openapiHandlers as never,
      extendRouter: ((router: {
        use: {
          (fn: (req: ExpressReq, res: ExpressRes, next: () => void) => void): void;
          (path: string, fn: (req: ExpressReq, res: ExpressRes) => void): void;
        };
        post: (path: string, fn: (req: ExpressReq, res: ExpressRes) => void) => void;
        router?: { stack?: Array<{ handle?: { toString(): string } }> };
      }) => {
        // The foundation's own per-request log (a state-store dispatch per request, for its
        // /simulation page) costs more than the rest of a request; this simulator keeps its own log.
        const stack = router.router?.stack ?? [];
        const own = stack.findIndex((l) => String(l.handle ?? '').includes('simulationLog'));
        if (own >= 0) stack.splice(own, 1);
        // Git smart HTTP (not the API: not in the request log, not rate limited). After a push the branches are re-read.
        if (gitDir) {
          router.use(`/${owner}/${repo}.git`, (req, res) => {
            const raw = req as unknown as ExpressReq & { originalUrl: string; pipe(to: NodeJS.WritableStream): unknown };
            const q = raw.originalUrl.indexOf('?');
            serveGitHttp(
              gitDir,
              { method: raw.method, pathInfo: raw.path, queryString: q >= 0 ? raw.originalUrl.slice(q + 1) : '', headers: raw.headers, pipe: (to) => raw.pipe(to) },
              res as unknown as Parameters<typeof serveGitHttp>[2],
              syncFromGit,
            );
          });
        }
        router.use((req, res, next) => {
          const entry: SimRequest = {
            method: req.method,
            path: req.path,
            query: { ...req.query },
            body: req.body === undefined ? undefined : structuredClone(req.body),
            ifNoneMatch: typeof req.headers['if-none-match'] === 'string' ? req.headers['if-none-match'] : null,
            authorized: typeof req.headers.authorization === 'string',
            at: clock.now(),
            status: 0,
            charged: false,
            graphqlFields: [],
          };
          requests.push(entry);
          refreshWindow();
          // GitHub sees every push at once: with git, the branches are the served repository's.
          syncFromGit();
          // GitHub's background mergeability job finishes between two requests.
          for (const p of pulls.values()) {
            if (p.mergeability === 'computing') {
              p.mergeability = 'known';
              stateVersion += 1;
            }
          }
          const fault = faults.shift();
          if (fault) {
            rateHeaders(res);
            if (fault.exhausted) res.setHeader('x-ratelimit-remaining', '0');
            if (fault.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(fault.retryAfterSeconds));
            entry.status = fault.status;
            res.status(fault.status);
            res.setHeader('content-type', 'application/json; charset=utf-8');
            res.end(
              JSON.stringify({
                message: fault.retryAfterSeconds !== undefined ? 'You have exceeded a secondary rate limit.' : 'API rate limit exceeded for user ID 1.',
                documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
              }),
            );
            return;
          }
          if (window.remaining <= 0) {
            rateHeaders(res);
            entry.status = 403;
            res.status(403);
            res.setHeader('content-type', 'application/json; charset=utf-8');
            res.end(JSON.stringify({ message: 'API rate limit exceeded for user ID 1.', documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api' }));
            return;
          }
          // A conditional GET whose ETag is still current is answered here, before routing: the
          // same request was fully validated when that ETag was served, and any write since (a
          // non-GET request or a test control) invalidates every remembered ETag.
          const cacheKey = `${req.path}?${JSON.stringify(req.query)}`;
          if (req.method !== 'GET') stateVersion += 1;
          else if (entry.ifNoneMatch !== null && currentEtags.get(cacheKey) === `${stateVersion} ${entry.ifNoneMatch}`) {
            res.setHeader('etag', entry.ifNoneMatch);
            rateHeaders(res);
            entry.status = 304;
            res.status(304).end();
            return;
          }
          const json = res.json.bind(res);
          res.json = (body: unknown) => {
            const etag = `W/"${sha(JSON.stringify(body))}"`;
            if (req.method === 'GET' && res.statusCode < 300) {
              res.setHeader('etag', etag);
              currentEtags.set(cacheKey, `${stateVersion} ${etag}`);
              if (entry.ifNoneMatch === etag) {
                rateHeaders(res);
                entry.status = 304;
                res.status(304).end();
                return res;
              }
            }
            window.remaining -= 1;
            entry.charged = true;
            entry.status = res.statusCode;
            rateHeaders(res);
            return json(body);
          };
          next();
        });
        router.post('/graphql', (req, res) => {
          const entry = requests[requests.length - 1]!;
          const { query, variables } = (req.body ?? {}) as { query?: string; variables?: Record<string, unknown> };
          let doc: DocumentNode;
          try {
            doc = parse(String(query ?? ''));
          } catch (error) {
            res.status(200).json({ errors: [{ message: (error as Error).message }] });
            return;
          }
          entry.graphqlFields = doc.definitions
            .filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
            .flatMap((d) => d.selectionSet.selections.map((s) => (s.kind === Kind.FIELD ? s.name.value : '')));
          if (entry.graphqlFields.some((f) => MERGE_MUTATIONS.test(f))) refused.add(entry);
          const errors = validate(githubGraphqlSchema(), doc);
          if (errors.length) {
            res.status(200).json({ errors: errors.map((e) => ({ message: e.message })) });
            return;
          }
          Promise.resolve(execute({ schema: githubGraphqlSchema(), document: doc, rootValue: graphqlRoot, variableValues: variables ?? {} })).then(
            (result) => res.status(200).json(result.errors ? { data: result.data, errors: result.errors.map((e) => ({ message: e.message })) } : { data: result.data }),
            (error: Error) => res.status(500).json({ message: error.message }),
          );
        });
      }) as never,
    },
  });
  // Loopback only, at a free port (the typings of listen() omit the host argument express accepts).
  const listen = app.listen as unknown as (port: number, host: string) => Promise<{ port: number; ensureClose(): Promise<void> }>;
  const server = await listen.call(app, 0, '127.0.0.1');
  const baseUrl = `http://127.0.0.1:${server.port}`;

  return {
    baseUrl,
    owner,
    repo,
    requests,
    pulls,
    refUpdates,
    gitUrl: gitDir ? `${baseUrl}/${owner}/${repo}.git` : null,
    mergeRequests: () =>
      requests.filter(
        (r) => (r.method === 'PUT' && MERGE_PATH.test(r.path)) || (r.method === 'POST' && MERGES_PATH.test(r.path)) || r.graphqlFields.some((f) => MERGE_MUTATIONS.test(f)),
      ),
    refusedRequests: () => requests.filter((r) => refused.has(r)),
    forceUpdates: () => requests.filter((r) => forced.has(r)),
    setBranch: (name, s) => {
      stateVersion += 1;
      moveBranch(name, s);
      staleMergeability(name);
    },
    branchSha: (name) => branches.get(name),
    humanMerge(number, method = 'merge') {
      const p = pulls.get(number);
      if (p?.state !== 'open') throw new Error(`simulator: PR #${number} is not open`);
      stateVersion += 1;
      return mergeInto(p, method);
    },
    humanOpenPull(pull) {
      syncFromGit();
      for (const name of [pull.head, pull.base]) if (!branches.has(name)) throw new Error(`simulator: no branch ${name}`);
      stateVersion += 1;
      return newPull({ title: pull.title, body: pull.body ?? '', head: pull.head, base: pull.base, draft: false, author: sha(`human:${pull.login}`) }).number;
    },
    humanClose(number) {
      const p = pulls.get(number);
      if (!p) throw new Error(`simulator: no PR #${number}`);
      stateVersion += 1;
      p.state = 'closed';
      p.closedAt = iso();
      p.updatedAt = p.closedAt;
    },
    humanReview(number, review) {
      syncFromGit();
      const p = pulls.get(number);
      if (p?.state !== 'open') throw new Error(`simulator: PR #${number} is not open`);
      stateVersion += 1;
      const state = { APPROVE: 'APPROVED', REQUEST_CHANGES: 'CHANGES_REQUESTED', COMMENT: 'COMMENTED' }[review.event];
      const id = nextId++;
      const comments = (review.comments ?? []).map((x) => ({ id: nextId++, path: x.path, line: x.line, side: 'RIGHT', body: x.body }));
      p.reviews.push({ id, event: review.event, state, body: review.body, commitId: p.headSha, login: review.login, submittedAt: iso(), comments });
      p.updatedAt = iso();
      return id;
    },
    setRole(login, role) {
      roles.set(login, role);
    },
    humanComment(number, comment) {
      const target = issues.get(number) ?? pulls.get(number);
      if (!target) throw new Error(`simulator: no issue or PR #${number}`);
      stateVersion += 1;
      const id = nextId++;
      target.comments.push({ id, body: comment.body, login: comment.login, createdAt: iso(), updatedAt: iso() });
      target.updatedAt = iso();
      return id;
    },
    issues,
    humanOpenIssue(issue) {
      stateVersion += 1;
      const number = nextNumber++;
      const at = iso();
      const i: SimIssue = {
        number,
        title: issue.title,
        body: issue.body ?? '',
        login: issue.login,
        state: 'open',
        labels: [],
        events: [],
        comments: [],
        createdAt: at,
        updatedAt: at,
      };
      issues.set(number, i);
      for (const label of issue.labels ?? []) {
        i.labels.push(label);
        i.events.push({ id: nextId++, event: 'labeled', label, actor: issue.login, createdAt: at });
      }
      return number;
    },
    humanLabel(number, { login, label }) {
      const i = issues.get(number);
      if (!i) throw new Error(`simulator: no issue #${number}`);
      stateVersion += 1;
      if (!i.labels.includes(label)) i.labels.push(label);
      i.updatedAt = iso();
      i.events.push({ id: nextId++, event: 'labeled', label, actor: login, createdAt: i.updatedAt });
    },
    humanUnlabel(number, { login, label }) {
      const i = issues.get(number);
      if (!i) throw new Error(`simulator: no issue #${number}`);
      stateVersion += 1;
      i.labels = i.labels.filter((l) => l !== label);
      i.updatedAt = iso();
      i.events.push({ id: nextId++, event: 'unlabeled', label, actor: login, createdAt: i.updatedAt });
    },
    humanEditComment(id, body) {
      const found = findComment(id);
      if (!found) throw new Error(`simulator: no comment ${id}`);
      stateVersion += 1;
      found.comment.body = body;
      found.comment.updatedAt = laterThan(found.comment.createdAt);
    },
    humanDeleteComment(id) {
      const found = findComment(id);
      if (!found) throw new Error(`simulator: no comment ${id}`);
      stateVersion += 1;
      found.list.splice(found.list.indexOf(found.comment), 1);
    },
    setCheckRun(commit, run) {
      syncFromGit();
      stateVersion += 1;
      const list = (checkRuns.get(commit) ?? []).filter((r) => r.name !== run.name);
      list.push({ ...run, id: nextId++, startedAt: iso(), completedAt: run.status === 'completed' ? iso() : null });
      checkRuns.set(commit, list);
    },
    setCommitStatus(commit, status) {
      stateVersion += 1;
      const list = (statuses.get(commit) ?? []).filter((x) => x.context !== status.context);
      list.push({ ...status, id: nextId++, at: iso() });
      statuses.set(commit, list);
    },
    setChangedFiles(number, files) {
      const p = pulls.get(number);
      if (!p) throw new Error(`simulator: no PR #${number}`);
      p.files = [...files];
    },
    failNext(fault, count = 1) {
      for (let i = 0; i < count; i++) faults.push(fault);
    },
    rateLimit: () => {
      refreshWindow();
      return { limit, remaining: window.remaining, reset: window.reset };
    },
    close: async () => {
      await server.ensureClose();
      if (console.warn === quiet) console.warn = warn;
    },
  };
}

interface ExpressReq {
  method: string;
  path: string;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}
interface ExpressRes {
  statusCode: number;
  status(code: number): ExpressRes;
  setHeader(name: string, value: string): unknown;
  end(body?: string): unknown;
  json(body: unknown): ExpressRes;
}
