/**
 * Areas and stores of `polly mcp` over stdio: workspaces sharing one store through POLLY_HOME keep
 * distinct runs for the same input; separate --registry directories keep runs apart; inside a git
 * repository the default store is `<repo>/.polly` and `.polly/workflows/*` joins the library
 * (admitted or refused like the built-ins).
 */
import { describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storedRuns } from '../../helpers/stored-runs.js';
import { runIdFor } from '../../../workflows/run/run-identity.js';
import { createTestRepo, gitTestEnv } from '../../helpers/git-repo.js';
import { startMcp } from '../../helpers/mcp-stdio.js';

const INPUT = { channel: '#cs', day: '2026-11-30' };

describe('polly mcp areas and stores', () => {
  it('two workspaces on one POLLY_HOME: same input, two runs in one store; a separate --registry keeps its runs apart', async () => {
    const home = mkdtempSync(join(tmpdir(), 'polly-home-'));
    const acme = await startMcp(['--agent', 'openworker/cowork', '--workspace', 'acme'], { POLLY_HOME: home });
    const beta = await startMcp(['--agent', 'openworker/cowork', '--workspace', 'beta'], { POLLY_HOME: home });
    const apart = mkdtempSync(join(tmpdir(), 'polly-apart-'));
    const other = await startMcp(['--agent', 'openworker/cowork', '--workspace', 'acme', '--registry', apart], { POLLY_HOME: home });
    try {
      const a = await acme.call('workflow_start', { workflow: 'customer-brief', input: INPUT });
      const b = await beta.call('workflow_start', { workflow: 'customer-brief', input: INPUT });
      expect(a.structured.run.id).toBe(runIdFor('openworker/cowork', 'acme', 'customer-brief', 'brief:#cs:2026-11-30'));
      expect(b.structured.run.id).toBe(runIdFor('openworker/cowork', 'beta', 'customer-brief', 'brief:#cs:2026-11-30'));
      expect(a.structured.run.id).not.toBe(b.structured.run.id);
      expect(Object.keys(await storedRuns(home)).sort()).toEqual([a.structured.run.id, b.structured.run.id].sort());
      // Same areas, other store: a fresh run there, nothing shared.
      const o = await other.call('workflow_start', { workflow: 'customer-brief', input: INPUT });
      expect(o.structured.status).toBe('started');
      expect(o.structured.run.id).toBe(a.structured.run.id);
      expect(Object.keys(await storedRuns(apart))).toEqual([o.structured.run.id]);
      expect(other.stderr()).toContain(`registry ${apart}`);
      // The order is leased to acme's session: beta cannot report it, acme can, and both see the run move through the shared store.
      const stolen = await beta.call('workflow_report', { run_id: a.structured.run.id, order_id: a.structured.order.id, outcome: 'ok', data: { count: 1 } });
      expect(stolen.structured).toMatchObject({ accepted: false, code: 'lease_held' });
      await acme.call('workflow_report', { run_id: a.structured.run.id, order_id: a.structured.order.id, lease_id: a.structured.lease.id, outcome: 'ok', data: { count: 1 } });
      expect((await acme.call('workflow_state', { run_id: a.structured.run.id })).structured.order.kind).toBe('ask_approval');
      expect((await beta.call('workflow_state', { run_id: a.structured.run.id })).structured).toMatchObject({ order: null, run: { state: { state: 'review' } } });
    } catch (e) {
      console.log('ACME', acme.stderr(), 'BETA', beta.stderr(), 'OTHER', other.stderr());
      throw e;
    } finally {
      await Promise.all([acme.close(), beta.close(), other.close()]);
    }
  });

  it('inside a git repository: the store is <repo>/.polly and .polly/workflows joins the library', async () => {
    const repo = createTestRepo();
    const wfDir = join(repo.dir, '.polly', 'workflows');
    mkdirSync(join(wfDir, 'team-brief'), { recursive: true });
    writeFileSync(
      join(wfDir, 'team-brief', 'workflow.yaml'),
      readFileSync(join(process.cwd(), 'workflows/customer-brief/workflow.yaml'), 'utf8').replace('name: customer-brief', 'name: team-brief'),
    );
    cpSync(join(process.cwd(), 'test/fixtures/unsafe-brief'), join(wfDir, 'unsafe-brief'), { recursive: true });
    const env = gitTestEnv() as Record<string, string>;
    delete env.POLLY_HOME;
    const mcp = await startMcp([], env, repo.dir);
    try {
      expect(mcp.stderr()).toContain('[polly] admitted: team-brief');
      expect(mcp.stderr()).toContain('[polly] REFUSED: unsafe-brief');
      const list = await mcp.call('workflow_list');
      expect(list.structured.workflows.map((w: any) => `${w.name}:${w.admitted}`)).toEqual(['customer-brief:true', 'polly-task:true', 'team-brief:true', 'unsafe-brief:false']);
      const s = await mcp.call('workflow_start', { workflow: 'team-brief', input: INPUT });
      expect(s.structured.status).toBe('started');
      expect((await storedRuns(join(repo.dir, '.polly')))[s.structured.run.id]).toMatchObject({ workflow: 'team-brief', agentArea: 'default', instanceArea: 'default' });
    } finally {
      await mcp.close();
    }
  });

  it('bad flags are bad input (exit 2) naming the flag', async () => {
    const { spawnSync } = await import('node:child_process');
    const cwd = mkdtempSync(join(tmpdir(), 'polly-mcp-flags-'));
    const r = spawnSync(process.execPath, [join(process.cwd(), 'dist/brain/cli.js'), 'mcp', '--workspace', 'no spaces'], { encoding: 'utf8', input: '', cwd });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--workspace "no spaces" is not a valid area name');
    const w = spawnSync(process.execPath, [join(process.cwd(), 'dist/brain/cli.js'), 'mcp', '--workflows', '/nonexistent/wf'], { encoding: 'utf8', input: '', cwd });
    expect(w.status).toBe(2);
    expect(w.stderr).toContain('--workflows "/nonexistent/wf" does not exist');
  });
});
