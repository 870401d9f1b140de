/**
 * The secret scan before Polly commits or pushes, on real repositories. The planted
 * secrets are made at run time (a real RSA private key from node:crypto, tokens assembled from
 * parts), so no secret is stored in this repository.
 */
import { generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalForge } from '../../../brain/forge/local-forge.js';
import { createPushTool } from '../../../brain/task-tools/push.js';
import { runAcceptanceTool } from '../../../brain/task-tools/run-acceptance.js';
import { createGitRunner } from '../../../workers/git/git.js';
import { describeFindings, scanForSecrets } from '../../../workers/git/secret-scan.js';
import { commitIn, createGreenTask, createPrStepSetting, noAgents, testConfig, toolRunner } from '../../helpers/pr-step-fixture.js';
import { createTestRepo, git, gitTestEnv } from '../../helpers/git-repo.js';

const ALNUM = 'aZ0bY1cX2dW3eV4fU5gT6hS7iR8jQ9kPlOmNnMoLpKqJrIsHtGuFvEwDxCyBzA';
const spread = (n: number, seed: number) => Array.from({ length: n }, (_, i) => ALNUM[(i * 7 + seed * 13 + 3) % ALNUM.length]).join('');
const GITHUB_TOKEN = ['gh', 'p_', spread(36, 1)].join('');
const AWS_SECRET = spread(40, 5);
const privateKey = () =>
  generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }).privateKey;

describe('secret scan', () => {
  it("reads no file a worker's symlink points to (a token file outside the worktree, Polly's own /proc/self/environ), and waits on no FIFO: a link is scanned as the text git commits", async () => {
    const repo = createTestRepo();
    try {
      const outside = join(repo.root, 'outside');
      mkdirSync(outside);
      writeFileSync(join(outside, 'hosts.yml'), `github.com:\n  oauth_token: ${GITHUB_TOKEN}\n`);
      execFileSync('mkfifo', [join(outside, 'pipe')]);
      symlinkSync(join(outside, 'hosts.yml'), join(repo.dir, 'notes.txt'));
      symlinkSync('/proc/self/environ', join(repo.dir, 'environ.txt'));
      symlinkSync(join(outside, 'pipe'), join(repo.dir, 'pipe.txt'));
      execFileSync('mkfifo', [join(repo.dir, 'fifo.txt')]);
      const head = git(repo.dir, ['rev-parse', 'HEAD']);
      const scan = await scanForSecrets({ git: createGitRunner({ baseEnv: gitTestEnv() }), cwd: repo.dir, base: head, head: null });
      // Followed, notes.txt was found holding a GitHub token (measured before the fix).
      expect(scan.findings).toEqual([]);
      // The three links were scanned as their target text; the FIFO was left alone.
      expect(scan.scanned).toBe(3);
    } finally {
      rmSync(repo.root, { recursive: true, force: true });
    }
  });

  it("finds a GitHub token, an AWS secret key and a private key in the task's changes, with file:line, masked; ignores secrets already on the base", async () => {
    const s = createPrStepSetting({ 'src/config.js': 'export const a = 1;\n', 'fixtures/old.env': `OLD_TOKEN=${GITHUB_TOKEN.replace('p_', 'o_')}\n` });
    const task = await createGreenTask(s, 'sc1', { 'README.md': '# r\n' });
    const wt = task.worktree!;
    writeFileSync(join(wt, 'src/config.js'), `export const a = 1;\n\nexport const token = "${GITHUB_TOKEN}";\n`);
    writeFileSync(join(wt, '.env.production'), `# deploy\nAWS_SECRET_ACCESS_KEY=${AWS_SECRET}\n`);
    mkdirSync(join(wt, 'keys'));
    writeFileSync(join(wt, 'keys', 'deploy.pem'), privateKey());
    // Touching the old fixture on another line does not report what the base already had.
    writeFileSync(join(wt, 'fixtures/old.env'), `${readFileSync(join(wt, 'fixtures/old.env'), 'utf8')}OTHER=1\n`);
    const scan = await scanForSecrets({ git: createGitRunner(), cwd: wt, base: task.baseCommit!, head: null });
    const where = scan.findings.map((f) => `${f.file}:${f.line} ${f.rule}`).sort();
    expect(where).toEqual(
      [
        '.env.production:2 @secretlint/secretlint-rule-aws',
        'keys/deploy.pem:1 @secretlint/secretlint-rule-privatekey',
        'src/config.js:3 @secretlint/secretlint-rule-github',
      ].sort(),
    );
    const text = describeFindings(scan.findings);
    expect(text).toContain('src/config.js:3:');
    expect(text).not.toContain(GITHUB_TOKEN);
    expect(text).not.toContain(AWS_SECRET);
    // Clean changes: nothing found.
    const clean = await createGreenTask(s, 'sc2', { 'b.txt': 'b\n' });
    writeFileSync(join(clean.worktree!, 'c.js'), 'export const c = 3;\n');
    expect((await scanForSecrets({ git: createGitRunner(), cwd: clean.worktree!, base: clean.baseCommit!, head: null })).findings).toEqual([]);
  });

  it("finds a token written into an existing line of a tracked file (a one-line edit: first, middle, last line without newline), also when the worker marks the file -diff, in the worktree and in a commit range; a token on an unchanged line is the base's", async () => {
    const repo = createTestRepo({ 'README.md': '# r\n', 'app.txt': 'one\ntwo\nthree\nfour\n', 'old.txt': `legacy ${GITHUB_TOKEN}\nx\n` });
    try {
      const g = createGitRunner({ baseEnv: gitTestEnv() });
      const base = git(repo.dir, ['rev-parse', 'HEAD']);
      const scan = async (head: string | null) => (await scanForSecrets({ git: g, cwd: repo.dir, base, head })).findings.map((f) => `${f.file}:${f.line}`);
      for (const [edit, line] of [
        [`token=${GITHUB_TOKEN}\ntwo\nthree\nfour\n`, 1],
        [`one\ntwo token=${GITHUB_TOKEN}\nthree\nfour\n`, 2],
        [`one\ntwo\nthree\nfour token=${GITHUB_TOKEN}`, 4],
      ] as Array<[string, number]>) {
        writeFileSync(join(repo.dir, 'app.txt'), edit);
        expect(await scan(null), edit).toEqual([`app.txt:${line}`]);
      }
      // The worker's .gitattributes makes git call app.txt binary: the edit is still scanned as text.
      writeFileSync(join(repo.dir, '.gitattributes'), 'app.txt -diff\nold.txt binary\n');
      writeFileSync(join(repo.dir, 'old.txt'), `legacy ${GITHUB_TOKEN}\ny\n`);
      expect(await scan(null)).toEqual(['app.txt:4']);
      git(repo.dir, ['add', '-A']);
      git(repo.dir, ['commit', '-qm', 'edits']);
      expect(await scan(git(repo.dir, ['rev-parse', 'HEAD']))).toEqual(['app.txt:4']);
    } finally {
      rmSync(repo.root, { recursive: true, force: true });
    }
  });

  it('blocks the commit after green checks: the task fails with the finding, nothing is committed', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const task = await createGreenTask(s, 'sc3', { 'a.txt': 'a\n' });
    const tip = git(task.worktree!, ['rev-parse', 'HEAD']);
    writeFileSync(join(task.worktree!, 'notes.txt'), `token for later: ${GITHUB_TOKEN}\n`);
    await s.store.update((d) => {
      d.tasks.sc3!.acceptance.commands = ['true'];
    });
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const out = await tools.run(runAcceptanceTool, 'sc3', 'o-acc');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    expect(out.note).toContain('notes.txt:1:');
    expect(out.note).not.toContain(GITHUB_TOKEN);
    expect(git(task.worktree!, ['rev-parse', 'HEAD'])).toBe(tip);
    const reg = await s.store.read();
    expect(reg.tasks.sc3).toMatchObject({ status: 'failed' });
    expect(reg.tasks.sc3!.statusReason).toMatch(/^secret scan before commit: notes\.txt:1:\d+ github/);
    const journal = readFileSync(join(s.repo.dir, '.polly', 'journal.jsonl'), 'utf8');
    expect(journal).toContain('"guard.secret_found"');
    expect(journal).not.toContain(GITHUB_TOKEN);
  });

  it('blocks the push of a commit holding a private key (a worker that committed it itself): origin never gets the branch', async () => {
    const s = createPrStepSetting({ 'README.md': '# r\n' });
    const task = await createGreenTask(s, 'sc4', { 'a.txt': 'a\n' });
    commitIn(task.worktree!, { id_rsa: privateKey() }, 'add key');
    const tools = toolRunner(s, { forge: createLocalForge({ repoRoot: s.repo.dir, store: s.store }), supervisor: noAgents, config: testConfig(null), agentEnv: {} });
    const out = await tools.run(createPushTool(), 'sc4', 'o-push');
    expect(out).toMatchObject({ outcome: 'failure', permanent: true });
    expect(out.note).toMatch(/^secret scan before push: id_rsa:1:\d+ privatekey/);
    expect(git(s.repo.remote, ['for-each-ref', 'refs/heads/polly/'])).toBe('');
  });
});
