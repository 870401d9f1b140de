/**
 * `polly install` per host, run as the real CLI (`node dist/brain/cli.js install …`) with a temp
 * HOME, COWORKER_STATE_DIR and working directory. Merges keep every other entry byte-for-byte;
 * unparseable files are refused and left unchanged; the written Claude Code entry really starts
 * a working MCP server.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI } from '../../helpers/mcp-stdio.js';

function sandbox() {
  const root = mkdtempSync(join(tmpdir(), 'polly-install-'));
  const home = join(root, 'home');
  const cwd = join(root, 'project');
  mkdirSync(home);
  mkdirSync(cwd);
  return { root, home, cwd };
}

function install(args: string[], s: { home: string; cwd: string }, extraEnv: Record<string, string> = {}) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: s.home, ...extraEnv };
  const r = spawnSync(process.execPath, [CLI, 'install', ...args], { cwd: s.cwd, env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Another host entry, formatted oddly on purpose: its bytes must survive the merge.
const PREFIX = '{\n    "mcpServers": {\n        "other":   { "command": "x",  "args": ["a"] },\n        "another": {"command":"y"}';
const SUFFIX = '\n    },\n    "extra": [1,2,  3]\n}\n';

describe('polly install', () => {
  it('claude-code: merges into ./.mcp.json keeping other entries byte-for-byte; the entry starts a working server', async () => {
    const s = sandbox();
    const file = join(s.cwd, '.mcp.json');
    writeFileSync(file, PREFIX + SUFFIX);
    const r = install(['--host', 'claude-code', '--agent', 'claude/code', '--workspace', 'acme'], s);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`added the "polly" entry in ${file}`);
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith(PREFIX)).toBe(true);
    expect(text.endsWith(SUFFIX)).toBe(true);
    const entry = JSON.parse(text).mcpServers.polly;
    // The store is pinned: an absolute directory per workspace (no --registry, no POLLY_HOME: ~/.polly/workspaces/W).
    expect(entry).toMatchObject({
      type: 'stdio',
      command: process.execPath,
      args: [CLI, 'mcp', '--agent', 'claude/code', '--workspace', 'acme', '--registry', join(s.home, '.polly', 'workspaces', 'acme')],
    });
    expect(JSON.parse(text).mcpServers.other).toEqual({ command: 'x', args: ['a'] });

    // Idempotent: a second install leaves the bytes alone.
    const again = install(['--host', 'claude-code', '--agent', 'claude/code', '--workspace', 'acme'], s);
    expect(again.stdout).toContain('unchanged');
    expect(readFileSync(file, 'utf8')).toBe(text);
    // A changed workspace updates only Polly's entry.
    install(['--host', 'claude-code', '--agent', 'claude/code', '--workspace', 'beta'], s);
    const updated = readFileSync(file, 'utf8');
    expect(updated.startsWith(PREFIX)).toBe(true);
    expect(updated.endsWith(SUFFIX)).toBe(true);
    expect(JSON.parse(updated).mcpServers.polly.args.slice(-3)).toEqual(['beta', '--registry', join(s.home, '.polly', 'workspaces', 'beta')]);

    // The entry as written is a real MCP server, on its pinned store.
    const transport = new StdioClientTransport({
      command: entry.command,
      args: JSON.parse(updated).mcpServers.polly.args,
      env: { PATH: process.env.PATH ?? '', HOME: s.home },
      cwd: s.cwd,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'install-test', version: '1' });
    await client.connect(transport);
    try {
      const list = await client.callTool({ name: 'workflow_list', arguments: {} });
      expect(list.structuredContent).toMatchObject({ agentArea: 'claude/code', instanceArea: 'beta' });
    } finally {
      await client.close();
    }
  });

  it('claude-code has no user scope: refused with what to do instead', () => {
    const s = sandbox();
    const r = install(['--host', 'claude-code', '--scope', 'user'], s);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('claude mcp add --scope user');
    expect(existsSync(join(s.cwd, '.mcp.json'))).toBe(false);
  });

  it('kiro: user scope writes ~/.kiro/settings/mcp.json, workspace scope ./.kiro/settings/mcp.json, merging', () => {
    const s = sandbox();
    const user = install(['--host', 'kiro'], s);
    expect(user.code, user.stderr).toBe(0);
    const userFile = join(s.home, '.kiro', 'settings', 'mcp.json');
    expect(JSON.parse(readFileSync(userFile, 'utf8')).mcpServers.polly).toMatchObject({
      command: process.execPath,
      disabled: false,
      autoApprove: ['workflow_list', 'workflow_state', 'workflow_journal'],
    });
    const wsFile = join(s.cwd, '.kiro', 'settings', 'mcp.json');
    mkdirSync(join(s.cwd, '.kiro', 'settings'), { recursive: true });
    writeFileSync(wsFile, PREFIX + SUFFIX);
    const ws = install(['--host', 'kiro', '--scope', 'workspace', '--workspace', 'crew'], s);
    expect(ws.code, ws.stderr).toBe(0);
    const text = readFileSync(wsFile, 'utf8');
    expect(text.startsWith(PREFIX) && text.endsWith(SUFFIX)).toBe(true);
    expect(JSON.parse(text).mcpServers.polly.args).toContain('crew');
  });

  it('openworker: ~/.config/coworker/mcp.json, or $COWORKER_STATE_DIR/mcp.json; requires_approval false, tool_risk for read-only tools', () => {
    const s = sandbox();
    const r = install(['--host', 'openworker', '--agent', 'openworker/cowork', '--workspace', 'acme'], s);
    expect(r.code, r.stderr).toBe(0);
    const entry = JSON.parse(readFileSync(join(s.home, '.config', 'coworker', 'mcp.json'), 'utf8')).mcpServers.polly;
    // OpenWorker's per-tool risk patch accepts low | medium | high.
    expect(entry).toMatchObject({ requires_approval: false, tool_risk: { workflow_list: 'low', workflow_state: 'low', workflow_journal: 'low' } });
    expect(entry.args).toEqual([CLI, 'mcp', '--agent', 'openworker/cowork', '--workspace', 'acme', '--registry', join(s.home, '.polly', 'workspaces', 'acme')]);

    const state = join(s.root, 'coworker-state');
    mkdirSync(state);
    writeFileSync(join(state, 'mcp.json'), PREFIX + SUFFIX);
    const o = install(['--host', 'openworker'], s, { COWORKER_STATE_DIR: state });
    expect(o.code, o.stderr).toBe(0);
    const text = readFileSync(join(state, 'mcp.json'), 'utf8');
    expect(text.startsWith(PREFIX) && text.endsWith(SUFFIX)).toBe(true);
  });

  it('an unparseable file (or mcpServers that is not an object) is refused, unchanged, exit 2 with file:line:col', () => {
    const s = sandbox();
    const file = join(s.cwd, '.mcp.json');
    const broken = '{\n  "mcpServers": {\n    "other": {"command": "x"},\n  }\n}\n';
    writeFileSync(file, broken);
    const r = install(['--host', 'claude-code'], s);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4:3: cannot parse the file as JSON`));
    expect(r.stderr).toContain('left unchanged');
    expect(readFileSync(file, 'utf8')).toBe(broken);

    const wrong = '{"mcpServers": ["not", "a", "map"]}\n';
    writeFileSync(file, wrong);
    const w = install(['--host', 'claude-code'], s);
    expect(w.code).toBe(2);
    expect(w.stderr).toContain('"mcpServers" is not an object');
    expect(readFileSync(file, 'utf8')).toBe(wrong);
  });

  it('--print shows the entry and the target path and writes nothing', () => {
    const s = sandbox();
    const r = install(['--host', 'kiro', '--print'], s);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`would create ${join(s.home, '.kiro', 'settings', 'mcp.json')}`);
    expect(JSON.parse(r.stdout.split('\n').slice(1).join('\n')).mcpServers.polly.command).toBe(process.execPath);
    expect(existsSync(join(s.home, '.kiro'))).toBe(false);
  });

  it('generic prints the entry; nemo prints mcp_client YAML; registry prints the AWS CLI call', () => {
    const s = sandbox();
    const g = install(['--host', 'generic', '--workspace', 'w1'], s);
    expect(g.code).toBe(0);
    expect(JSON.parse(g.stdout).polly.args).toEqual([CLI, 'mcp', '--agent', 'default', '--workspace', 'w1', '--registry', join(s.home, '.polly', 'workspaces', 'w1')]);
    // --registry (relative) and POLLY_HOME are pinned as absolute paths.
    expect(JSON.parse(install(['--host', 'generic', '--registry', 'stores/one'], s).stdout).polly.args.slice(-2)).toEqual(['--registry', join(s.cwd, 'stores', 'one')]);
    expect(JSON.parse(install(['--host', 'generic'], s, { POLLY_HOME: '/srv/polly' }).stdout).polly.args.slice(-2)).toEqual(['--registry', '/srv/polly']);

    const n = install(['--host', 'nemo'], s);
    expect(n.code).toBe(0);
    const y = parseYaml(n.stdout) as any;
    expect(y.function_groups.polly).toMatchObject({ _type: 'mcp_client', server: { transport: 'stdio', command: process.execPath } });
    expect(y.function_groups.polly.server.args).toEqual([
      CLI,
      'mcp',
      '--agent',
      'default',
      '--workspace',
      'default',
      '--registry',
      join(s.home, '.polly', 'workspaces', 'default'),
    ]);
    expect(y.workflow.tool_names).toEqual(['polly']);

    const a = install(['--host', 'registry'], s);
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/^aws agent-registry-control create-registry-record \\\n/);
    expect(a.stdout).toContain('--record-type MCP');
    const desc = /--descriptors '(.*)'/.exec(a.stdout)![1]!;
    const server = JSON.parse(JSON.parse(desc.replace(/'\\''/g, "'")).mcpServer.data);
    expect(server).toMatchObject({ name: 'polly', transport: { type: 'stdio', command: process.execPath } });
    expect(existsSync(join(s.cwd, '.mcp.json'))).toBe(false);
  });

  it('an unknown host or scope is bad input (exit 2) naming the choices', () => {
    const s = sandbox();
    const r = install(['--host', 'cursor'], s);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('claude-code, kiro, openworker, generic, nemo, registry');
  });
});
