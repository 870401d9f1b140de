// config.yaml: the commented defaults `polly init` writes, and validation with file:line:column.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CONFIG_COMMENTS, configKeyPaths, loadConfig, parseConfig, renderDefaultConfig } from '../../../brain/config/config.js';
import { DEFAULT_CONFIG } from '../../../brain/config/config-schema.js';
import { isPollyError, type PollyError } from '../../../brain/core/errors.js';

function configError(text: string, file = 'cfg.yaml'): PollyError {
  try {
    parseConfig(text, file);
  } catch (error) {
    if (isPollyError(error)) return error;
    throw error;
  }
  throw new Error(`expected config_invalid for:\n${text}`);
}

describe('default config', () => {
  const rendered = renderDefaultConfig();

  it('parses back to exactly DEFAULT_CONFIG, with plain YAML readers too', () => {
    expect(parseConfig(rendered, 'x')).toEqual(DEFAULT_CONFIG);
    expect(parse(rendered)).toEqual(DEFAULT_CONFIG);
  });

  it('comments every key, and each comment appears above its key', () => {
    const paths = configKeyPaths();
    expect(paths.length).toBeGreaterThan(30);
    expect(paths.filter((p) => !CONFIG_COMMENTS[p])).toEqual([]);
    expect(Object.keys(CONFIG_COMMENTS).filter((p) => !paths.includes(p))).toEqual([]);
    const lines = rendered.split('\n');
    for (const p of paths) {
      const key = p.split('.').pop()!;
      const first = CONFIG_COMMENTS[p]!.split('\n')[0]!;
      const keyLine = lines.findIndex((l, i) => l.trim().startsWith(`${key}:`) && lines[i - 1]?.trim() === `# ${CONFIG_COMMENTS[p]!.split('\n').pop()}`);
      expect(keyLine, `comment for ${p}`).toBeGreaterThan(0);
      expect(rendered).toContain(`# ${first}`);
    }
  });

  it('carries the seed policy values and the IS_SANDBOX note', () => {
    expect(rendered).toMatch(/blast_radius:\n(\s+#.*\n)+\s+gate_pushes: false/);
    expect(rendered).toMatch(/max_dispatches_per_turn: 5\n/);
    expect(rendered).toMatch(/ask_timeout: 86400\n/);
    for (const p of ['implement', 'review', 'explore', 'search']) expect(rendered).toContain(`- ${p}\n`);
    for (const w of ['claude-code:', 'codex:', 'pi:']) expect(rendered).toContain(`\n  ${w}\n`);
    expect(rendered).toContain('IS_SANDBOX=1');
    expect(rendered).toContain('as root');
    expect(rendered).toMatch(/acceptance:\n(\s+#.*\n)+\s+commands:\n\s+- npm test/);
  });
});

describe('parseConfig', () => {
  it('merges a partial file over the defaults (lists replace, maps merge)', () => {
    const cfg = parseConfig('policies:\n  ask_timeout: 60\nacceptance:\n  commands: [make check]\nworkers:\n  pi:\n    model: some-model\n', 'x');
    expect(cfg.policies.ask_timeout).toBe(60);
    expect(cfg.policies.spawn_bounds.max_dispatches_per_turn).toBe(5);
    expect(cfg.acceptance.commands).toEqual(['make check']);
    expect(cfg.acceptance.timeout).toBe(600);
    expect(cfg.workers.pi).toEqual({ command: 'pi', model: 'some-model', provider: null, base_url: null, api: 'openai-completions', api_key_env: 'OPENAI_API_KEY' });
    expect(parseConfig('', 'x')).toEqual(DEFAULT_CONFIG);
    expect(parseConfig('# only a comment\n', 'x')).toEqual(DEFAULT_CONFIG);
  });

  it('an unknown key is config_invalid at its line:column with the key path and the accepted keys', () => {
    const err = configError('version: 1\npolicies:\n  spawn_bounds:\n    max_dispatch: 3\n');
    expect(err.code).toBe('config_invalid');
    expect(err.message).toContain('cfg.yaml:4:5: policies.spawn_bounds.max_dispatch: unknown key "max_dispatch"');
    expect(err.message).toContain('max_dispatches_per_turn');
    expect(err.details).toMatchObject({ file: 'cfg.yaml', line: 4, column: 5 });
  });

  it('wrong types and out-of-range values name the value and what is accepted', () => {
    expect(configError('policies:\n  ask_timeout: soon\n').message).toContain('cfg.yaml:2:16: policies.ask_timeout: expected an integer >= 1, found "soon"');
    expect(configError('policies:\n  spawn_bounds:\n    max_dispatches_per_turn: 0\n').message).toContain('cfg.yaml:3:30');
    expect(configError('policies:\n  blast_radius:\n    gate_pushes: "no"\n').message).toContain('expected true or false, found "no"');
    expect(configError('policies:\n  purpose_guard:\n    allowed: [implement, deploy]\n').message).toContain(
      'policies.purpose_guard.allowed[1]: expected one of implement, review, explore, search, found "deploy"',
    );
    expect(configError('workers:\n  pi:\n    command:\n').message).toContain('workers.pi.command: expected a string, found');
    expect(configError('version: 2\n').message).toContain('version: expected 1, found 2');
    expect(configError('- a\n- b\n').message).toContain('(top level): expected a mapping, found a list');
    expect(configError('forge:\n  kind: gitlab\n').message).toContain('expected one of auto, local, github');
  });

  it('checks cross-field rules: no same-vendor review, read_only within allowed, complete provider objects', () => {
    expect(configError('review:\n  pairs:\n    codex: [codex]\n').message).toContain('review.pairs.codex');
    expect(configError('policies:\n  purpose_guard:\n    allowed: [implement, review]\n').message).toContain('explore, search is not in policies.purpose_guard.allowed');
    expect(configError('workers:\n  codex:\n    provider:\n      id: local\n').message).toContain('missing "base_url", "env_key"');
    const ok = parseConfig('workers:\n  codex:\n    provider: {id: local, base_url: "http://127.0.0.1:9/v1", env_key: LOCAL_KEY}\n', 'x');
    expect(ok.workers.codex.provider).toEqual({ id: 'local', base_url: 'http://127.0.0.1:9/v1', env_key: 'LOCAL_KEY' });
  });

  it('YAML syntax errors and duplicate keys are config_invalid with a position', () => {
    const syntax = configError('policies:\n  ask_timeout: [1, 2\n');
    expect(syntax.code).toBe('config_invalid');
    expect(syntax.message).toMatch(/^cfg\.yaml:\d+:\d+: not valid YAML/);
    expect(configError('version: 1\nversion: 1\n').message).toMatch(/^cfg\.yaml:2:1: not valid YAML/);
    expect(configError('a: &x 1\nversion: *x\n').message).toMatch(/unknown key "a"|aliases/);
  });
});

describe('worker commands', () => {
  it('a name on PATH and an absolute path are taken; a relative path is config_invalid at its line, with the absolute path to write', () => {
    expect(parseConfig('workers:\n  pi:\n    command: pi-nightly\n', '/r/.polly/config.yaml').workers.pi.command).toBe('pi-nightly');
    expect(parseConfig('workers:\n  codex:\n    command: /opt/codex/bin/codex\n', '/r/.polly/config.yaml').workers.codex.command).toBe('/opt/codex/bin/codex');
    const err = configError('workers:\n  claude-code:\n    command: ./tools/claude\n', '/r/.polly/config.yaml');
    expect(err.code).toBe('config_invalid');
    expect(err.message).toContain('/r/.polly/config.yaml:3:14: workers.claude-code.command: "./tools/claude" is a relative path');
    expect(err.message).toContain('"/r/tools/claude"');
  });
});

describe('loadConfig', () => {
  it('gives the defaults without a file and names the real file in errors', async () => {
    const root = mkdtempSync(join(tmpdir(), 'polly-cfg-'));
    expect(await loadConfig(root)).toEqual(DEFAULT_CONFIG);
    mkdirSync(join(root, '.polly'));
    const file = join(root, '.polly', 'config.yaml');
    writeFileSync(file, 'policies:\n  spawn_bounds:\n    max_dispatches_per_turn: 2\n');
    expect((await loadConfig(root)).policies.spawn_bounds.max_dispatches_per_turn).toBe(2);
    writeFileSync(file, 'polices: {}\n');
    await expect(loadConfig(root)).rejects.toThrow(`${file}:1:1: polices: unknown key "polices"`);
  });
});
