/**
 * The forge contract: no merge method of any kind (checked by the TypeScript compiler and at run
 * time, for every implementation), forge selection, the findings schema and the PR body.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { DEFAULT_CONFIG, type PollyConfig } from '../../../brain/config/config-schema.js';
import { mergeLikeMethodNames } from '../../../brain/forge/forge.js';
import { githubEndpoint, openForge, selectForge } from '../../../brain/forge/forge-select.js';
import { createGitHubForge } from '../../../brain/forge/github-forge.js';
import { redactToken, resolveGitHubToken } from '../../../brain/forge/github-token.js';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { renderPrBody } from '../../../brain/forge/pr-body.js';
import { createMemoryRegistryStore } from '../../../brain/registry/registry-store.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { createTestRepo } from '../../helpers/git-repo.js';
import { REVIEW_FINDINGS_JSON_SCHEMA, commentableLines, parseFindings, reviewFromFindings, validateFindings } from '../../../workers/review-findings.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('no merge method, anywhere', () => {
  test('at run time: no property of either forge matches /merge/i, and "merge" in forge is false', () => {
    const forges = [
      createGitHubForge({ owner: 'o', repo: 'r', token: 'ghp_x', baseUrl: 'http://127.0.0.1:9' }),
      createLocalForge({ repoRoot: tmpdir(), store: createMemoryRegistryStore() }),
    ];
    for (const forge of forges) {
      expect(mergeLikeMethodNames(forge)).toEqual([]);
      expect('merge' in forge).toBe(false);
      expect(Object.keys(forge).sort()).toEqual(
        expect.arrayContaining(['comment', 'getPullRequest', 'kind', 'listPullRequests', 'markReady', 'openDraftPullRequest', 'postReview']),
      );
    }
    // The runtime check can fail:
    expect(mergeLikeMethodNames({ ...forges[1]!, enableAutoMerge() {} })).toEqual(['enableAutoMerge']);
  });

  test('at compile time: the compiler rejects forge.merge(…) and any merge-like key; both implementations assert it in their source', () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-forge-types-'));
    const file = join(dir, 'check.ts');
    const lines = [
      `import type { Forge, NoMergeKeys } from ${JSON.stringify(join(ROOT, 'brain/forge/forge.js'))};`,
      'export const a: NoMergeKeys<Forge> = true;',
      'export function f(x: Forge) {',
      '  x.merge(1);', // line 4: error
      '  x.mergePullRequest(1);', // line 5: error
      "  return 'merge' in x;",
      '}',
      'export const d: NoMergeKeys<Forge & { enableAutoMerge(): void }> = true;', // line 8: error (the check can fail)
      'export const e: NoMergeKeys<Forge & { MERGE: number }> = true;', // line 9: error (any letter case)
    ];
    writeFileSync(file, lines.join('\n'));
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === file);
    // 2339/2551: property does not exist (on type Forge); 2322: `true` is not assignable to `false`.
    const at = diagnostics.map((d) => `${d.file!.getLineAndCharacterOfPosition(d.start!).line + 1}:${d.code === 2551 ? 2339 : d.code}`).sort();
    expect(at).toEqual(['4:2339', '5:2339', '8:2322', '9:2322']);
    // Each implementation asserts the same type on the object it returns; \`tsc -p .\` (the build) checks it.
    for (const impl of ['brain/forge/github-forge.ts', 'brain/forge/local-forge.ts']) {
      expect(readFileSync(join(ROOT, impl), 'utf8')).toMatch(/const noMerge: NoMergeKeys<typeof forge> = true;/);
    }
  });
});

describe('forge selection', () => {
  const cfg = (kind: PollyConfig['forge']['kind'], base_url: string | null = null): PollyConfig['forge'] => ({
    kind,
    github: { base_url, watch_seconds: 60, trusted_authors: [] },
  });

  test('auto: GitHub for a github.com origin, local otherwise', () => {
    expect(selectForge(cfg('auto'), 'git@github.com:octo-org/demo.git')).toMatchObject({ kind: 'github', owner: 'octo-org', repo: 'demo', baseUrl: 'https://api.github.com' });
    expect(selectForge(cfg('auto'), '/tmp/x/origin.git')).toMatchObject({ kind: 'local', reason: expect.stringContaining('not on github.com') });
    expect(selectForge(cfg('auto'), null)).toMatchObject({ kind: 'local', reason: 'no origin remote' });
    expect(selectForge(DEFAULT_CONFIG.forge, 'https://github.com/a/b')).toMatchObject({ kind: 'github' });
  });

  test('config wins: local even on GitHub; github with an Enterprise base_url; github without a GitHub origin is config_invalid', () => {
    expect(selectForge(cfg('local'), 'https://github.com/a/b.git').kind).toBe('local');
    expect(selectForge(cfg('github', 'https://ghe.example.com/api/v3/'), 'https://ghe.example.com/team/app.git')).toMatchObject({
      kind: 'github',
      owner: 'team',
      repo: 'app',
      baseUrl: 'https://ghe.example.com/api/v3',
      host: 'ghe.example.com',
    });
    expect(() => selectForge(cfg('github'), '/srv/origin.git')).toThrow(expect.objectContaining({ code: 'config_invalid' }));
    expect(() => githubEndpoint('not a url')).toThrow(expect.objectContaining({ code: 'config_invalid' }));
  });
});

describe('openForge on a real repository', () => {
  test('a bare-repo origin gives the local forge; a github.com origin with GITHUB_TOKEN gives the GitHub forge', async () => {
    const repo = createTestRepo();
    const store = createMemoryRegistryStore();
    const git = createGitRunner({ env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } });
    const local = await openForge({ repoRoot: repo.dir, config: DEFAULT_CONFIG, store, git, env: {} });
    expect(local.forge.kind).toBe('local');
    expect(local.selection.reason).toContain('is not on github.com');
    repo.git(['remote', 'set-url', 'origin', 'https://github.com/octo-org/demo.git']);
    const gh = await openForge({ repoRoot: repo.dir, config: DEFAULT_CONFIG, store, git, env: { GITHUB_TOKEN: 'ghp_test' } });
    expect(gh.forge.kind).toBe('github');
    expect(gh.selection).toMatchObject({ kind: 'github', owner: 'octo-org', repo: 'demo', reason: 'origin is on github.com' });
    repo.git(['remote', 'remove', 'origin']);
    expect((await openForge({ repoRoot: repo.dir, config: DEFAULT_CONFIG, store, git, env: {} })).selection.reason).toBe('no origin remote');
  });
});

describe('GitHub token', () => {
  test('GITHUB_TOKEN wins; without it and without gh the error says what to do and holds no token', async () => {
    expect(await resolveGitHubToken({ env: { GITHUB_TOKEN: ' ghp_abc123 ' } })).toEqual({ token: 'ghp_abc123', source: 'GITHUB_TOKEN' });
    const err = await resolveGitHubToken({ env: { PATH: '/nonexistent' }, ghBinary: '/nonexistent/gh' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'forge_failed', message: expect.stringMatching(/GITHUB_TOKEN.*gh auth login.*forge\.kind: local/s) });
  });

  test('gh auth token is used when GITHUB_TOKEN is unset (a real script standing in for gh)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-gh-'));
    const gh = join(dir, 'gh');
    writeFileSync(gh, '#!/bin/sh\n[ "$1 $2" = "auth token" ] && echo gho_fromGhCli0123456789abcdefXYZ && exit 0\nexit 1\n', { mode: 0o755 });
    expect(await resolveGitHubToken({ env: { PATH: process.env.PATH }, ghBinary: gh })).toEqual({ token: 'gho_fromGhCli0123456789abcdefXYZ', source: 'gh auth token' });
  });

  test('redactToken removes the given token, token-shaped strings and Authorization values', () => {
    const text = 'fetch failed: Authorization: token s3cr3t-value; also ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123 and github_pat_11ABCDEFG0123456789_abcdefghijkl, and plain s3cr3t-value';
    const out = redactToken(text, 's3cr3t-value');
    expect(out).not.toMatch(/s3cr3t|ghp_A|github_pat_1/);
    expect(out.match(/\[REDACTED\]/g)!.length).toBeGreaterThanOrEqual(4);
  });
});

describe('review findings', () => {
  test("extracts the JSON from an agent's final text (fenced or bare), last block first", () => {
    const text = [
      'I looked at the diff. An example of the format is {"blocking": [], "non_blocking": []}.',
      '```json',
      '{"blocking": [{"file": "src/a.ts", "line": 3, "message": "null deref when {x} is empty"}], "non_blocking": []}',
      '```',
    ].join('\n');
    expect(parseFindings(text)).toEqual({ blocking: [{ file: 'src/a.ts', line: 3, message: 'null deref when {x} is empty' }], nonBlocking: [] });
    expect(parseFindings('Done. {"blocking": [], "non_blocking": [{"file": "README.md", "line": 1, "message": "typo"}]}')).toEqual({
      blocking: [],
      nonBlocking: [{ file: 'README.md', line: 1, message: 'typo' }],
    });
  });

  test('errors name what is wrong', () => {
    expect(() => parseFindings('no json here')).toThrow(expect.objectContaining({ code: 'bad_input', message: expect.stringMatching(/no JSON object/) }));
    expect(() => parseFindings('{"verdict": "ok"}')).toThrow(/neither "blocking" nor "non_blocking"/);
    expect(() => parseFindings('{"blocking": [{"file": "a", "line": 0, "message": ""}], "nonblocking": []}')).toThrow(
      /blocking\[0\]\.line: line must be >= 1.*blocking\[0\]\.message: message must not be empty.*non_blocking: Required.*nonblocking/s,
    );
    expect(() => validateFindings({ blocking: [{ file: 'a', line: 1.5, message: 'm', extra: 1 }], non_blocking: [] })).toThrow(/line must be an integer.*extra/s);
    expect(REVIEW_FINDINGS_JSON_SCHEMA.required).toEqual(['blocking', 'non_blocking']);
  });
});

describe('findings → review', () => {
  test('commentableLines: added and context lines of each hunk, new-side numbering; deleted files have none', () => {
    const diff = [
      'diff --git a/src/a.ts b/src/a.ts',
      'index 1..2 100644',
      '--- a/src/a.ts',
      '+++ b/src/a.ts',
      '@@ -10,3 +10,4 @@ function x() {',
      ' keep',
      '-old',
      '+new1',
      '+new2',
      ' keep2',
      'diff --git a/gone.txt b/gone.txt',
      'deleted file mode 100644',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-bye',
      'diff --git a/n.txt b/n.txt',
      '--- /dev/null',
      '+++ b/n.txt',
      '@@ -0,0 +1,2 @@',
      '+a',
      '+b',
      '\\ No newline at end of file',
    ].join('\n');
    const lines = commentableLines(diff);
    expect([...lines.keys()]).toEqual(['src/a.ts', 'n.txt']);
    expect([...lines.get('src/a.ts')!]).toEqual([10, 11, 12, 13]);
    expect([...lines.get('n.txt')!]).toEqual([1, 2]);
  });

  test('reviewFromFindings: always COMMENT (the PR author cannot request changes), blocking marked, verdict in the body', () => {
    const r = reviewFromFindings({ blocking: [], nonBlocking: [{ file: 'a', line: 1, message: 'nit' }] }, { reviewer: 'pi', round: 2 });
    expect(r).toEqual({
      event: 'COMMENT',
      body: 'Cross-review by `pi`, round 2: no blocking findings, 1 non-blocking.',
      comments: [{ path: 'a', line: 1, body: 'Non-blocking (pi, round 2): nit' }],
    });
    expect(reviewFromFindings({ blocking: [{ file: 'a', line: 3, message: 'bug' }], nonBlocking: [] }, { reviewer: 'codex', round: 1 }).comments[0]!.body).toBe(
      '**Blocking** (codex, round 1): bug',
    );
  });
});

describe('PR body', () => {
  test("task, acceptance contract, Polly's check results and the review findings, as markdown", () => {
    const body = renderPrBody({
      taskId: 't1',
      title: 'Add --verbose',
      worker: 'claude-code',
      prompt: 'Add a --verbose flag.\nUse ```fences``` freely.',
      acceptance: { commands: ['npm test', 'npx tsc -p . --noEmit'], criteria: ['--verbose prints each step'] },
      checks: [
        { command: 'npm test', exitCode: 0, timedOut: false, durationMs: 12_340, output: 'ok' },
        { command: 'npx tsc -p . --noEmit', exitCode: 2, timedOut: false, durationMs: 3_000, output: 'a.ts(1,1): error TS2304' },
      ],
      reviews: [
        { reviewer: 'codex', round: 1, blocking: [{ file: 'src/cli.ts', line: 7, message: 'flag | not parsed' }], nonBlocking: [], at: '2026-11-29T00:00:00Z' },
        { reviewer: 'codex', round: 2, blocking: [], nonBlocking: [{ file: 'README.md', line: 2, message: 'document it' }], at: '2026-11-29T01:00:00Z' },
      ],
    });
    expect(body).toContain('## Task t1: Add --verbose');
    expect(body).toContain('````text\nAdd a --verbose flag.\nUse ```fences``` freely.\n````');
    expect(body).toContain('- --verbose prints each step');
    expect(body).toContain('| `npm test` | ✅ passed | 12.3 s |');
    expect(body).toContain('| `npx tsc -p . --noEmit` | ❌ exit 2 | 3.0 s |');
    expect(body).toMatch(/<details><summary>output of npx tsc -p \. --noEmit<\/summary>\n\n```\na\.ts\(1,1\): error TS2304\n```/);
    expect(body).toContain('### Round 1 by `codex`: 1 blocking');
    expect(body).toContain('- `src/cli.ts:7` — flag \\| not parsed');
    expect(body).toContain('### Round 2 by `codex`: no blocking findings');
    expect(body).toContain('Polly never merges');
  });
});
