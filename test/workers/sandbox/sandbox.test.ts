/**
 * Polly's OS sandbox, against the real bubblewrap: what a confined command can read, write and
 * reach, which environment it gets, that nothing it starts outlives it, and that Polly fails
 * closed when the sandbox cannot start. Ground truth comes from files and listeners outside.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPollyError } from '../../../brain/core/errors.js';
import { confineCommand, decideConfinement, probeSandbox } from '../../../workers/sandbox/sandbox.js';
import { probeOutboundNetwork } from '../../../workers/sandbox/outbound-network.js';
import { agentSandboxSpec, commandSandboxSpec } from '../../../workers/sandbox/sandbox-profiles.js';
import { bwrapArgs, type SandboxSpec } from '../../../workers/sandbox/sandbox-spec.js';
import { workerEnv } from '../../../workers/sandbox/worker-env.js';
import { repoStateDir } from '../../../workers/sandbox/agent-state-dir.js';
import { claudeCodeSandboxSettings } from '../../../workers/agents/claude-code-sandbox.js';
import { gitTestEnv } from '../../helpers/git-repo.js';
import { hasSystemPackage } from '../../helpers/system-packages.js';

interface Layout {
  root: string;
  repo: string;
  worktree: string;
  sibling: string;
  home: string;
  state: string;
  gate: string;
  journal: string;
}

function layout(): Layout {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-sbx-')));
  const repo = join(root, 'repo');
  const worktree = join(repo, '.worktrees', 't1');
  const sibling = join(repo, '.worktrees', 't2');
  const home = join(root, 'home');
  const state = join(root, 'state', 'agents', 't1', 'claude-code');
  const gate = join(state, 'gate');
  for (const d of [worktree, sibling, join(repo, '.polly'), join(repo, '.git'), join(home, '.ssh'), join(state, 'home'), gate]) mkdirSync(d, { recursive: true });
  writeFileSync(join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY');
  writeFileSync(join(home, '.git-credentials'), 'https://x:token@github.com');
  writeFileSync(join(repo, '.polly', 'registry.json'), '{}');
  writeFileSync(join(sibling, 'secret.txt'), 'sibling');
  writeFileSync(join(repo, 'README.md'), 'readme');
  writeFileSync(join(gate, 'gate-config.json'), '{"role":"implement"}');
  const journal = join(repo, '.polly', 'gate-decisions.jsonl');
  writeFileSync(journal, '{"kind":"polly"}\n');
  return { root, repo, worktree, sibling, home, state, gate, journal };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(spec: SandboxSpec, command: string, args: string[], env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' }): Promise<Run> {
  const probe = probeSandbox();
  if (!probe.ok) throw new Error(`the sandbox cannot start here: ${probe.reason}`);
  const c = confineCommand(probe.bwrap, spec, command, args, env);
  return new Promise((resolve) => {
    const child = spawn(c.command, c.args, { env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => {
      c.dispose();
      resolve({ code, stdout, stderr });
    });
  });
}

function agentSpec(l: Layout, endpoints: { host: string; port: number }[] = []): SandboxSpec {
  return agentSandboxSpec({
    repoRoot: l.repo,
    cwd: l.worktree,
    writableCwd: true,
    agentStateDir: l.state,
    gateDir: l.gate,
    endpoints,
    realHome: l.home,
  });
}

const sh = (script: string): [string, string[]] => ['/bin/sh', ['-c', script]];

// Real bubblewrap (and pasta for the network test): skipped and listed without them, a failure
// under CI=true (test/helpers/system-packages.ts).
const SANDBOXED = hasSystemPackage('bubblewrap', import.meta.url);
const PASTA = SANDBOXED && hasSystemPackage('passt', import.meta.url);

describe.skipIf(!SANDBOXED)('the sandbox (real bubblewrap)', () => {
  let l: Layout;
  let server: Server;
  let port = 0;
  let other: Server;
  let otherPort = 0;
  let hits = 0;
  beforeAll(async () => {
    l = layout();
    const listen = (s: Server) => new Promise<number>((r) => s.listen(0, '127.0.0.1', () => r((s.address() as { port: number }).port)));
    server = createServer((_req, res) => res.end('model says hi'));
    port = await listen(server);
    other = createServer((_req, res) => {
      hits++;
      res.end('exfiltrated');
    });
    otherPort = await listen(other);
  });
  afterAll(() => {
    server.close();
    other.close();
  });

  it('probes bubblewrap as working on this machine', () => {
    expect(probeSandbox()).toMatchObject({ ok: true });
  });

  it('writes only the worktree and the agent state; the root, the git dir and the gate config are read-only', async () => {
    const r = await run(
      agentSpec(l),
      ...sh(
        [
          `echo w > ${l.worktree}/ok && echo wt-ok`,
          `echo s > ${l.state}/session && echo state-ok`,
          `echo x > ${l.gate}/gate-config.json 2>/dev/null || echo gate-ro`,
          `echo x > ${l.repo}/README.md 2>/dev/null || echo repo-ro`,
          `mkdir ${l.repo}/.git/hooks 2>/dev/null || echo git-ro`,
          `echo x > /etc/polly-x 2>/dev/null || echo etc-ro`,
          'echo t > "$TMPDIR/t" && echo tmp-ok',
          'echo "home=$HOME"',
        ].join('; '),
      ),
    );
    expect(r.stderr).toContain('Read-only file system');
    expect(r.stdout.split('\n')).toEqual(expect.arrayContaining(['wt-ok', 'state-ok', 'gate-ro', 'repo-ro', 'git-ro', 'etc-ro', 'tmp-ok', `home=${l.state}/home`]));
    expect(readFileSync(join(l.worktree, 'ok'), 'utf8')).toBe('w\n');
    expect(readFileSync(join(l.gate, 'gate-config.json'), 'utf8')).toBe('{"role":"implement"}');
    expect(existsSync(join(l.repo, '.git', 'hooks'))).toBe(false);
  });

  it("hides the real HOME (ssh keys, git credentials), .polly/ and the other worktrees; the gate's decision log can be neither truncated nor appended to", async () => {
    const r = await run(
      agentSpec(l),
      ...sh(
        [
          `cat ${l.home}/.ssh/id_ed25519 2>/dev/null || echo no-ssh`,
          `cat ${l.home}/.git-credentials 2>/dev/null || echo no-creds`,
          `cat ${l.repo}/.polly/registry.json 2>/dev/null || echo no-registry`,
          `cat ${l.sibling}/secret.txt 2>/dev/null || echo no-sibling`,
          `(echo '{"kind":"x"}' >> ${l.journal}) 2>/dev/null && echo journal-appended || echo journal-no-append`,
          `(: > ${l.journal}) 2>/dev/null && echo journal-truncated || echo journal-no-truncate`,
          `cat ${l.repo}/README.md`,
        ].join('; '),
      ),
    );
    expect(r.stdout.split('\n').filter(Boolean)).toEqual(['no-ssh', 'no-creds', 'no-registry', 'no-sibling', 'journal-no-append', 'journal-no-truncate', 'readme']);
    expect(readFileSync(l.journal, 'utf8')).toBe('{"kind":"polly"}\n');
    expect(readFileSync(join(l.home, '.ssh', 'id_ed25519'), 'utf8')).toBe('PRIVATE KEY');
  });

  it('reaches the model endpoint on the host loopback through the bridge, and nothing else', async () => {
    const fetchIn = (p: number) => `fetch('http://127.0.0.1:${p}/v1').then(r => r.text()).then(t => console.log('${p}:' + t), e => console.log('${p}:blocked'))`;
    const script = `${fetchIn(port)}; ${fetchIn(otherPort)}`;
    const r = await run(agentSpec(l, [{ host: '127.0.0.1', port }]), process.execPath, ['-e', script]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`${port}:model says hi`);
    expect(r.stdout).toContain(`${otherPort}:blocked`);
    expect(hits).toBe(0);
  });

  it.skipIf(!PASTA)("gives an acceptance command no network unless config allows it, and even then not the host's loopback", async () => {
    const script = `fetch('http://127.0.0.1:${otherPort}/').then(r => r.text()).then(t => console.log(t), () => console.log('blocked'))`;
    const offline = await run(commandSandboxSpec({ repoRoot: l.repo, worktree: l.worktree, stateDir: join(l.root, 'acc'), network: false, realHome: l.home }), process.execPath, [
      '-e',
      script,
    ]);
    expect(offline.stdout.trim()).toBe('blocked');
    expect(hits).toBe(0);
    // Network on: its own namespace behind pasta (test/confinement/check-network.test.ts shows the outside is reached).
    const net = probeOutboundNetwork();
    if (!net.ok) throw new Error(`pasta cannot start here: ${net.reason}`);
    const online = await run(
      commandSandboxSpec({ repoRoot: l.repo, worktree: l.worktree, stateDir: join(l.root, 'acc'), network: true, pasta: net.pasta, realHome: l.home }),
      process.execPath,
      ['-e', script],
    );
    expect(online.stdout.trim()).toBe('blocked');
    expect(hits).toBe(0);
  });

  it('kills what the command left running (nohup, setsid) when it ends', async () => {
    const late = join(l.worktree, 'late');
    const started = Date.now();
    const r = await run(agentSpec(l), ...sh(`nohup sh -c 'sleep 1; echo late > ${late}' >/dev/null 2>&1 & setsid sh -c 'sleep 1; echo late > ${late}' & echo started`));
    expect(r.stdout.trim()).toBe('started');
    expect(Date.now() - started).toBeLessThan(1000);
    await new Promise((res) => setTimeout(res, 2000));
    expect(existsSync(late)).toBe(false);
    // the control: the same command outside the sandbox leaves its child running
    const free = spawn('/bin/sh', ['-c', `setsid sh -c 'sleep 1; echo late > ${late}' & echo started`], { stdio: 'ignore' });
    await new Promise((res) => free.on('close', res));
    await new Promise((res) => setTimeout(res, 2000));
    expect(existsSync(late)).toBe(true);
  });

  it('runs in its own PID namespace with no capabilities', async () => {
    const r = await run(agentSpec(l), ...sh('grep CapEff /proc/self/status; ls /proc | grep -c "^[0-9]"'));
    const [cap, count] = r.stdout.trim().split('\n');
    expect(cap).toMatch(/CapEff:\s+0+$/);
    expect(Number(count)).toBeLessThan(10);
  });

  it('lets nothing inside create a user namespace (bwrap --disable-userns): `unshare -U true` fails, so no mount Polly made can be rearranged', async () => {
    // bubblewrap 0.8+ here (Debian bookworm): a new user namespace, whose max_user_namespaces is 1, entered once.
    const r = await run(agentSpec(l), ...sh('unshare -U true 2>&1; echo "exit=$?"; unshare -Ur true >/dev/null 2>&1; echo "exit=$?"'));
    const lines = r.stdout.trim().split('\n');
    expect(lines.at(-2)).toMatch(/^exit=[1-9]/);
    expect(lines.at(-1)).toMatch(/^exit=[1-9]/);
    expect(r.stdout).toMatch(/No space left on device/);
  });

  it('runs an agent CLI installed under the real HOME (an npm prefix there): its package bound read-only, nothing else of HOME', async () => {
    const prefix = join(l.home, '.npm-global');
    const pkg = join(prefix, 'lib', 'node_modules', 'fake-agent');
    const other = join(prefix, 'lib', 'node_modules', 'other-tool');
    for (const d of [join(pkg, 'bin'), join(pkg, 'node_modules', 'dep'), other, join(prefix, 'bin')]) mkdirSync(d, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), '{"name": "fake-agent"}');
    writeFileSync(join(pkg, 'node_modules', 'dep', 'index.txt'), 'dep-ok');
    writeFileSync(join(other, 'package.json'), '{"name": "other-tool"}');
    const cli = join(pkg, 'bin', 'cli.sh');
    writeFileSync(
      cli,
      `#!/bin/sh\necho "agent-ran $1"\ncat "$(dirname "$0")/../node_modules/dep/index.txt"; echo\n(echo x > "$(dirname "$0")/w") 2>/dev/null || echo pkg-ro\nls ${other} >/dev/null 2>&1 || echo no-other-package\ncat ${l.home}/.ssh/id_ed25519 2>/dev/null || echo no-ssh\n`,
      { mode: 0o755 },
    );
    symlinkSync('../lib/node_modules/fake-agent/bin/cli.sh', join(prefix, 'bin', 'fake-agent'));
    const r = await run(agentSpec(l), 'fake-agent', ['--print'], { PATH: `${join(prefix, 'bin')}:/usr/bin:/bin` });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual(['agent-ran --print', 'dep-ok', 'pkg-ro', 'no-other-package', 'no-ssh']);
  });

  it('refuses a write into what it hides with EROFS (the real HOME, .worktrees/, .polly/; the repository and the worktree for a reviewer), never a tmpfs that vanishes', async () => {
    const impl = await run(agentSpec(l), ...sh(`for p in ${l.home}/x ${l.repo}/.worktrees/x ${l.repo}/.polly/x ${l.journal}; do (echo x >> $p) 2>&1; done`));
    const lines = impl.stdout.split('\n').filter(Boolean);
    // the decision log included: .polly/ is covered whole (the runner alone writes the log)
    expect(lines.filter((line) => /Read-only file system/.test(line))).toHaveLength(4);
    // Where createReviewSandbox puts it: directly under the OS temp dir (so /tmp itself is among the hidden).
    const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'polly-review-ro-')));
    const review = agentSandboxSpec({
      repoRoot: l.repo,
      cwd: scratch,
      writableCwd: false,
      agentStateDir: l.state,
      gateDir: l.gate,

      endpoints: [],
      realHome: l.home,
    });
    const r = await run(review, ...sh(`(echo x > ${l.repo}/PWNED) 2>&1; (echo x > ${l.worktree}/PWNED) 2>&1; true`));
    // The repository's cover refuses; the worktree is not there at all.
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([expect.stringMatching(/Read-only file system/), expect.stringMatching(/Directory nonexistent/)]);
    // Its TMPDIR stays writable even though the scratch dirs' parent is the hidden /tmp (claude needs it).
    expect((await run(review, ...sh('echo x > /tmp/t && cat /tmp/t'))).stdout).toBe('x\n');
    expect(existsSync(join(l.repo, 'PWNED'))).toBe(false);
  });

  it('shows a reviewer its scratch dir only: not the repository, not the worktree, not other scratch dirs', async () => {
    const scratchRoot = join(l.root, 'scratch');
    const mine = join(scratchRoot, 'polly-review-a');
    const theirs = join(scratchRoot, 'polly-review-b');
    for (const d of [mine, theirs]) mkdirSync(d, { recursive: true });
    writeFileSync(join(mine, 'DIFF.patch'), 'diff');
    writeFileSync(join(theirs, 'DIFF.patch'), 'other');
    writeFileSync(join(l.worktree, 'impl.ts'), 'impl');
    const spec = agentSandboxSpec({ repoRoot: l.repo, cwd: mine, writableCwd: false, agentStateDir: l.state, gateDir: l.gate, endpoints: [], realHome: l.home });
    const r = await run(
      spec,
      ...sh(
        `cat DIFF.patch; echo; cat ${l.worktree}/impl.ts 2>/dev/null || echo no-worktree; cat ${l.repo}/README.md 2>/dev/null || echo no-repo; cat ${theirs}/DIFF.patch 2>/dev/null || echo no-other; echo x > note 2>/dev/null || echo scratch-ro`,
      ),
    );
    expect(r.stdout.split('\n').filter(Boolean)).toEqual(['diff', 'no-worktree', 'no-repo', 'no-other', 'scratch-ro']);
  });

  it('a worktree beside the repository (worktrees.dir outside): git works in it, the repository is read-only, other worktrees and .polly/ are hidden', async () => {
    // A real repository with two linked worktrees in ../repo.polly-worktrees, as the worktree manager makes them.
    const base = realpathSync(mkdtempSync(join(tmpdir(), 'polly-sbx-out-')));
    const repo = join(base, 'repo');
    const outside = join(base, 'repo.polly-worktrees');
    const git = (cwd: string, args: string[]) => execFileSync('git', args, { cwd, env: gitTestEnv(), encoding: 'utf8' }).trim();
    mkdirSync(join(repo, '.polly'), { recursive: true });
    git(repo, ['init', '-q', '-b', 'main']);
    writeFileSync(join(repo, 'README.md'), 'readme');
    git(repo, ['add', 'README.md']);
    git(repo, ['commit', '-q', '-m', 'initial']);
    writeFileSync(join(repo, '.polly', 'registry.json'), '{}');
    git(repo, ['worktree', 'add', '-q', '-b', 'polly/t1', join(outside, 't1')]);
    git(repo, ['worktree', 'add', '-q', '-b', 'polly/t2', join(outside, 't2')]);
    writeFileSync(join(outside, 't2', 'secret.txt'), 'sibling');
    const input = { repoRoot: repo, cwd: join(outside, 't1'), writableCwd: true, agentStateDir: l.state, gateDir: l.gate, endpoints: [], realHome: l.home };
    const script = [
      'echo change > README.md && git status --short',
      'git log --format=%s -1',
      `cat ${outside}/t2/secret.txt 2>/dev/null || echo no-sibling`,
      `cat ${repo}/.polly/registry.json 2>/dev/null || echo no-registry`,
      `echo x > ${repo}/README.md 2>/dev/null || echo repo-ro`,
      `git commit -qam x 2>/dev/null || echo commit-refused`,
    ].join('; ');
    const r = await run(agentSandboxSpec({ ...input, worktreesDir: outside }), ...sh(script));
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([' M README.md', 'initial', 'no-sibling', 'no-registry', 'repo-ro', 'commit-refused']);
    // Without worktrees.dir the sandbox took the worktree for a reviewer's scratch dir and hid the
    // repository, git dir included: git could not work in the worktree at all.
    const blind = await run(agentSandboxSpec(input), ...sh('git status --short >/dev/null 2>&1 && echo git-ok || echo git-broken'));
    expect(blind.stdout.trim()).toBe('git-broken');
    // An acceptance command in that worktree hides the other worktrees too.
    const cmd = commandSandboxSpec({ repoRoot: repo, worktree: join(outside, 't1'), stateDir: join(base, 'cmd'), network: false, realHome: l.home, worktreesDir: outside });
    mkdirSync(join(base, 'cmd', 'home'), { recursive: true });
    const c = await run(cmd, ...sh(`cat ${outside}/t2/secret.txt 2>/dev/null || echo no-sibling; git status --short`));
    expect(c.stdout.split('\n').filter(Boolean)).toEqual(['no-sibling', ' M README.md']);
  });
});

describe('fail closed', () => {
  it('refuses to dispatch when bubblewrap is missing, saying how to install it', () => {
    const probe = probeSandbox({ bwrap: '/nonexistent/bwrap' });
    expect(probe.ok).toBe(false);
    let error: unknown;
    try {
      decideConfinement(false, probe);
    } catch (e) {
      error = e;
    }
    expect(isPollyError(error) && error.code).toBe('sandbox_unavailable');
    expect((error as Error).message).toContain('apt-get install bubblewrap');
    expect((error as Error).message).toContain('allow_unconfined');
  });

  it('refuses when bubblewrap cannot create namespaces (a bwrap that fails)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'polly-badbwrap-'));
    const fake = join(dir, 'bwrap');
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n', { mode: 0o755 });
    const probe = probeSandbox({ bwrap: fake });
    expect(probe).toMatchObject({ ok: false });
    expect(() => decideConfinement(false, probe)).toThrow(/No permissions to creating new namespace/);
  });

  it('runs unconfined with a warning when workers.allow_unconfined is true', () => {
    const c = decideConfinement(true, probeSandbox({ bwrap: '/nonexistent/bwrap' }));
    expect(c.confined).toBe(false);
    expect(c.warning).toMatch(/WITHOUT Polly's OS sandbox/);
  });

  it.skipIf(!SANDBOXED)('runs confined, with no warning, where the sandbox starts', () => {
    expect(decideConfinement(false, probeSandbox())).toEqual({ confined: true, warning: null });
  });
});

describe('environments by allowlist', () => {
  it('passes the model variables and the passthrough list, never tokens', () => {
    const base = {
      PATH: '/usr/bin',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      ANTHROPIC_API_KEY: 'ak',
      OPENAI_BASE_URL: 'http://x',
      GITHUB_TOKEN: 'ghp_x',
      GH_TOKEN: 'gho_x',
      AWS_SECRET_ACCESS_KEY: 's',
      SSH_AUTH_SOCK: '/run/ssh',
      HOME: '/root',
      MY_VAR: '1',
    };
    const env = workerEnv({ PI_OFFLINE: '1' }, { base, passthrough: ['MY_VAR'], home: '/state/home' });
    expect(env).toEqual({
      PATH: '/usr/bin',
      LANG: 'C.UTF-8',
      LC_ALL: 'C',
      ANTHROPIC_API_KEY: 'ak',
      OPENAI_BASE_URL: 'http://x',
      MY_VAR: '1',
      PI_OFFLINE: '1',
      HOME: '/state/home',
    });
  });
});

describe('agent state dir', () => {
  it('lives under XDG_STATE_HOME (default ~/.local/state), keyed by the repository, outside the temp dir', () => {
    const a = repoStateDir('/work/repo-a', { XDG_STATE_HOME: '/xdg', HOME: '/home/u' });
    expect(a).toMatch(/^\/xdg\/polly\/repo-a-[0-9a-f]{16}$/);
    expect(repoStateDir('/work/repo-b', { XDG_STATE_HOME: '/xdg' })).not.toBe(a);
    expect(repoStateDir('/work/repo-a', { HOME: '/home/u' })).toMatch(/^\/home\/u\/\.local\/state\/polly\/repo-a-/);
  });
});

describe('bwrapArgs', () => {
  it('mounts hidden dirs before the binds inside them, and read-only last at equal depth', () => {
    const spec: SandboxSpec = {
      cwd: '/h/s/wt',
      writable: ['/h/s', '/h/s/wt'],
      readOnly: ['/h/s/gate'],
      hidden: ['/h'],
      home: '/h/s/home',
      tmpDir: null,
      network: { mode: 'none' },
      gitMetadata: { mode: 'read-only' },
    };
    // /h shown by the system view (as a repository's dir bound read-only would be): its cover is needed.
    const args = bwrapArgs(spec, () => true, [], { disableUserns: false }, [], { binds: ['/h'], symlinks: [], masked: [], maskedDirs: [] });
    const order = args.filter((a, i) => ['--tmpfs', '--bind', '--ro-bind'].includes(args[i - 1] ?? '') && a !== '/');
    // The worktree's .git file last (deepest): read-only over the writable worktree (git policy).
    expect(order).toEqual(['/h', '/tmp', '/h', '/h/s', '/h/s/wt', '/h/s/gate', '/h/s/wt/.git']);
    // A hidden path nothing shows gets no cover at all (the root is empty).
    const bare = bwrapArgs(spec, () => true, [], { disableUserns: false }, [], { binds: [], symlinks: [], masked: [], maskedDirs: [] });
    expect(bare.filter((a, i) => bare[i - 1] === '--tmpfs' && a === '/h')).toEqual([]);
    expect(args).toContain('--unshare-net');
    expect(args).not.toContain('--disable-userns');
    expect(args.slice(-2)).toEqual(['--chdir', '/h/s/wt']);
    // A bwrap that supports it (0.8+) also gets a user namespace that can create no other.
    const hardened = bwrapArgs(spec, () => true, [], { disableUserns: true });
    expect(hardened.slice(hardened.indexOf('--unshare-user'), hardened.indexOf('--unshare-user') + 2)).toEqual(['--unshare-user', '--disable-userns']);
  });
});

describe("Claude Code's own sandbox (defence in depth)", () => {
  it('is written only where Polly sandbox is off and claude can start its own', () => {
    const bin = mkdtempSync(join(tmpdir(), 'polly-bin-'));
    for (const b of ['bwrap', 'socat']) writeFileSync(join(bin, b), '#!/bin/sh\n', { mode: 0o755 });
    expect(claudeCodeSandboxSettings({ confined: true, gitDir: '/r/.git', platform: 'darwin' })).toBeNull();
    expect(claudeCodeSandboxSettings({ confined: false, gitDir: '/r/.git', platform: 'darwin' })).toEqual({
      enabled: true,
      failIfUnavailable: true,
      allowUnsandboxedCommands: false,
      filesystem: { denyWrite: ['/r/.git'] },
    });
    expect(claudeCodeSandboxSettings({ confined: false, gitDir: '/r/.git', platform: 'linux', pathVar: bin })).toMatchObject({ enabled: true });
    expect(claudeCodeSandboxSettings({ confined: false, gitDir: '/r/.git', platform: 'linux', pathVar: '/nonexistent' })).toBeNull();
  });
});
