/**
 * Deny by default, for reading too (issue 27 item 1; workers/sandbox/system-view.ts): the sandbox's
 * root is empty, and of the host only the system dirs, the parts of /etc programs need and the
 * toolchains on PATH are bound. The first block reads a made-up host tree (`fsRoot`); the second
 * runs the real bubblewrap sandbox of an agent turn (workers/sandbox/sandbox.ts `confineCommand`)
 * with canaries planted where the old `--ro-bind / /` root showed them: /srv, /opt, /mnt,
 * /home/<other>, /var/tmp, beside the repository, under the real HOME. The places outside the
 * test's own dirs need root (CI runs as root); elsewhere those are left out and said so.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSandboxSpec } from '../../../workers/sandbox/sandbox-profiles.js';
import { confineCommand, probeSandbox } from '../../../workers/sandbox/sandbox.js';
import { bwrapArgs } from '../../../workers/sandbox/sandbox-spec.js';
import { systemView } from '../../../workers/sandbox/system-view.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);

function fakeHost(): string {
  const r = realpathSync(mkdtempSync(join(ROOT, 'test-artifacts', 'sysview-')));
  const file = (p: string, text = 'x') => {
    mkdirSync(dirname(join(r, p)), { recursive: true });
    writeFileSync(join(r, p), text);
  };
  for (const d of [
    'usr/bin',
    'usr/lib',
    'usr/share/zoneinfo',
    'etc/ssl/certs',
    'etc/ssl/private',
    'etc/java-17-openjdk',
    'opt/tool/bin',
    'root/.cargo/bin',
    'home/u/bin',
    'srv/bin',
    'run/resolve',
  ])
    mkdirSync(join(r, d), { recursive: true });
  symlinkSync('usr/bin', join(r, 'bin'));
  symlinkSync('usr/lib', join(r, 'lib'));
  for (const f of [
    'etc/passwd',
    'etc/group',
    'etc/hosts',
    'etc/shadow',
    'etc/gitconfig',
    'etc/npmrc',
    'etc/pip.conf',
    'etc/ssl/private/key.pem',
    'usr/local/etc/npmrc',
    'opt/tool/etc/npmrc',
    'run/resolve/stub-resolv.conf',
  ])
    file(f);
  file('opt/tool/lib/.pypirc');
  symlinkSync('../usr/share/zoneinfo', join(r, 'etc/localtime'));
  symlinkSync('../run/resolve/stub-resolv.conf', join(r, 'etc/resolv.conf'));
  return r;
}

describe('systemView: an allowlist of the host', () => {
  let host = '';
  beforeAll(() => {
    mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
    host = fakeHost();
  });
  afterAll(() => rmSync(host, { recursive: true, force: true }));

  it('binds the system dirs and the /etc files programs need, links what links to them, and nothing that holds secrets', () => {
    const v = systemView({ fsRoot: host, pathVar: '/opt/tool/bin:/root/.cargo/bin:/home/u/bin:/srv/bin:/usr/bin:/bin:relative', hidden: [] });
    expect(v.binds).toEqual(
      expect.arrayContaining(['/usr', '/etc/passwd', '/etc/group', '/etc/hosts', '/etc/ssl/certs', '/etc/java-17-openjdk', '/etc/resolv.conf', '/opt/tool', '/srv/bin']),
    );
    // A link to what is shown anyway is made as a link; one into /run (not shown) is bound, so only its target's content shows.
    expect(v.symlinks).toEqual(
      expect.arrayContaining([
        { path: '/bin', target: 'usr/bin' },
        { path: '/lib', target: 'usr/lib' },
        { path: '/etc/localtime', target: '../usr/share/zoneinfo' },
      ]),
    );
    for (const secret of ['/etc/shadow', '/etc/gitconfig', '/etc/npmrc', '/etc/pip.conf', '/etc/ssl/private', '/etc/ssl', '/etc', '/run', '/root', '/home', '/opt', '/srv'])
      expect(v.binds, secret).not.toContain(secret);
    // Users' homes are never bound for being on PATH (HOME's toolchains come through home-toolchains.ts).
    expect(v.binds.filter((b) => b.startsWith('/root') || b.startsWith('/home'))).toEqual([]);
    expect(v.masked).toEqual(expect.arrayContaining(['/usr/local/etc/npmrc']));
  });

  it('leaves out a PATH directory under a hidden path (the repository, the worktrees dir)', () => {
    const v = systemView({ fsRoot: host, pathVar: '/opt/tool/bin', hidden: ['/opt/tool'] });
    expect(v.binds).not.toContain('/opt/tool');
  });

  it("bwrap's arguments never bind the host's root, and remount the empty root read-only last", () => {
    const args = bwrapArgs(
      { cwd: '/w/t', writable: ['/w/t'], readOnly: [], hidden: [], home: '/w/h', tmpDir: null, network: { mode: 'none' }, gitMetadata: { mode: 'read-only' } },
      () => true,
      [],
      { disableUserns: false },
      [],
      { binds: ['/usr'], symlinks: [{ path: '/bin', target: 'usr/bin' }], masked: ['/usr/local/etc/npmrc'], maskedDirs: [] },
    );
    const joined = args.join(' ');
    expect(joined).not.toContain('--ro-bind / /');
    expect(joined).toContain('--ro-bind /usr /usr');
    expect(joined).toContain('--symlink usr/bin /bin');
    expect(joined).toContain('--ro-bind /dev/null /usr/local/etc/npmrc');
    const remounts = args.flatMap((a, i) => (a === '--remount-ro' ? [args[i + 1]] : []));
    expect(remounts.at(-1)).toBe('/');
  });
});

interface Ran {
  code: number | null;
  out: string;
}

describe.skipIf(!SANDBOXED)("the real sandbox shows none of the host's other places (canaries where `--ro-bind / /` showed them)", () => {
  const tag = `polly-sysview-canary-${process.pid}`;
  let base = '';
  const planted: string[] = [];
  const notPlanted: string[] = [];
  let ran: Ran = { code: null, out: '' };

  beforeAll(async () => {
    // Outside /tmp (every sandbox covers it anyway) and outside Polly's install (bound read-only):
    // beside this clone, where the old root showed the repository's parent dir.
    base = realpathSync(mkdtempSync(join(dirname(ROOT), 'polly-sysview-run-')));
    const repo = join(base, 'repo');
    const worktree = join(repo, '.worktrees', 't1');
    const home = join(base, 'home');
    const state = join(base, 'state', 'agents', 't1', 'pi');
    for (const d of [worktree, join(home, '.ssh'), join(state, 'home'), join(state, 'gate')]) mkdirSync(d, { recursive: true });
    const places = [
      join(base, 'sibling-of-repo', 'secret.txt'),
      join(home, '.ssh', `${tag}.txt`),
      `/srv/${tag}/secret.txt`,
      `/opt/${tag}/secret.txt`,
      `/mnt/${tag}/secret.txt`,
      `/home/${tag}/secret.txt`,
      `/var/tmp/${tag}/secret.txt`,
      `/var/lib/${tag}/secret.txt`,
    ];
    for (const p of places) {
      try {
        mkdirSync(dirname(p), { recursive: true });
        writeFileSync(p, `${tag}\n`);
        planted.push(p);
      } catch {
        notPlanted.push(p);
      }
    }
    if (notPlanted.length > 0) process.stderr.write(`system view: not planted (no permission here): ${notPlanted.join(', ')}\n`);
    const spec = agentSandboxSpec({
      repoRoot: repo,
      cwd: worktree,
      writableCwd: true,
      agentStateDir: state,
      gateDir: join(state, 'gate'),
      endpoints: [],
      realHome: home,
    });
    const probe = probeSandbox();
    if (!probe.ok) throw new Error(probe.reason);
    // Lists and reads everything it can: the root, each planted place, and a search of the file system.
    const script = [
      'echo "== root"; ls -a /; echo "== end root"',
      ...planted.map((p) => `cat '${p}' 2>&1; ls '${dirname(p)}' 2>&1`),
      `echo "== find"; find / -xdev \\( -path /proc -o -path /sys -o -path /usr \\) -prune -o -name '*${tag}*' -print 2>/dev/null`,
      'echo "== works"; git --version && node -e "console.log(require(\'os\').userInfo().username)" && head -c 10 /etc/passwd && ls /etc/ssl/certs | head -n 1',
    ].join('\n');
    const c = confineCommand(probe.bwrap, spec, 'sh', ['-c', script], { PATH: process.env.PATH ?? '/usr/bin:/bin' });
    ran = await new Promise<Ran>((done) => {
      const child = spawn(c.command, c.args, { env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('close', (code) => {
        c.dispose();
        done({ code, out });
      });
    });
  }, 60_000);

  afterAll(() => {
    for (const p of planted) if (!p.startsWith(base)) rmSync(dirname(p), { recursive: true, force: true });
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('the canaries are there outside (the planting worked), the beside-the-repository one at least', () => {
    expect(planted).toContain(join(base, 'sibling-of-repo', 'secret.txt'));
    if (process.env.CI === 'true') expect(notPlanted).toEqual([]);
  });

  it('reads and finds none of them; the root lists only the allowlist', () => {
    expect(ran.out).toContain('== works');
    expect(ran.out.includes(`${tag}\n`), ran.out).toBe(false);
    const find = ran.out.split('== find')[1]?.split('== works')[0] ?? '';
    expect(find.trim()).toBe('');
    const root = (ran.out.split('== root')[1]?.split('== end root')[0] ?? '').split('\n').slice(1);
    expect(root).toContain('usr');
    for (const name of ['srv', 'opt', 'mnt', 'home', 'root', 'media', 'run', 'boot', 'lost+found']) expect(root, name).not.toContain(name);
  });

  it('programs still run: git, node (its user name from /etc/passwd), the CA certificates are there', () => {
    const works = ran.out.split('== works')[1] ?? '';
    expect(works).toMatch(/git version \d/);
    expect(works.split('\n')[2]).toBeTruthy();
    expect(ran.code, ran.out).toBe(0);
  });
});
