/**
 * The GitHub forge: real Octokit against the GitHub API simulator (REST requests and responses
 * validated against GitHub's OpenAPI description, GraphQL against GitHub's public schema).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createGitHubForge, markedBody, parseGitHubRemote, POLLY_MARKER } from '../../../brain/forge/github-forge.js';
import type { RateLimitWait } from '../../../brain/forge/github-client.js';
import { isPollyError } from '../../../brain/core/errors.js';
import { commentableLines, reviewFromFindings } from '../../../workers/review-findings.js';
import { createFakeClock, startGitHubSimulator, type GitHubSimulator } from '../../helpers/github-simulator.js';

const TOKEN = 'ghp_FAKEtokenForTheSimulator0123456789ab';
const sha = (c: string) => c.repeat(40);

describe('GitHub forge against the simulator', () => {
  let sim: GitHubSimulator;
  const clock = createFakeClock();

  beforeAll(async () => {
    sim = await startGitHubSimulator({
      clock,
      branches: { main: sha('a'), release: sha('c'), 'polly/t1': sha('b'), 'polly/t2': sha('d'), 'polly/t3': sha('e') },
    });
  });
  afterAll(async () => {
    await sim?.close();
  });

  const forgeFor = (s: GitHubSimulator, extra: Partial<Parameters<typeof createGitHubForge>[0]> = {}) =>
    createGitHubForge({ owner: s.owner, repo: s.repo, token: TOKEN, baseUrl: s.baseUrl, retryAfterBaseValue: 5, ...extra });

  test('one PR end to end: draft against the task base, review with comments, ready, read, list — and no merge request', async () => {
    const forge = forgeFor(sim);
    const from = sim.requests.length;
    const opened = await forge.openDraftPullRequest({ head: 'polly/t1', base: 'release', title: 'Task t1: add X', body: '## Task t1\n' });
    expect(opened).toMatchObject({ forge: 'github', state: 'draft', headSha: sha('b') });
    expect(opened.url).toBe(`https://github.com/${sim.owner}/${sim.repo}/pull/${opened.number}`);
    const pull = sim.pulls.get(opened.number)!;
    expect(pull).toMatchObject({ base: 'release', head: 'polly/t1', draft: true, title: 'Task t1: add X' });

    const review = await forge.postReview(opened.number, {
      event: 'COMMENT',
      body: 'Cross-review by codex: 1 blocking finding',
      comments: [{ path: 'src/a.ts', line: 12, body: 'off by one' }],
    });
    expect(review.id).toBe(pull.reviews[0]!.id);
    expect(pull.reviews[0]).toMatchObject({ state: 'COMMENTED', comments: [{ path: 'src/a.ts', line: 12, side: 'RIGHT', body: markedBody('off by one') }] });
    expect(pull.reviews[0]!.body).toBe(`Cross-review by codex: 1 blocking finding\n\n${POLLY_MARKER}`); // the watcher's sign of Polly's own words
    await forge.comment(opened.number, 'checks green');
    expect(pull.comments.map((c) => c.body)).toEqual([markedBody('checks green')]);

    expect((await forge.getPullRequest(opened.number)).state).toBe('draft');
    await forge.markReady(opened.number);
    expect(pull.draft).toBe(false);
    const info = await forge.getPullRequest(opened.number);
    expect(info).toMatchObject({ state: 'ready', merged: false, mergeCommitSha: null, base: 'release', head: 'polly/t1', headSha: sha('b') });
    await forge.markReady(opened.number); // already ready: no second mutation

    const listed = await forge.listPullRequests();
    expect(listed.map((p) => [p.number, p.state])).toContainEqual([opened.number, 'ready']);
    // Found by its head and base (GitHub's `head=owner:branch` filter), as a re-run looks for it.
    expect(await forge.findOpenPullRequest('polly/t1', 'release')).toMatchObject({ number: opened.number, state: 'ready', head: 'polly/t1' });
    expect(await forge.findOpenPullRequest('polly/t1', 'main')).toBeNull();
    expect(sim.requests.slice(from).some((r) => r.path.endsWith('/pulls') && r.query.head === `${sim.owner}:polly/t1` && r.query.base === 'release')).toBe(true);

    const sent = sim.requests.slice(from);
    expect(sent.every((r) => r.authorized)).toBe(true);
    expect(sent.filter((r) => r.path === '/graphql').flatMap((r) => r.graphqlFields)).toEqual(['markPullRequestReadyForReview']);
    expect(sent.every((r) => r.status < 400 || r.status === 304)).toBe(true);
    expect(sim.mergeRequests()).toEqual([]);
  });

  test('the human merges (squash) or closes on GitHub: the forge reads merged / closed', async () => {
    const forge = forgeFor(sim);
    const a = await forge.openDraftPullRequest({ head: 'polly/t2', base: 'main', title: 't2', body: '' });
    const b = await forge.openDraftPullRequest({ head: 'polly/t3', base: 'main', title: 't3', body: '' });
    expect((await forge.getPullRequest(a.number)).mergeCommitSha).toBeNull(); // GitHub's test-merge sha is not reported
    const squash = sim.humanMerge(a.number, 'squash');
    sim.humanClose(b.number);
    expect(await forge.getPullRequest(a.number)).toMatchObject({ state: 'merged', merged: true, mergeCommitSha: squash });
    expect(await forge.getPullRequest(b.number)).toMatchObject({ state: 'closed', merged: false });
    expect((await forge.listPullRequests({ state: 'closed' })).map((p) => p.number).sort()).toEqual([a.number, b.number].sort());
    expect(await forge.findOpenPullRequest('polly/t2', 'main')).toBeNull(); // merged: not open
    expect(await forge.findOpenPullRequest('polly/t3', 'main')).toBeNull(); // closed
    await expect(forge.markReady(a.number)).rejects.toMatchObject({ code: 'conflict' });
    expect(sim.mergeRequests()).toEqual([]);
  });

  test("forge errors: wrong base is forge_failed with GitHub's reason, unknown PR is not_found, the token never appears", async () => {
    const forge = forgeFor(sim);
    const err = await forge.openDraftPullRequest({ head: 'polly/t1', base: 'nope', title: 'x', body: '' }).catch((e: unknown) => e);
    expect(isPollyError(err, 'forge_failed')).toBe(true);
    expect((err as Error).message).toMatch(/422.*base branch nope does not exist/);
    expect((err as Error).message).not.toContain(TOKEN);
    await expect(forge.getPullRequest(999)).rejects.toMatchObject({ code: 'not_found' });
    expect(() => createGitHubForge({ owner: 'o', repo: 'r' })).toThrow(/no token/);
  });

  test('findings become one COMMENT review with line comments; GitHub refuses REQUEST_CHANGES from the PR author', async () => {
    const forge = forgeFor(sim);
    sim.setBranch('polly/t4', sha('f'));
    const pr = await forge.openDraftPullRequest({ head: 'polly/t4', base: 'main', title: 't4', body: '' });
    const own = await forge.postReview(pr.number, { event: 'REQUEST_CHANGES', body: 'no', comments: [] }).catch((e: unknown) => e);
    expect(own).toMatchObject({ code: 'forge_failed', message: expect.stringMatching(/422.*Can not request changes on your own pull request/) });
    const review = reviewFromFindings(
      { blocking: [{ file: 'src/a.ts', line: 2, message: 'crashes on empty input' }], nonBlocking: [{ file: 'src/a.ts', line: 99, message: 'outside the diff' }] },
      { reviewer: 'codex', round: 1, commentable: commentableLines('diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,3 @@\n one\n+two\n three\n') },
    );
    await forge.postReview(pr.number, review);
    const posted = sim.pulls.get(pr.number)!.reviews.at(-1)!;
    expect(posted.state).toBe('COMMENTED');
    expect(posted.comments).toMatchObject([{ path: 'src/a.ts', line: 2, side: 'RIGHT', body: markedBody('**Blocking** (codex, round 1): crashes on empty input') }]);
    expect(posted.body).toContain('1 blocking finding, 1 non-blocking');
    expect(posted.body).toContain('`src/a.ts:99` — Non-blocking (codex, round 1): outside the diff');
  });

  test('the simulator refuses and records merges (REST PUT …/merge, POST …/merges, GraphQL enablePullRequestAutoMerge) and forced or non-fast-forward ref updates (a separate client, not the forge)', async () => {
    // The file's simulator (one start costs seconds): new branches, and only what this test sends is counted.
    sim.setBranch('polly/m', sha('b'));
    sim.setBranch('feature', sha('b'));
    const [merges0, refused0, forced0] = [sim.mergeRequests().length, sim.refusedRequests().length, sim.forceUpdates().length];
    const main0 = sim.branchSha('main'); // moved by the human's squash merge above, never by a refused request
    const { Octokit } = await import('@octokit/rest');
    const raw = new Octokit({ baseUrl: sim.baseUrl, auth: TOKEN, log: { debug() {}, info() {}, warn() {}, error() {} } });
    const pr = await raw.rest.pulls.create({ owner: sim.owner, repo: sim.repo, head: 'polly/m', base: 'main', title: 'm' });
    expect(sim.mergeRequests().slice(merges0)).toEqual([]);
    const merge = await raw.rest.pulls.merge({ owner: sim.owner, repo: sim.repo, pull_number: pr.data.number }).catch((e: { status: number }) => e);
    expect((merge as { status: number }).status).toBe(403);
    expect(sim.pulls.get(pr.data.number)!).toMatchObject({ merged: false, state: 'open' }); // refused: nothing merged
    await raw.rest.repos.merge({ owner: sim.owner, repo: sim.repo, base: 'main', head: 'polly/m' }).catch(() => undefined);
    await raw.graphql('mutation($id: ID!) { enablePullRequestAutoMerge(input: {pullRequestId: $id}) { clientMutationId } }', { id: pr.data.node_id }).catch(() => undefined);
    expect(
      sim
        .mergeRequests()
        .slice(merges0)
        .map((r) => `${r.method} ${r.path} ${r.graphqlFields.join(',')}`.trim()),
    ).toEqual([`PUT /repos/${sim.owner}/${sim.repo}/pulls/${pr.data.number}/merge`, `POST /repos/${sim.owner}/${sim.repo}/merges`, 'POST /graphql enablePullRequestAutoMerge']);
    expect(sim.branchSha('main')).toBe(main0);
    // Ref updates: a fast-forward is served; a forced one and a non-fast-forward one are refused.
    sim.setBranch('polly/m', sha('c')); // the branch moves on: c's parent is b
    const ff = await raw.rest.git.updateRef({ owner: sim.owner, repo: sim.repo, ref: 'heads/feature', sha: sha('c') });
    expect(ff.status).toBe(200);
    const forced = await raw.rest.git.updateRef({ owner: sim.owner, repo: sim.repo, ref: 'heads/polly/m', sha: sha('c'), force: true }).catch((e: { status: number }) => e);
    const back = await raw.rest.git.updateRef({ owner: sim.owner, repo: sim.repo, ref: 'heads/polly/m', sha: sha('b') }).catch((e: { status: number }) => e);
    expect([(forced as { status: number }).status, (back as { status: number }).status]).toEqual([403, 403]);
    expect(
      sim
        .forceUpdates()
        .slice(forced0)
        .map((r) => r.body),
    ).toEqual([{ sha: sha('c'), force: true }, { sha: sha('b') }]);
    expect(sim.branchSha('polly/m')).toBe(sha('c'));
    expect(sim.refusedRequests().slice(refused0)).toHaveLength(5);
  });

  test("the simulator refuses a request that breaks the OpenAPI description (so the forge's requests are checked)", async () => {
    const res = await fetch(`${sim.baseUrl}/repos/${sim.owner}/${sim.repo}/pulls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ head: 42, draft: 'yes' }),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toMatch(/must have required property 'base'|must be string/);
  });
});

/**
 * Rate limits are the client's plugins (`github-client.ts`, the same Octokit as the PR watcher).
 * The simulator's clock is the real time plus an offset, so that `x-ratelimit-reset` means to the
 * plugin (which reads `Date.now()`) what it means on GitHub; GitHub's seconds run as milliseconds
 * (`retryAfterBaseValue: 1`), and every wait the plugin takes moves the simulator's clock on by as
 * many seconds (`onWait`).
 */
describe('rate limits (the throttling and retry plugins)', () => {
  // One simulator for both tests (a start costs seconds); each test has its own forge, head branch and waits.
  let offset = 0;
  const clock = { now: () => Date.now() + offset, advance: (ms: number) => void (offset += ms) };
  let sim: GitHubSimulator;
  beforeAll(async () => {
    sim = await startGitHubSimulator({
      clock,
      rateLimit: 1000,
      branches: { main: sha('a'), 'polly/x': sha('b'), 'polly/y': sha('c'), 'polly/z1': sha('d'), 'polly/z2': sha('e') },
    });
  });
  afterAll(async () => {
    await sim?.close();
  });
  const limited = (maxWaitMs?: number) => {
    const waits: RateLimitWait[] = [];
    const forge = createGitHubForge({
      owner: sim.owner,
      repo: sim.repo,
      token: TOKEN,
      baseUrl: sim.baseUrl,
      retryAfterBaseValue: 1,
      ...(maxWaitMs !== undefined ? { maxWaitMs } : {}),
      onWait: (w) => {
        waits.push(w);
        clock.advance(w.retryAfterSeconds * 1000);
      },
    });
    return { waits, forge };
  };

  test('a 403 with x-ratelimit-remaining 0 waits until x-ratelimit-reset, a 429 with retry-after waits that long; then retries', async () => {
    const { waits, forge } = limited();
    const pr = await forge.openDraftPullRequest({ head: 'polly/x', base: 'main', title: 'x', body: '' });
    const from = sim.requests.length;
    const reset = sim.rateLimit().reset;
    sim.failNext({ status: 403, exhausted: true });
    expect((await forge.getPullRequest(pr.number)).number).toBe(pr.number);
    expect(waits[0]).toMatchObject({ kind: 'primary', retried: true, retryCount: 0 });
    const get = sim.requests.slice(from).filter((r) => r.method === 'GET');
    expect(get.map((r) => r.status)).toEqual([403, 200]);
    expect(get[1]!.at).toBeGreaterThanOrEqual(reset * 1000); // the retry went out after the reset, nothing during the wait

    sim.failNext({ status: 429, retryAfterSeconds: 30 });
    const t1 = clock.now();
    await forge.comment(pr.number, 'after a secondary limit');
    expect(waits[1]).toMatchObject({ kind: 'secondary', retryAfterSeconds: 30, retried: true });
    expect(clock.now() - t1).toBeGreaterThanOrEqual(30_000);
    expect(forge.stats()).toMatchObject({ waits: 2 });
    expect(sim.pulls.get(pr.number)!.comments.map((c) => c.body)).toEqual([markedBody('after a secondary limit')]); // posted once
  });

  test('a plain 403 (no rate-limit headers) fails at once; a reset too far away fails with the wait named instead of hanging', async () => {
    const { waits, forge } = limited(10_000);
    const pr = await forge.openDraftPullRequest({ head: 'polly/y', base: 'main', title: 'y', body: '' });
    sim.failNext({ status: 403, retryAfterSeconds: 3600 });
    await expect(forge.comment(pr.number, 'x')).rejects.toMatchObject({ code: 'forge_failed', message: expect.stringMatching(/3600 s away, longer than the 10 s Polly waits/) });
    const before = sim.requests.length;
    sim.failNext({ status: 403 });
    await expect(forge.comment(pr.number, 'y')).rejects.toMatchObject({ code: 'forge_failed', message: expect.stringMatching(/\(403\): API rate limit exceeded/) });
    expect(sim.requests.length - before).toBe(1); // not retried: no header says when
    expect(waits).toEqual([]);
    expect(sim.pulls.get(pr.number)!.comments).toEqual([]);
  });

  test('writes that notify are 3 GitHub seconds apart: 3 s by default, scaled by retryAfterBaseValue (the other tests run them in ms)', async () => {
    const notifying = (from: number) => sim.requests.slice(from).filter((r) => r.method === 'POST' && /\/(pulls|comments)$/.test(r.path));
    const gaps = async (forge: ReturnType<typeof createGitHubForge>, head: string) => {
      const from = sim.requests.length;
      const pr = await forge.openDraftPullRequest({ head, base: 'main', title: head, body: '' });
      await forge.comment(pr.number, 'one');
      const posts = notifying(from);
      expect(posts.map((r) => r.path)).toEqual([`/repos/${sim.owner}/${sim.repo}/pulls`, `/repos/${sim.owner}/${sim.repo}/issues/${pr.number}/comments`]);
      return posts[1]!.at - posts[0]!.at;
    };
    // GitHub's advice for mutations, kept by the throttling plugin's own queues in Polly.
    const byDefault = await gaps(createGitHubForge({ owner: sim.owner, repo: sim.repo, token: TOKEN, baseUrl: sim.baseUrl }), 'polly/z1');
    expect(byDefault).toBeGreaterThanOrEqual(2_900);
    const scaled = await gaps(createGitHubForge({ owner: sim.owner, repo: sim.repo, token: TOKEN, baseUrl: sim.baseUrl, retryAfterBaseValue: 5 }), 'polly/z2');
    expect(scaled).toBeGreaterThanOrEqual(14);
    expect(scaled).toBeLessThan(2_900);
  });
});

describe('orchestration case 11: watching 20 PRs for an hour stays inside a fixed budget', () => {
  test('ETags make unchanged polls free; 5 human merges are each noticed within one interval', async () => {
    const { watchForMerges } = await import('../../../brain/forge/merge-detection.js');
    const clock = createFakeClock();
    const branches: Record<string, string> = { main: sha('a') };
    for (let i = 1; i <= 20; i++) branches[`polly/w${i}`] = i.toString(16).padStart(40, '0');
    // The fixed budget: 300 requests per hour in all. Without conditional requests 20 PRs polled
    // every minute would use it up in a quarter of an hour (1,200 requests an hour).
    const sim = await startGitHubSimulator({ clock, rateLimit: 300, branches });
    try {
      const forge = createGitHubForge({ owner: sim.owner, repo: sim.repo, token: TOKEN, baseUrl: sim.baseUrl, retryAfterBaseValue: 5 });
      const numbers: number[] = [];
      // Opened without API requests (the forge's writes are a second apart, GitHub's advice for mutations: 20 s here otherwise).
      for (let i = 1; i <= 20; i++) numbers.push(sim.humanOpenPull({ login: 'polly-operator', head: `polly/w${i}`, base: 'main', title: `w${i}` }));
      const start = clock.now();
      const from = sim.requests.length;
      // The human merges five PRs during the hour.
      const humanMerges = new Map<number, number>(
        [
          [numbers[2]!, 7],
          [numbers[5]!, 19],
          [numbers[9]!, 33],
          [numbers[14]!, 48],
          [numbers[19]!, 58],
        ].map(([n, min]) => [n!, start + min! * 60_000 + 15_000]),
      );
      const mergedAt = new Map<number, number>();
      const watchClock = {
        now: clock.now,
        async sleep(ms: number) {
          await clock.sleep(ms);
          for (const [n, at] of humanMerges)
            if (at <= clock.now() && !mergedAt.has(n)) {
              sim.humanMerge(n, 'squash');
              mergedAt.set(n, at);
            }
        },
      };
      const noticed = new Map<number, number>();
      const last = await watchForMerges(forge, numbers, {
        clock: watchClock,
        intervalMs: 60_000,
        durationMs: 3_600_000,
        onChange: (info) => void (info.state === 'merged' && noticed.set(info.number, clock.now())),
      });
      const during = sim.requests.slice(from);
      const charged = during.filter((r) => r.charged).length;
      const notModified = during.filter((r) => r.status === 304).length;
      // Budget: a PR's body changes when it is opened (GitHub answers \`mergeable: null\` first and
      // the computed value on the next read) and whenever its base moves (base.sha, mergeability
      // recomputed): two charged GETs per open PR per change, one for the merged PR itself. Every
      // other poll is a 304: charges happen only in the two rounds after a change.
      const minute = (at: number) => Math.floor((at - start) / 60_000);
      const chargedMinutes = new Set(during.filter((r) => r.charged).map((r) => minute(r.at)));
      const changeMinutes = new Set([0, 1, ...[...humanMerges.values()].flatMap((at) => [minute(at) + 1, minute(at) + 2])]);
      expect([...chargedMinutes].filter((m) => !changeMinutes.has(m))).toEqual([]);
      expect(charged).toBeLessThanOrEqual(20 * 2 + 5 * (19 * 2 + 1));
      expect(during.length).toBeGreaterThan(1000); // it really polled every PR every minute
      expect(notModified).toBe(during.length - charged);
      expect(during.filter((r) => r.status === 403 || r.status === 429)).toEqual([]);
      expect(forge.stats().waits).toBe(0);
      expect(clock.now() - start).toBeLessThanOrEqual(3_600_000);
      expect([...noticed.keys()].sort((a, b) => a - b)).toEqual([...humanMerges.keys()].sort((a, b) => a - b));
      for (const [n, at] of mergedAt) expect(noticed.get(n)! - at).toBeLessThanOrEqual(60_000);
      expect([...last.values()].filter((p) => p.state === 'merged')).toHaveLength(5);
      expect(sim.rateLimit().remaining).toBeGreaterThan(0);
      expect(sim.mergeRequests()).toEqual([]);
    } finally {
      await sim.close();
    }
  });
});

test('parseGitHubRemote reads owner/repo from the usual remote URL forms', () => {
  expect(parseGitHubRemote('https://github.com/octo-org/demo.git')).toEqual({ owner: 'octo-org', repo: 'demo' });
  expect(parseGitHubRemote('git@github.com:octo-org/demo.git')).toEqual({ owner: 'octo-org', repo: 'demo' });
  expect(parseGitHubRemote('ssh://git@github.com/octo-org/demo')).toEqual({ owner: 'octo-org', repo: 'demo' });
  expect(parseGitHubRemote('https://ghe.example.com/a/b.git', 'ghe.example.com')).toEqual({ owner: 'a', repo: 'b' });
  expect(parseGitHubRemote('/tmp/origin.git')).toBeNull();
  expect(parseGitHubRemote('https://gitlab.com/a/b.git')).toBeNull();
});
