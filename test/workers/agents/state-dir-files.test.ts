/**
 * Polly writes agent config (pi's settings.json/models.json, Claude Code's .claude.json and empty
 * MCP config) outside the sandbox, in an agent state dir the worker can write between turns. A
 * hostile worker plants symlinks there, pointing at the user's git hook, a packed-only `main`, or a
 * secret; Polly's writes and reads must not go through them (found by an attacker's pass). Ground
 * truth: the targets' bytes, and that no file appears where a dangling symlink pointed.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareClaudeConfigDir } from '../../../workers/agents/claude-code-adapter.js';
import { writePiAgentConfig } from '../../../workers/agents/pi-adapter.js';
import { ensureDirBelow, readFileBelow, readRegularFile, writeFileBelow } from '../../../workers/agents/state-dir-files.js';

function place() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-statedir-')));
  const state = join(root, 'state');
  const outside = join(root, 'user');
  mkdirSync(state);
  mkdirSync(join(outside, '.git', 'hooks'), { recursive: true });
  const hook = join(outside, '.git', 'hooks', 'pre-commit');
  writeFileSync(hook, '#!/bin/sh\nexit 0\n');
  chmodSync(hook, 0o755);
  const secret = join(outside, 'secret.json');
  writeFileSync(secret, '{"token": "s3cr3t"}\n');
  return { state, outside, hook, secret };
}

describe('files Polly writes in a worker-writable agent state dir', () => {
  it("pi: a settings.json symlinked to the user's hook, and a pi dir symlinked into .git/hooks, are replaced, never written through; a symlinked models.json is not read", () => {
    const { state, outside, hook, secret } = place();
    mkdirSync(join(state, 'pi'));
    symlinkSync(hook, join(state, 'pi', 'settings.json'));
    symlinkSync(secret, join(state, 'pi', 'models.json'));
    writePiAgentConfig(join(state, 'pi'), 'polly', { baseUrl: 'http://127.0.0.1:1/v1', api: 'anthropic-messages', apiKeyEnv: 'PI_KEY', models: ['m'] });
    expect(readFileSync(hook, 'utf8')).toBe('#!/bin/sh\nexit 0\n');
    expect(readFileSync(secret, 'utf8')).toBe('{"token": "s3cr3t"}\n');
    expect(lstatSync(join(state, 'pi', 'settings.json')).isFile()).toBe(true);
    expect(JSON.parse(readFileSync(join(state, 'pi', 'settings.json'), 'utf8'))).toMatchObject({ quietStartup: true });
    expect(readFileSync(join(state, 'pi', 'models.json'), 'utf8')).not.toContain('s3cr3t');

    // The whole pi dir a symlink into the user's hooks: replaced by a real dir, nothing lands in hooks.
    const s2 = place();
    symlinkSync(join(s2.outside, '.git', 'hooks'), join(s2.state, 'pi'));
    writePiAgentConfig(join(s2.state, 'pi'), 'polly', null);
    expect(lstatSync(join(s2.state, 'pi')).isDirectory()).toBe(true);
    expect(existsSync(join(s2.outside, '.git', 'hooks', 'settings.json'))).toBe(false);
    expect(outside).not.toBe(s2.outside);
  });

  it('claude: a dangling symlink at polly-empty-mcp.json or .claude.json creates nothing at its target (a loose ref over a packed main), and a symlinked config dir is replaced', () => {
    const { state, outside } = place();
    const looseMain = join(outside, '.git', 'refs', 'heads', 'main');
    mkdirSync(join(outside, '.git', 'refs', 'heads'), { recursive: true });
    mkdirSync(join(state, 'claude'));
    symlinkSync(looseMain, join(state, 'claude', 'polly-empty-mcp.json'));
    symlinkSync(join(outside, 'planted.json'), join(state, 'claude', '.claude.json'));
    const { emptyMcpConfig } = prepareClaudeConfigDir(state);
    expect(existsSync(looseMain)).toBe(false);
    expect(existsSync(join(outside, 'planted.json'))).toBe(false);
    expect(lstatSync(emptyMcpConfig).isFile()).toBe(true);
    expect(readFileSync(emptyMcpConfig, 'utf8')).toBe('{"mcpServers": {}}\n');

    const s2 = place();
    symlinkSync(join(s2.outside, '.git', 'hooks'), join(s2.state, 'claude'));
    prepareClaudeConfigDir(s2.state);
    expect(lstatSync(join(s2.state, 'claude')).isDirectory()).toBe(true);
    expect(existsSync(join(s2.outside, '.git', 'hooks', 'polly-empty-mcp.json'))).toBe(false);
  });

  it('the helpers refuse a path outside the state dir and read a symlink as absent', () => {
    const { state, secret } = place();
    expect(() => writeFileBelow(state, join(state, '..', 'x.json'), '{}')).toThrow(/is not inside the agent state dir/);
    expect(() => ensureDirBelow(state, '/etc')).toThrow(/is not inside the agent state dir/);
    symlinkSync(secret, join(state, 'link.json'));
    expect(readFileBelow(state, join(state, 'link.json'))).toBeNull();
    writeFileBelow(state, join(state, 'a', 'b', 'c.json'), '{"ok":1}');
    expect(readFileBelow(state, join(state, 'a', 'b', 'c.json'))).toBe('{"ok":1}');
  });
  it('a worker-written file larger than the cap is not read: a sparse 2 GB file would hold Polly ~30 s and take 2 GB', () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'polly-state-big-')));
    const big = join(root, 'rollout.jsonl');
    writeFileSync(big, '');
    truncateSync(big, 2000 * 1024 * 1024); // sparse: costs no disk
    expect(readFileBelow(root, big)).toBeNull(); // before the cap: read 2 GB, then threw ERR_STRING_TOO_LONG
    expect(readRegularFile(big, 4)).toBeNull();
    writeFileSync(join(root, 'small'), 'ok');
    expect(readRegularFile(join(root, 'small'), 4)?.toString()).toBe('ok');
  });
});
