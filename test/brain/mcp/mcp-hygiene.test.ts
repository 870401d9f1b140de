/**
 * `polly mcp` for real hosts, over real stdio: malformed JSON-RPC answered per the spec (raw lines,
 * since the SDK's client cannot send them), an oversize request, unknown arguments, a duplicate
 * workflow and an oversize input each get their documented error while the server keeps serving;
 * `--agent` selects the agent area's own library; the installed entry pins one store, so two hosts
 * started from different directories share one run; an implicit store is refused where it would
 * follow the host's directory; and a server SIGKILLed inside a registry write cannot wedge a live one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { CLI, startMcp, type McpProcess } from '../../helpers/mcp-stdio.js';
import { storedRunJournal, storedRuns } from '../../helpers/stored-runs.js';

const started: McpProcess[] = [];
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  for (const p of started.splice(0)) await p.close().catch(() => undefined);
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A raw `polly mcp` child: write lines, await the reply with a given id (or the next reply with id null). */
function rawServer(args: string[]) {
  const child = spawn(process.execPath, [CLI, 'mcp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] }) as ChildProcessWithoutNullStreams;
  children.push(child);
  let buf = '';
  let stderr = '';
  const replies: Array<Record<string, any>> = [];
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      replies.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
      for (const w of waiters.splice(0)) w();
    }
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // A test that SIGKILLs the server with requests still queued for its stdin gets EPIPE for them:
  // expected there, and without a listener Node would raise it as an uncaught exception in the test run.
  child.stdin.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  const take = async (match: (r: Record<string, any>) => boolean): Promise<Record<string, any>> => {
    for (;;) {
      const i = replies.findIndex(match);
      if (i >= 0) return replies.splice(i, 1)[0]!;
      await new Promise<void>((res) => waiters.push(res));
    }
  };
  return {
    child,
    stderr: () => stderr,
    send: (line: string) => child.stdin.write(`${line}\n`),
    reply: (id: string | number | null) => take((r) => r.id === id),
    /** Replies received and not yet taken. */
    pending: () => [...replies],
  };
}

describe('protocol hygiene', () => {
  it('malformed lines get -32700 / -32600 / -32602, an oversize request -32600 with its id, and the session goes on', async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-hygiene-'));
    const s = rawServer(['--registry', reg]);
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
    expect((await s.reply(1)).result.serverInfo.name).toBe('polly');
    s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));

    s.send('{"jsonrpc": "2.0", "id": 2, "method": ');
    expect((await s.reply(null)).error).toMatchObject({ code: -32700, message: expect.stringContaining('Parse error') });
    s.send('42');
    expect((await s.reply(null)).error).toMatchObject({ code: -32600, message: expect.stringContaining('found number') });
    s.send(JSON.stringify([{ jsonrpc: '2.0', id: 3, method: 'tools/list' }]));
    expect((await s.reply(null)).error).toMatchObject({ code: -32600, message: expect.stringContaining('batches') });
    s.send(JSON.stringify({ id: 4, method: 'tools/list' }));
    expect((await s.reply(4)).error).toMatchObject({ code: -32600, message: expect.stringContaining('"jsonrpc" must be exactly "2.0"') });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call' }));
    expect((await s.reply(5)).error).toMatchObject({ code: -32602, message: expect.stringContaining('tools/call needs params') });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: [1] }));
    expect((await s.reply(6)).error.code).toBe(-32602);
    // Over the 1 MiB line limit: refused with the request's id, the limit and the size.
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'workflow_start', arguments: { workflow: 'polly-task', input: { task: 'a'.repeat(11 * 1024 * 1024) } } },
    });
    s.send(big);
    const tooBig = await s.reply(7);
    expect(tooBig.error).toMatchObject({ code: -32600, data: { bytes: Buffer.byteLength(big), limit: 1024 * 1024 } });
    expect(tooBig.error.message).toContain("over this server's limit of 1048576 bytes");
    // An invalid notification (no id) gets no reply, as JSON-RPC says: the next reply is for request 8.
    s.send(JSON.stringify({ method: 'notifications/whatever' }));
    // Still serving.
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'workflow_list', arguments: {} } }));
    expect((await s.reply(8)).result.structuredContent.workflows.map((w: any) => w.name)).toEqual(['customer-brief', 'polly-task']);
    expect(s.pending()).toEqual([]);
    expect(s.child.exitCode).toBeNull();
  });

  it('unknown arguments, an oversize input and a duplicate workflow each get their documented error; the rest is served', async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-hygiene-dup-'));
    const extra = mkdtempSync(join(tmpdir(), 'polly-dup-wf-'));
    cpSync(join(process.cwd(), 'workflows/customer-brief'), join(extra, 'customer-brief'), { recursive: true });
    cpSync(join(process.cwd(), 'test/fixtures/unsafe-brief'), join(extra, 'unsafe-brief'), { recursive: true });
    const p = await startMcp(['--registry', reg, '--workflows', extra]);
    started.push(p);
    expect(p.stderr()).toContain(`[polly] REFUSED: customer-brief (duplicate name; ${join(extra, 'customer-brief', 'workflow.yaml')})`);
    expect(p.stderr()).toContain(`[polly]   duplicate-name: "customer-brief" is already served from ${join(process.cwd(), 'workflows', 'customer-brief', 'workflow.yaml')}`);
    const list = await p.call('workflow_list');
    expect(list.structured.workflows.map((w: any) => `${w.name}:${w.admitted}`)).toEqual(['customer-brief:true', 'polly-task:true', 'unsafe-brief:false', 'customer-brief:false']);
    const s = await p.call('workflow_start', { workflow: 'customer-brief', input: { channel: '#cs', day: '2026-12-20' } });
    expect(s.structured.status).toBe('started');

    const unknown = await p.call('workflow_report', { run_id: s.structured.run.id, order_id: s.structured.order.id, outcome: 'ok', data: { count: 1 }, confidence: 0.9 });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toContain("Unrecognized key(s) in object: 'confidence'");
    expect((await p.call('workflow_state', { run_id: s.structured.run.id })).structured.run.seq).toBe(1);

    const huge = await p.call('workflow_start', { workflow: 'polly-task', input: { task: 'a'.repeat(100_000) } });
    expect(huge.structured).toMatchObject({ status: 'refused', code: 'too_large', run: null });
    expect(huge.structured.instruction).toContain("over this server's limit of 65536 bytes");
    expect(huge.text.length).toBeLessThan(2000);
    const bigData = await p.call('workflow_report', {
      run_id: s.structured.run.id,
      order_id: s.structured.order.id,
      lease_id: s.structured.lease.id,
      outcome: 'ok',
      data: { count: 1, blob: 'x'.repeat(300_000) },
    });
    expect(bigData.structured).toMatchObject({ accepted: false, code: 'too_large' });
    const fine = await p.call('workflow_report', {
      run_id: s.structured.run.id,
      order_id: s.structured.order.id,
      lease_id: s.structured.lease.id,
      outcome: 'ok',
      data: { count: 1 },
    });
    expect(fine.structured.accepted).toBe(true);
  });

  it("--agent selects the agent area's own library (<store>/agents/AREA/workflows)", async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-agent-lib-'));
    const own = join(reg, 'agents', 'openworker', 'cowork', 'workflows', 'cowork-brief');
    mkdirSync(own, { recursive: true });
    writeFileSync(
      join(own, 'workflow.yaml'),
      readFileSync(join(process.cwd(), 'workflows/customer-brief/workflow.yaml'), 'utf8').replace('name: customer-brief', 'name: cowork-brief'),
    );
    const cowork = await startMcp(['--registry', reg, '--agent', 'openworker/cowork']);
    const other = await startMcp(['--registry', reg, '--agent', 'kiro/crew']);
    started.push(cowork, other);
    const names = async (p: McpProcess) => (await p.call('workflow_list')).structured.workflows.map((w: any) => w.name);
    expect(await names(cowork)).toEqual(['customer-brief', 'polly-task', 'cowork-brief']);
    expect(await names(other)).toEqual(['customer-brief', 'polly-task']);
    const bad = spawnSync(process.execPath, [CLI, 'mcp', '--registry', reg, '--agent', 'a/../../etc'], { encoding: 'utf8', input: '' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('is not a valid area name');
  });
});

describe('one store per installed entry', () => {
  it('two hosts started from different directories with the installed entry share one store and one run', async () => {
    const root = mkdtempSync(join(tmpdir(), 'polly-pin-'));
    const home = join(root, 'home');
    mkdirSync(home);
    const inst = spawnSync(process.execPath, [CLI, 'install', '--host', 'generic', '--agent', 'openworker/cowork', '--workspace', 'acme'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: home },
      encoding: 'utf8',
    });
    expect(inst.status, inst.stderr).toBe(0);
    const entry = JSON.parse(inst.stdout).polly as { command: string; args: string[] };
    const store = join(home, '.polly', 'workspaces', 'acme');
    expect(entry.args.slice(-2)).toEqual(['--registry', store]);
    // Host 1 starts in a plain directory, host 2 inside some git repository: the entry decides the store.
    const dirA = join(root, 'a');
    mkdirSync(dirA);
    const repo = createTestRepo();
    const env: Record<string, string> = { ...(gitTestEnv() as Record<string, string>), HOME: home };
    delete env.POLLY_HOME;
    const h1 = await startMcp(entry.args.slice(2), env, dirA);
    const h2 = await startMcp(entry.args.slice(2), env, repo.dir);
    started.push(h1, h2);
    for (const h of [h1, h2]) expect(h.stderr()).toContain(`[polly] store: ${store} (from --registry)`);
    const input = { workflow: 'customer-brief', input: { channel: '#cs', day: '2026-12-21' } };
    const [r1, r2] = await Promise.all([h1.call('workflow_start', input), h2.call('workflow_start', input)]);
    expect(r1.structured.run.id).toBe(r2.structured.run.id);
    expect([r1.structured.status, r2.structured.status].sort()).toEqual(['attached', 'started']);
    expect(Object.keys(await storedRuns(store))).toEqual([r1.structured.run.id]);
    expect(existsSync(join(repo.dir, '.polly'))).toBe(false);
  });

  it('an implicit store is refused with --workspace, or in a git repository without .polly/; otherwise stderr names it', () => {
    const root = mkdtempSync(join(tmpdir(), 'polly-implicit-'));
    const env: Record<string, string> = { ...(gitTestEnv() as Record<string, string>), HOME: root };
    delete env.POLLY_HOME;
    const ws = spawnSync(process.execPath, [CLI, 'mcp', '--workspace', 'acme'], { cwd: root, env, encoding: 'utf8', input: '' });
    expect(ws.status).toBe(2);
    expect(ws.stderr).toContain('--workspace acme names a workspace but no store');
    expect(ws.stderr).toContain('--registry');
    const repo = createTestRepo();
    const inRepo = spawnSync(process.execPath, [CLI, 'mcp'], { cwd: repo.dir, env, encoding: 'utf8', input: '' });
    expect(inRepo.status).toBe(2);
    expect(inRepo.stderr).toContain('polly init was never run there');
    expect(existsSync(join(repo.dir, '.polly'))).toBe(false);
    const home = spawnSync(process.execPath, [CLI, 'mcp'], { cwd: root, env, encoding: 'utf8', input: '' });
    expect(home.status).toBe(0);
    expect(home.stderr).toContain(`[polly] store: ${join(root, '.polly')} (from the home directory`);
  });
});

describe('store lock', () => {
  it('a server SIGKILLed inside a run store write does not wedge a live second server', async () => {
    const reg = mkdtempSync(join(tmpdir(), 'polly-lock-kill-'));
    // Server 1 is kept busy writing (waves of starts in flight, committed in batches) and killed while the second wave is in flight.
    const s = rawServer(['--registry', reg]);
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
    await s.reply(1);
    const wave = (from: number) => {
      for (let i = from; i < from + 300; i++) {
        s.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 100 + i,
            method: 'tools/call',
            params: { name: 'workflow_start', arguments: { workflow: 'customer-brief', input: { channel: `#k${i}`, day: '2026-12-22' } } },
          }),
        );
      }
    };
    wave(0);
    await s.reply(100);
    wave(300);
    await new Promise((r) => setTimeout(r, Math.random() * 50));
    s.child.kill('SIGKILL');
    await new Promise((r) => s.child.once('exit', r));
    const committed = Object.keys(await storedRuns(reg)).length;
    expect(committed).toBeGreaterThan(0);
    const t0 = Date.now();
    const live = await startMcp(['--registry', reg]);
    started.push(live);
    const r = await live.call('workflow_start', { workflow: 'customer-brief', input: { channel: '#live', day: '2026-12-22' } });
    expect(r.isError, r.text).toBe(false);
    expect(r.structured.status).toBe('started');
    // LMDB recovers the dead writer's lock at once (robust mutex): no stale-lock wait.
    expect(Date.now() - t0).toBeLessThan(12_000);
    const journal = await storedRunJournal(reg);
    expect(journal.map((e) => e.seq)).toEqual(journal.map((_e, i) => i + 1));
    expect(journal.filter((e) => e.kind === 'run.started')).toHaveLength(committed + 1);
  }, 60_000);
});
