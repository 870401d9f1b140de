/**
 * Real input, end to end: Polly changes a repository no one here wrote.
 *
 * The package: **@fastify/error@4.3.0** (npm, MIT, by the Fastify team; tarball sha256
 * 7980a744147a40ec297d746481377cc5b227fb567376e723a3cfd15d04bf6c0a, npm's sha1
 * 7bb7148a82edf76e4a62e9d595b808764859a7a2). Why this one:
 * - small and real: one 130-line index.js used by Fastify itself, with users in the millions;
 * - its published tarball carries its own test suite (test/index.test.js, instanceof.test.js,
 *   rfc9457.test.js: 36 tests);
 * - the tests run offline with plain node: they use only node:test and node built-ins, and the
 *   package has no runtime dependencies. Its `test:unit` script is `c8 --100 node --test`; c8
 *   (coverage) is a devDependency we avoid, so the acceptance command is the `node --test` inside it.
 *
 * The test fetches the tarball with `npm pack` through test/helpers/real-projects.ts (cached
 * outside the repository and re-verified; no network or another checksum → the test FAILS saying
 * so), unpacks it into a fresh git repo with a bare origin (real
 * git, scrubbed env), runs `polly init`, points the workers at the scripted model server, and runs
 * `polly run` on a one-task plan (test/fixtures/real-package/): Claude Code (scripted) makes
 * createError() reject a non-string code with a TypeError (it crashed in `code.toUpperCase` before)
 * and adds one test; Polly runs the package's own tests; pi reviews; the PR is marked ready.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopTrackedBrains, trackBrains } from '../helpers/brain-cleanup.js';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, gitTestEnv } from '../helpers/git-repo.js';
import { parseModelScript } from '../../scripts/scripted-model/script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripts/scripted-model/server.js';
import { useScriptedModels } from '../../scripts/scripted-model/configure.js';
import type { Registry } from '../../brain/registry/registry-schema.js';
import { expectRunsConform } from '../helpers/trace-conformance.js';
import { fetchNpmPackage, unpackNpmPackage } from '../helpers/real-projects.js';
import { hasSystemPackage } from '../helpers/system-packages.js';

// Dispatches workers through Polly's sandbox: skipped and listed without bubblewrap, a failure under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

const PACKAGE = '@fastify/error';
const VERSION = '4.3.0';
/** SHA-256 of the published tarball (`npm pack @fastify/error@4.3.0 && sha256sum fastify-error-4.3.0.tgz`). */
const SHA256 = '7980a744147a40ec297d746481377cc5b227fb567376e723a3cfd15d04bf6c0a';
/** The package's own test runner without its coverage wrapper (see the module doc). */
const ACCEPTANCE = 'node --test';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = join(ROOT, 'dist', 'brain', 'cli.js');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'real-package');

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command without blocking the event loop (the scripted model server lives in this process). */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as NodeJS.ErrnoException).code === 'number' ? (error as unknown as { code: number }).code : null) : 0;
      done({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr });
    });
  });
}

/** `# tests N` / `# pass N` / `# fail N` of node:test's TAP summary. */
function tapSummary(output: string): { tests: number; pass: number; fail: number } {
  const num = (key: string) => {
    const m = new RegExp(`^# ${key} (\\d+)$`, 'm').exec(output);
    return m ? Number(m[1]) : Number.NaN;
  };
  return { tests: num('tests'), pass: num('pass'), fail: num('fail') };
}

describe.skipIf(!SANDBOXED)(`polly run on a real package (${PACKAGE}@${VERSION}, fetched with npm pack, pinned sha256)`, () => {
  let root = '';
  let repo = '';
  let origin = '';
  let initialMain = '';
  let pristineTests = 0;
  let server: ScriptedModelServer | null = null;
  let result: Ran = { code: null, stdout: '', stderr: '' };

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-real-package-')));
    const env = gitTestEnv();

    // 1. The published tarball (cached outside the repository). No network is a failure, not a skip.
    const tarball = await fetchNpmPackage({ name: PACKAGE, version: VERSION, sha256: SHA256 });

    // 2. Its source as a fresh git repo with a bare origin.
    repo = join(root, 'repo');
    trackBrains(repo);
    await unpackNpmPackage(tarball, repo);
    origin = join(root, 'origin.git');
    git(root, ['init', '-q', '--bare', '-b', 'main', origin]);
    git(repo, ['init', '-q', '-b', 'main']);
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-q', '-m', `${PACKAGE}@${VERSION} as published on npm`]);
    git(repo, ['remote', 'add', 'origin', origin]);
    git(repo, ['push', '-q', '-u', 'origin', 'main']);
    initialMain = git(repo, ['rev-parse', 'HEAD']);

    // The package's own suite on the pristine source: how many tests it has before the change.
    const pristine = await run(process.execPath, ['--test'], repo, env, 60_000);
    expect(pristine.code, `the pristine package's own tests must pass:\n${pristine.stdout}\n${pristine.stderr}`).toBe(0);
    pristineTests = tapSummary(pristine.stdout).tests;
    expect(pristineTests).toBeGreaterThan(0);

    // 3. polly init, the scripted models, polly run.
    const init = await run(process.execPath, [CLI, 'init'], repo, env, 30_000);
    expect(init.code, `polly init failed:\n${init.stderr}`).toBe(0);
    server = await startScriptedModelServer({ script: parseModelScript(readFileSync(join(FIXTURES, 'workers-script.yaml'), 'utf8'), 'workers-script.yaml') });
    // polly init fits worktrees.setup to the package (npm install of its devDependencies: c8, tsd, …);
    // the acceptance command here is plain `node --test`, so no install is needed in the worktree.
    const modelEnv = useScriptedModels(repo, server.url, { extra: [[['worktrees', 'setup'], null]] });
    const plan = join(root, 'plan.yaml');
    copyFileSync(join(FIXTURES, 'plan.yaml'), plan);
    result = await run(process.execPath, [CLI, 'run', plan, '--yes', '--json'], repo, { ...env, ...modelEnv }, 150_000);
  }, 240_000);

  afterAll(async () => {
    await server?.close();
    // The Brain polly run started exits when idle; if it has not yet (a failed test), end it and its workers.
    await stopTrackedBrains();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const registry = (): Registry => JSON.parse(readFileSync(join(repo, '.polly', 'registry.json'), 'utf8')) as Registry;
  const theTask = () => {
    const tasks = Object.values(registry().tasks);
    expect(tasks).toHaveLength(1);
    return tasks[0]!;
  };
  const originGit = (args: string[]) => git(root, ['--git-dir', origin, ...args]);

  it('every run replays through the admitted workflow it ran under', async () => {
    expect(await expectRunsConform(repo)).toBeGreaterThanOrEqual(2);
  });

  it('polly run exits 0 with the one task ready', () => {
    expect(result.code, `polly run failed:\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
    const out = JSON.parse(result.stdout) as { admitted: boolean; status: string; tasks: unknown[] };
    expect(out.admitted).toBe(true);
    expect(out.status).toBe('done');
    expect(out.tasks).toHaveLength(1);
    expect(theTask().status).toBe('ready');
  });

  it("ran the package's own tests, plus the new one, as the acceptance command, green", () => {
    const task = theTask();
    expect(task.acceptance.commands).toEqual([ACCEPTANCE]);
    expect(task.checks.map((c) => [c.command, c.exitCode, c.timedOut])).toEqual([[ACCEPTANCE, 0, false]]);
    const summary = tapSummary(task.checks[0]!.output);
    expect(summary, task.checks[0]!.output).toEqual({ tests: pristineTests + 1, pass: pristineTests + 1, fail: 0 });
  });

  it('pushed polly/<task> to the bare origin with exactly one new commit carrying the real change', () => {
    const task = theTask();
    expect(task.branch).toBe(`polly/${task.id}`);
    const tip = originGit(['rev-parse', `refs/heads/${task.branch}`]);
    expect(tip).toBe(task.headCommit);
    expect(originGit(['rev-list', '--count', `main..${task.branch}`])).toBe('1');
    expect(originGit(['rev-parse', `${tip}^`])).toBe(initialMain);
    expect(originGit(['log', '-1', '--format=%B', tip])).toContain(`Polly-Task: ${task.id}`);
    expect(originGit(['diff', '--name-status', initialMain, tip]).split('\n').sort()).toEqual(['A\ttest/code-type.test.js', 'M\tindex.js']);
    expect(originGit(['show', `${tip}:index.js`])).toContain("if (typeof code !== 'string') throw new TypeError(");
    // The review went to another vendor and found nothing blocking.
    expect(task.reviews.map((r) => [r.reviewer, r.blocking.length])).toEqual([['pi', 0]]);
  });

  it('the real claude and pi CLIs played the scripted sessions of the implementer and the reviewer', () => {
    const served = new Set(server!.requests.map((r) => r.session).filter((s) => s !== null));
    expect([...served].sort()).toEqual(['implement-non-string-code', 'review-non-string-code']);
  });

  it('opened the local PR and marked it ready', async () => {
    const task = theTask();
    const list = await run(process.execPath, [CLI, 'pr', 'list', '--json'], repo, gitTestEnv(), 30_000);
    expect(list.code, list.stderr).toBe(0);
    const prs = JSON.parse(list.stdout) as Array<{ number: number; state: string; head: string; base: string; headCommit: string; taskId: string | null }>;
    expect(prs.map((p) => ({ state: p.state, head: p.head, base: p.base, headCommit: p.headCommit, taskId: p.taskId }))).toEqual([
      { state: 'ready', head: task.branch, base: 'main', headCommit: task.headCommit, taskId: task.id },
    ]);
    expect(task.pr?.state).toBe('ready');
    expect(task.pr?.number).toBe(prs[0]!.number);
  });

  it('left main on the origin unchanged (Polly never merges)', () => {
    expect(originGit(['rev-parse', 'refs/heads/main'])).toBe(initialMain);
    expect(originGit(['rev-list', '--count', 'main'])).toBe('1');
    expect(originGit(['branch', '--format=%(refname:short)']).split('\n').sort()).toEqual(['main', theTask().branch]);
  });
});
