/**
 * The git read view (workers/sandbox/git-read-view.ts, docs/read-view.md): the sanitizers, the
 * view a real repository gets (refs, objects, config), its fast path, and what a real check sees
 * through it in bubblewrap (commandSandbox). The end-to-end run through the real CLIs is
 * test/confinement/read-view.test.ts.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitRunner, type GitRunner } from '../../../workers/git/git.js';
import { commandSandbox } from '../../../workers/sandbox/command-sandbox.js';
import { objectFormat, prepareGitReadView, removeGitReadView, sanitizedGitConfig, sanitizedRemoteUrl } from '../../../workers/sandbox/git-read-view.js';
import { confineCommand, probeSandbox } from '../../../workers/sandbox/sandbox.js';
import { commandSandboxSpec } from '../../../workers/sandbox/sandbox-profiles.js';
import { bwrapArgs, coveredSockets, type SandboxSpec } from '../../../workers/sandbox/sandbox-spec.js';
import { git } from '../../helpers/git-repo.js';
import { ROOT } from '../../confinement/attack-harness.js';

describe('sanitizedRemoteUrl', () => {
  it('drops the user name and password of a URL with a scheme; keeps an ssh user, scp-like and local paths', () => {
    expect(sanitizedRemoteUrl('https://x-access-token:T0KEN@github.com/o/r.git')).toBe('https://github.com/o/r.git');
    expect(sanitizedRemoteUrl('https://T0KEN@github.com/o/r.git')).toBe('https://github.com/o/r.git');
    expect(sanitizedRemoteUrl('http://u:p@host:8080/r?x=1')).toBe('http://host:8080/r?x=1');
    expect(sanitizedRemoteUrl('ssh://git@github.com/o/r.git')).toBe('ssh://git@github.com/o/r.git');
    expect(sanitizedRemoteUrl('ssh://git:pw@github.com/o/r.git')).toBe('ssh://github.com/o/r.git');
    expect(sanitizedRemoteUrl('git@github.com:o/r.git')).toBe('git@github.com:o/r.git');
    expect(sanitizedRemoteUrl('/srv/origin.git')).toBe('/srv/origin.git');
  });
});

describe('sanitizedGitConfig', () => {
  it('keeps the allowlisted keys (remote URLs without credentials) and nothing that includes, authenticates or runs a program', () => {
    const text = sanitizedGitConfig([
      ['core.repositoryformatversion', '0'],
      ['core.bare', 'false'],
      ['core.sshcommand', 'touch /tmp/x'],
      ['core.fsmonitor', '/bin/evil'],
      ['include.path', '/home/u/.secret'],
      ['includeif.gitdir:/x/.path', '/y'],
      ['credential.helper', '!echo password=p'],
      ['url.https://t@h/.insteadof', 'https://h/'],
      ['http.extraheader', 'Authorization: bearer t'],
      ['user.email', 'dev@example.com'],
      ['remote.origin.url', 'https://u:secret@github.com/o/r.git'],
      ['remote.origin.fetch', '+refs/heads/*:refs/remotes/origin/*'],
      ['remote.we"ird.url', 'C:\\path'],
      ['filter.lfs.clean', 'git-lfs clean -- %f'],
    ]);
    expect(text).toBe(
      [
        '[core]',
        '\trepositoryformatversion = "0"',
        '\tbare = "false"',
        '[remote "origin"]',
        '\turl = "https://github.com/o/r.git"',
        '\tfetch = "+refs/heads/*:refs/remotes/origin/*"',
        '[remote "we\\"ird"]',
        '\turl = "C:\\\\path"',
        '',
      ].join('\n'),
    );
  });

  it('writes what git itself reads back', () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'polly-rv-cfg-')));
    try {
      writeFileSync(join(dir, 'config'), sanitizedGitConfig([['remote.we"ird.url', 'C:\\path with "quotes"']]));
      expect(execFileSync('git', ['config', '--file', join(dir, 'config'), '--get', 'remote.we"ird.url'], { encoding: 'utf8' })).toBe('C:\\path with "quotes"\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bwrapArgs and coveredSockets with a read view', () => {
  const view = {
    commonDir: '/r/.git',
    viewDir: '/s/tasks/t1.git',
    adminDir: '/r/.git/worktrees/t1',
    baseObjects: '/s/base.git/objects',
    maskedFiles: ['/r/.git/worktrees/t1/config.worktree'],
  };
  const spec: SandboxSpec = {
    cwd: '/r/.worktrees/t1',
    writable: ['/r/.worktrees/t1', '/s/home'],
    readOnly: [],
    hidden: ['/r', '/r/.worktrees'],
    home: '/s/home',
    tmpDir: null,
    network: { mode: 'none' },
    gitMetadata: { mode: 'read-only' },
    gitView: view,
  };
  it('binds the view read-only over the common dir, the admin dir and the base objects at their own paths, config.worktree covered', () => {
    const args = bwrapArgs(spec, () => true).join(' ');
    // The main checkout is not bound at all (the root is empty): only the mount points of the view and the worktree show under /r.
    expect(args).not.toContain('--ro-bind /r /r ');
    expect(args).toContain('--ro-bind /s/tasks/t1.git /r/.git ');
    expect(args).toContain('--ro-bind /r/.git/worktrees/t1 /r/.git/worktrees/t1 ');
    expect(args).toContain('--ro-bind /s/base.git/objects /s/base.git/objects ');
    expect(args).toContain('--ro-bind /dev/null /r/.git/worktrees/t1/config.worktree');
    expect(args.indexOf('/r/.git ')).toBeLessThan(args.indexOf('/r/.git/worktrees/t1 '));
  });
  it('binds the admin dir read-write with worktree-admin-writable', () => {
    const args = bwrapArgs({ ...spec, gitMetadata: { mode: 'worktree-admin-writable', adminDir: view.adminDir } }, () => true).join(' ');
    expect(args).toContain('--bind /r/.git/worktrees/t1 /r/.git/worktrees/t1 ');
    expect(args).not.toContain('--ro-bind /r/.git/worktrees/t1 /r/.git/worktrees/t1 ');
  });
  it('covers no host socket under the view (another path shows there), still one in the real admin dir', () => {
    const mounts = [
      { kind: 'ro' as const, path: '/' },
      { kind: 'tmpfs' as const, path: '/r' },
      { kind: 'ro' as const, path: '/r/.git', source: '/s/tasks/t1.git' },
      { kind: 'ro' as const, path: '/r/.git/worktrees/t1' },
    ];
    expect(coveredSockets(mounts, ['/r/.git/fsmonitor--daemon.ipc', '/r/.git/worktrees/t1/x.sock', '/r/sub/y.sock'])).toEqual(['/r/.git/worktrees/t1/x.sock']);
  });
});

describe('commandSandboxSpec', () => {
  it("hides the whole repository from a scratch checkout outside it (the local PR checks'), and keeps it read-only for the main checkout itself", () => {
    const scratch = commandSandboxSpec({ repoRoot: '/r', worktree: '/s/pr-checks/pr-1', stateDir: '/s/cmd', network: false, realHome: '/h', userDirs: [] });
    expect(scratch.hidden).toContain('/r');
    expect(scratch.readOnly).not.toContain('/r');
    const main = commandSandboxSpec({ repoRoot: '/r', worktree: '/r', stateDir: '/s/cmd', network: false, realHome: '/h', userDirs: [] });
    expect(main.hidden).not.toContain('/r');
    expect(main.readOnly).toContain('/r');
  });
});

/** A git runner that counts its calls, and the most of them it had running at once (`peak`). */
function countingGit(): { git: GitRunner; calls: string[]; peak: () => number } {
  const real = createGitRunner();
  const calls: string[] = [];
  let running = 0;
  let peak = 0;
  return {
    calls,
    peak: () => peak,
    git: {
      env: real.env,
      async run(args, options) {
        calls.push(args.join(' '));
        peak = Math.max(peak, ++running);
        try {
          return await real.run(args, options);
        } finally {
          running--;
        }
      },
    },
  };
}

describe('prepareGitReadView on a real repository', () => {
  let root: string;
  let repo: string;
  let wt: string;
  let state: string;
  let otherBlob: string;
  let stashBlob: string;
  beforeAll(() => {
    // Under the clone's test-artifacts/: the sandbox hides /tmp whole.
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    root = realpathSync(mkdtempSync(join(ROOT, 'test-artifacts', 'read-view-')));
    repo = join(root, 'repo');
    state = join(root, 'read-view');
    mkdirSync(repo);
    git(repo, ['init', '-q', '-b', 'main']);
    writeFileSync(join(repo, 'a.txt'), 'a\n');
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-q', '-m', 'initial']);
    git(repo, ['remote', 'add', 'origin', 'https://x-access-token:rvcanaryurl@example.invalid/o/r.git']);
    git(repo, ['config', 'credential.helper', '!echo password=rvcanaryhelper']);
    writeFileSync(join(repo, 'a.txt'), 'rvcanarystash\n');
    git(repo, ['stash', 'push', '-q', '-m', 'rvcanarystashmsg']);
    stashBlob = git(repo, ['rev-parse', 'stash@{0}:a.txt']);
    git(repo, ['checkout', '-q', '-b', 'polly/other']);
    writeFileSync(join(repo, 'o.txt'), 'rvcanaryother\n');
    git(repo, ['add', 'o.txt']);
    git(repo, ['commit', '-q', '-m', 'other']);
    otherBlob = git(repo, ['rev-parse', 'HEAD:o.txt']);
    git(repo, ['checkout', '-q', 'main']);
    git(repo, ['update-ref', 'refs/polly/backup/t0/1', 'polly/other']);
    writeFileSync(join(repo, '.env'), 'rvcanaryenv\n');
    writeFileSync(join(repo, 'a.txt'), 'rvcanarywip\n');
    wt = join(repo, '.worktrees', 't1');
    git(repo, ['worktree', 'add', '-q', '-b', 'polly/t1', wt, 'main']);
    writeFileSync(join(wt, 'mine.txt'), 'mine\n');
    git(wt, ['add', 'mine.txt']);
    git(wt, ['commit', '-q', '-m', 'mine']);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('gives no view to a process outside a linked worktree (the main checkout, a plain dir)', async () => {
    expect(await prepareGitReadView({ repoRoot: repo, worktree: repo, stateDir: state })).toBeNull();
    expect(await prepareGitReadView({ repoRoot: repo, worktree: root, stateDir: state })).toBeNull();
  });

  it('refuses a reftable repository with what to do (its refs are not files)', async () => {
    const other = join(root, 'reftable');
    mkdirSync(other);
    git(other, ['init', '-q', '-b', 'main']);
    git(other, ['commit', '-q', '--allow-empty', '-m', 'initial']);
    const owt = join(other, '.worktrees', 'r1');
    git(other, ['worktree', 'add', '-q', '-b', 'polly/r1', owt]);
    writeFileSync(join(other, '.git', 'config'), `${readFileSync(join(other, '.git', 'config'), 'utf8')}[extensions]\n\trefStorage = reftable\n`);
    await expect(prepareGitReadView({ repoRoot: other, worktree: owt, stateDir: join(root, 'reftable-view') })).rejects.toThrow(
      /reftable format \(extensions\.refStorage = reftable.*git refs migrate --ref-format=files/,
    );
  });

  it("holds the task's branch only, its commits and the base's history, a sanitized config; then takes the fast path", async () => {
    const view = await prepareGitReadView({ repoRoot: repo, worktree: wt, stateDir: state });
    expect(view).toMatchObject({ commonDir: join(repo, '.git'), adminDir: join(repo, '.git', 'worktrees', 't1'), viewDir: join(state, 'tasks', 't1.git') });
    const v = view!.viewDir;
    // The task's branch, and the default branch at the task's fork point (`git diff main` works inside).
    expect(git(root, ['--git-dir', v, 'for-each-ref', '--format=%(refname) %(objectname)'])).toBe(
      `refs/heads/main ${git(repo, ['rev-parse', 'main'])}\nrefs/heads/polly/t1 ${git(wt, ['rev-parse', 'HEAD'])}`,
    );
    expect(git(root, ['--git-dir', v, 'log', '--format=%s', 'refs/heads/polly/t1'])).toBe('mine\ninitial');
    expect(git(root, ['--git-dir', v, 'log', '--format=%s', 'main..polly/t1'])).toBe('mine');
    for (const id of [otherBlob, stashBlob]) expect(() => git(root, ['--git-dir', v, 'cat-file', '-e', id])).toThrow();
    const config = readFileSync(join(v, 'config'), 'utf8');
    expect(config).toContain('url = "https://example.invalid/o/r.git"');
    expect(config).not.toMatch(/rvcanary|credential/);
    // Nor any file of the state dir (the record of what the view was built from included): a
    // sandbox started under another HOME could read it.
    const files = (readdirSync(state, { recursive: true }) as string[]).map((f) => join(state, f)).filter((f) => statSync(f).isFile());
    expect(files.filter((f) => readFileSync(f).includes('rvcanaryurl'))).toEqual([]);
    expect(readFileSync(join(v, 'HEAD'), 'utf8')).toBe('ref: refs/heads/polly/t1\n');
    // Nothing moved: no git call at all.
    const counted = countingGit();
    expect(await prepareGitReadView({ repoRoot: repo, worktree: wt, stateDir: state, git: counted.git })).toEqual(view);
    expect(counted.calls).toEqual([]);
  });

  it("follows the task's new commits, and a new base once main moved and the branch took it in", async () => {
    writeFileSync(join(wt, 'two.txt'), 'two\n');
    git(wt, ['add', 'two.txt']);
    git(wt, ['commit', '-q', '-m', 'two']);
    await prepareGitReadView({ repoRoot: repo, worktree: wt, stateDir: state });
    const v = join(state, 'tasks', 't1.git');
    expect(git(root, ['--git-dir', v, 'log', '-1', '--format=%s', 'refs/heads/polly/t1'])).toBe('two');
    writeFileSync(join(repo, 'b.txt'), 'b\n');
    git(repo, ['add', 'b.txt']);
    git(repo, ['commit', '-q', '-m', 'main moves']);
    // main moved on: the view's main stays at what the task has seen (a commit of main the task has not taken in is not shown).
    writeFileSync(join(wt, 'three.txt'), 'three\n');
    git(wt, ['add', 'three.txt']);
    git(wt, ['commit', '-q', '-m', 'three']);
    await prepareGitReadView({ repoRoot: repo, worktree: wt, stateDir: state });
    expect(git(root, ['--git-dir', v, 'log', '-1', '--format=%s', 'refs/heads/main'])).toBe('initial');
    git(wt, ['merge', '-q', '--no-edit', 'main']);
    await prepareGitReadView({ repoRoot: repo, worktree: wt, stateDir: state });
    expect(git(root, ['--git-dir', v, 'log', '--format=%s', 'refs/heads/polly/t1'])).toContain('main moves');
    expect(git(root, ['--git-dir', v, 'log', '-1', '--format=%s', 'refs/heads/main'])).toBe('main moves');
    // The new base went to the shared store; the task's own commits only to its view.
    const base = join(state, 'base.git');
    expect(git(root, ['--git-dir', base, 'for-each-ref', '--format=%(refname)']).split('\n')).toHaveLength(2);
    expect(() => git(root, ['--git-dir', base, 'cat-file', '-e', git(wt, ['rev-parse', 'HEAD:two.txt'])])).toThrow();
  });

  it('starts a fresh view when the branch was reset (its earlier commits are not readable by id), and removeGitReadView removes it', async () => {
    const v = join(state, 'tasks', 't1.git');
    const earlier = git(wt, ['rev-parse', 'HEAD:two.txt']);
    git(root, ['--git-dir', v, 'cat-file', '-e', earlier]);
    git(wt, ['reset', '-q', '--hard', 'main']);
    await prepareGitReadView({ repoRoot: repo, worktree: wt, stateDir: state });
    expect(git(root, ['--git-dir', v, 'log', '-1', '--format=%s', 'refs/heads/polly/t1'])).toBe('main moves');
    expect(() => git(root, ['--git-dir', v, 'cat-file', '-e', earlier])).toThrow();
    removeGitReadView(repo, wt, state);
    expect(existsSync(v)).toBe(false);
    await prepareGitReadView({ repoRoot: repo, worktree: wt, stateDir: state });
    expect(existsSync(v)).toBe(true);
  });

  it('a fresh task on a base already seen costs four git calls, all at once: no fetch, no listing of the index, nothing copied', async () => {
    // The dispatch bench's case (issue 33 item 6): the index equals HEAD's tree and the tip is a base
    // the shared store holds, so the view needs no object of its own.
    const w = join(repo, '.worktrees', 't5');
    git(repo, ['worktree', 'add', '-q', '-b', 'polly/t5', w, 'main']);
    await prepareGitReadView({ repoRoot: repo, worktree: join(repo, '.worktrees', 't1'), stateDir: state });
    const counted = countingGit();
    const view = await prepareGitReadView({ repoRoot: repo, worktree: w, stateDir: state, git: counted.git });
    expect(counted.calls.map((c) => c.split(' ').find((x) => !x.startsWith('-') && !x.startsWith('/')))).toEqual(['init', 'rev-list', 'config', 'diff-index']);
    // None waits for another: they read the repository and write nothing the others read.
    expect(counted.peak()).toBe(4);
    expect(git(root, ['--git-dir', view!.viewDir, 'log', '-1', '--format=%s', 'refs/heads/polly/t5'])).toBe(git(repo, ['log', '-1', '--format=%s', 'main']));
    git(root, ['--git-dir', view!.viewDir, 'cat-file', '-e', git(repo, ['rev-parse', 'main:a.txt'])]);
    git(repo, ['worktree', 'remove', '--force', w]);
  });

  it('reads the object format from the config text', () => {
    expect(objectFormat('[core]\n\tbare = false\n')).toBe('sha1');
    expect(objectFormat('[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectFormat = sha256\n')).toBe('sha256');
    expect(objectFormat('[Extensions]\n  objectformat = "sha256" ; set by init\n')).toBe('sha256');
    expect(objectFormat('[extensions] objectformat = sha256\n')).toBe('sha256');
    expect(objectFormat('[other]\n\tobjectformat = sha256\n')).toBe('sha1');
  });

  it('two sandboxes starting at once on a base not seen before both get their view (the shared store is fetched into twice)', async () => {
    writeFileSync(join(repo, 'c.txt'), 'c\n');
    git(repo, ['add', 'c.txt']);
    git(repo, ['commit', '-q', '-m', 'a base nobody has yet']);
    const dirs = ['t2', 't3'].map((id) => join(repo, '.worktrees', id));
    for (const [i, d] of dirs.entries()) git(repo, ['worktree', 'add', '-q', '-b', `polly/t${i + 2}`, d, 'main']);
    const views = await Promise.all(dirs.map((d) => prepareGitReadView({ repoRoot: repo, worktree: d, stateDir: state })));
    for (const [i, v] of views.entries()) expect(git(root, ['--git-dir', v!.viewDir, 'log', '-1', '--format=%s', `refs/heads/polly/t${i + 2}`])).toBe('a base nobody has yet');
    for (const d of dirs) git(repo, ['worktree', 'remove', '--force', d]);
  });

  it.skipIf(!probeSandbox().ok)(
    "a check in the worktree sees no canary of the main checkout or the git dir, and git works in it; Polly's own commit after it works",
    async () => {
      const c = await commandSandbox({
        repoRoot: repo,
        worktree: wt,
        network: false,
        allowUnconfined: false,
        realHome: join(root, 'home'),
        stateDir: join(root, 'cmd'),
        readViewDir: state,
      });
      expect(c.sandbox?.spec.gitView?.viewDir).toBe(join(state, 'tasks', 't1.git'));
      const script = [
        `ls -a ${repo}`,
        `cat ${repo}/.env ${repo}/a.txt`,
        'git stash list',
        'git for-each-ref',
        'git config --list --show-origin',
        'git log --all -p',
        `git cat-file -p ${otherBlob}`,
        `git cat-file -p ${stashBlob}`,
        'git cat-file --batch-all-objects --batch',
        'echo "== status"; git status --short; echo "status-exit: $?"',
        'echo "== log"; git log --format=%s',
        'git commit -q --allow-empty -m sneaky || echo commit-refused',
      ].join('; ');
      const cc = confineCommand(c.sandbox!.bwrap, c.sandbox!.spec, '/bin/sh', ['-c', script], c.env);
      const out = await new Promise<string>((resolve) => {
        const child = spawn(cc.command, cc.args, { env: cc.env, cwd: wt, stdio: ['ignore', 'pipe', 'pipe'] });
        let text = '';
        child.stdout.on('data', (d: Buffer) => (text += d.toString('latin1')));
        child.stderr.on('data', (d: Buffer) => (text += d.toString('latin1')));
        child.on('close', () => {
          cc.dispose();
          resolve(text);
        });
      });
      expect(out).not.toMatch(/rvcanary/);
      expect(out).not.toContain('polly/other');
      expect(out).toContain('status-exit: 0');
      expect(out.split('== log')[1]).toContain('main moves');
      expect(out.split('== log')[1]).toContain('initial');
      expect(out).toContain('commit-refused');
      // Outside, Polly's git still sees and commits everything as before.
      writeFileSync(join(wt, 'after.txt'), 'after\n');
      git(wt, ['add', 'after.txt']);
      git(wt, ['commit', '-q', '-m', 'after the check']);
      expect(git(repo, ['log', '-1', '--format=%s', 'polly/t1'])).toBe('after the check');
      expect(existsSync(join(repo, '.env'))).toBe(true);
    },
    60_000,
  );

  it.skipIf(!probeSandbox().ok)(
    "a merge in progress (Polly's integrate_base): the other side's commit and the staged merge result are in the view; status and diff --cached work",
    async () => {
      writeFileSync(join(repo, 'm.txt'), '1\n2\n3\n4\n5\n');
      git(repo, ['add', 'm.txt']);
      git(repo, ['commit', '-q', '-m', 'm']);
      const w = join(repo, '.worktrees', 't4');
      git(repo, ['worktree', 'add', '-q', '-b', 'polly/t4', w, 'main']);
      writeFileSync(join(w, 'm.txt'), 'one\n2\n3\n4\n5\n');
      git(w, ['commit', '-q', '-am', 'task edits line 1']);
      writeFileSync(join(repo, 'm.txt'), '1\n2\n3\n4\nfive\n');
      git(repo, ['commit', '-q', '-m', 'base edits line 5', '--', 'm.txt']);
      await prepareGitReadView({ repoRoot: repo, worktree: w, stateDir: state });
      git(w, ['merge', '-q', '--no-ff', '--no-commit', 'main']);
      // The file edited after the merge: `diff --cached` must read the staged blob, not the file.
      writeFileSync(join(w, 'm.txt'), 'one\n2\n3\n4\nfive\nsix\n');
      const c = await commandSandbox({
        repoRoot: repo,
        worktree: w,
        network: false,
        allowUnconfined: false,
        realHome: join(root, 'home'),
        stateDir: join(root, 'cmd4'),
        readViewDir: state,
      });
      const cc = confineCommand(
        c.sandbox!.bwrap,
        c.sandbox!.spec,
        '/bin/sh',
        ['-c', 'git status --short; echo "status-exit: $?"; git diff --cached; echo "diff-exit: $?"; git log -1 --format=%s MERGE_HEAD'],
        c.env,
      );
      const out = await new Promise<string>((resolve) => {
        const child = spawn(cc.command, cc.args, { env: cc.env, cwd: w, stdio: ['ignore', 'pipe', 'pipe'] });
        let text = '';
        child.stdout.on('data', (d: Buffer) => (text += d.toString()));
        child.stderr.on('data', (d: Buffer) => (text += d.toString()));
        child.on('close', () => {
          cc.dispose();
          resolve(text);
        });
      });
      expect(out).toContain('status-exit: 0');
      expect(out).toContain('diff-exit: 0');
      expect(out).toContain('+five');
      expect(out).not.toContain('+six');
      expect(out).toContain('base edits line 5');
    },
    60_000,
  );
});
