/**
 * The artifacts record (workers/git/polly-artifacts.ts), attacked: the untracked paths that
 * appear while Polly runs the acceptance checks are recorded as Polly's and left out of staging
 * and of the secret scan before the commit. The checks run the worker's own test, so the worker
 * controls what appears then. One hostile check, run by Polly's acceptance runner in the checks'
 * sandbox and bracketed as `run_acceptance` brackets it (untrackedPaths → runAcceptance →
 * recordArtifacts), tries at once:
 * - to write the record itself (adding `secret.env`, a file with a token the worker wrote in its
 *   turn, so that the scan skips it): the worktree's admin dir is read-only, EROFS;
 * - to hide a token by rewriting `notes.txt`, a file the worker wrote in its turn, during the run:
 *   it was untracked before, so it is not recorded, and the scan finds the token;
 * - a token in a new file, a symlink to the real HOME's ssh key, a FIFO, a file named `.env`:
 *   recorded (the FIFO is nothing git lists), so never committed, and never read;
 * - 20,000 new files: the record holds them all, and the scan's filter is linear (the old filter,
 *   a list scan per path, held Polly's event loop for seconds: 28 s for 20,000 artifacts and
 *   20,000 other untracked files, measured at load 12).
 * Ground truth: the record's bytes, the scan's findings, the commit's tree.
 *
 * In-process worktree manager, real git, the real sandbox; no agent CLI (what the worker wrote in
 * its turn is written here as it would write it; the attack is what Polly runs afterwards).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { runAcceptance } from '../../workers/acceptance.js';
import { createGitRunner } from '../../workers/git/git.js';
import { readArtifacts, recordArtifacts, untrackedPaths } from '../../workers/git/polly-artifacts.js';
import { scanForSecrets } from '../../workers/git/secret-scan.js';
import { createWorktreeManager } from '../../workers/git/worktree-manager.js';
import { commandSandbox } from '../../workers/sandbox/command-sandbox.js';
import { createTestRepo, gitTestEnv } from '../helpers/git-repo.js';

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const token = (seed: number) => ['gh', 'p_', Array.from({ length: 36 }, (_, i) => ALNUM[(i * 7 + seed) % ALNUM.length]).join('')].join('');

/** The worker's test, run by Polly as the acceptance check. */
const CHECK = `#!/bin/sh
REC="$(git rev-parse --path-format=absolute --git-path polly-artifacts)"
printf 'secret.env\\0notes.txt\\0' >> "$REC" 2>/dev/null && echo RECORD-WRITTEN || echo record-read-only
printf 'token=%s\\n' "$T2" > notes.txt
printf 'token=%s\\n' "$T3" > leak.txt
printf 'API_KEY=%s\\n' "$T3" > .env
ln -s "$REAL_HOME/.ssh/id_ed25519" key
mkfifo pipe
node -e 'const fs=require("fs");for(let i=0;i<20000;i++)fs.writeFileSync("f"+String(i).padStart(5,"0")+".pyc","")'
exit 0
`;

describe('the artifacts record under a hostile check', () => {
  it('the worker cannot write the record nor hide its own files in it; what appears during the run is never committed; 20,000 of them cost no quadratic scan', async () => {
    const repo = createTestRepo({ 'calc.py': 'def add(a, b):\n    return a - b\n' });
    const manager = createWorktreeManager({ repoRoot: repo.dir, git: createGitRunner({ baseEnv: gitTestEnv() }) });
    const wt = (await manager.create({ id: 'art' })).path;
    const git = createGitRunner({ baseEnv: gitTestEnv() });
    const base = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: wt, encoding: 'utf8' }).trim();

    // The worker's turn: a fix, a token in secret.env and a harmless notes.txt, and its test.
    writeFileSync(join(wt, 'calc.py'), 'def add(a, b):\n    return a + b\n');
    writeFileSync(join(wt, 'secret.env'), `GITHUB_TOKEN=${token(1)}\n`);
    writeFileSync(join(wt, 'notes.txt'), 'notes\n');
    writeFileSync(join(wt, 'check.sh'), CHECK, { mode: 0o755 });

    // Polly's acceptance run, bracketed as run_acceptance brackets it.
    const box = await commandSandbox({
      repoRoot: repo.dir,
      worktree: wt,
      network: false,
      allowUnconfined: false,
      stateDir: join(repo.root, 'cmd-state'),
      extraEnv: { T2: token(2), T3: token(3), REAL_HOME: process.env.HOME ?? '/root' },
    });
    expect(box.sandbox).not.toBeNull();
    const before = await untrackedPaths(git, wt);
    const out = await runAcceptance({ cwd: wt, commands: ['./check.sh'], timeoutSeconds: 120, env: box.env, sandbox: box.sandbox });
    expect(out.green, out.results[0]!.output).toBe(true);
    expect(out.results[0]!.output).toContain('record-read-only');
    await recordArtifacts(git, wt, before);

    // The record: only what appeared during the run, none of the worker's own files.
    const recorded = await readArtifacts(git, wt);
    // (A FIFO is no file git lists or commits: not recorded, and nothing opened it.)
    expect(recorded).toHaveLength(20000 + 3);
    expect(recorded).toEqual(expect.arrayContaining(['leak.txt', '.env', 'key', 'f00000.pyc', 'f19999.pyc']));
    expect(recorded).not.toContain('secret.env');
    expect(recorded).not.toContain('notes.txt');
    const recordFile = execFileSync('git', ['rev-parse', '--path-format=absolute', '--git-path', 'polly-artifacts'], { cwd: wt, encoding: 'utf8' }).trim();
    expect(readFileSync(recordFile, 'utf8')).not.toContain('secret.env');

    // The scan before the commit: both of the worker's tokens found, and Polly's event loop (the
    // Brain's: every other task, the MCP server) never held for long. The old filter held it for
    // one block of 5.0 s here (load 13), the new one for milliseconds.
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const scan = await scanForSecrets({ git, cwd: wt, base, head: null });
    delay.disable();
    const blockedMs = Math.round(delay.max / 1e6);
    expect(scan.findings.map((f) => f.file).sort()).toEqual(['notes.txt', 'secret.env']);
    expect(blockedMs, `the event loop was held for ${blockedMs} ms`).toBeLessThan(2_000);

    // The commit (once the worker's tokens are gone): none of the run's paths is in it.
    writeFileSync(join(wt, 'secret.env'), 'GITHUB_TOKEN=\n');
    writeFileSync(join(wt, 'notes.txt'), 'notes\n');
    const commit = await manager.commitAll({ id: 'art', message: 'Fix add' });
    const files = execFileSync('git', ['show', '--name-only', '--format=', commit!], { cwd: wt, encoding: 'utf8' }).trim().split('\n').sort();
    expect(files).toEqual(['calc.py', 'check.sh', 'notes.txt', 'secret.env']);
    // The push-time scan reads the commit itself, whatever the record says.
    expect((await scanForSecrets({ git, cwd: wt, base, head: commit! })).findings).toEqual([]);
  }, 180_000);
});
