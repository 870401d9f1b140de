/**
 * Registering `polly mcp` with MCP hosts: the entry each host needs, where its file lives, and a
 * merge that changes only Polly's own entry.
 *
 * Host formats (from each host's documented configuration; only the file hosts are written):
 * - Claude Code: project `./.mcp.json`, `{"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"}}}`
 *   (docs.claude.com, "Connect Claude Code to tools via MCP", project scope).
 * - Kiro: `~/.kiro/settings/mcp.json` (user) or `./.kiro/settings/mcp.json` (workspace; wins on a
 *   name clash), `{"mcpServers": {NAME: {"command", "args", "env", "disabled", "autoApprove"}}}` (kiro.dev/docs/mcp/configuration).
 * - OpenWorker: its global `mcp.json` (`$COWORKER_STATE_DIR/mcp.json`, else `%APPDATA%\coworker\mcp.json`
 *   on Windows, else `~/.config/coworker/mcp.json`), the same `mcpServers` map; the entry sets
 *   `requires_approval: false` (Polly's tools touch nothing outside the registry) and `tool_risk`
 *   `low` for {@link LOW_RISK_TOOLS} (the per-tool risk patch, polyflow's
 *   upstream/0001-mcp-per-tool-risk-level.patch, accepts `low` | `medium` | `high`; OpenWorker
 *   without the patch ignores the field).
 *
 * Every entry pins the store: its args carry `--registry <absolute dir>`, so the server uses one
 * store whatever directory the host starts it in (see brain/commands/mcp.ts for why an implicit
 * store is refused with `--workspace`).
 * - generic: the entry alone, printed.
 * - nemo: YAML for a NeMo Agent Toolkit workflow: a function group of `_type: mcp_client` with a
 *   stdio `server`, added to the workflow's `tool_names` (docs.nvidia.com/nemo/agent-toolkit, "MCP Client"; needs nvidia-nat-mcp).
 * - registry: an `aws agent-registry-control create-registry-record` call with `--record-type MCP`
 *   and an `mcpServer` descriptor (AWS Agent Registry is a catalog; a stdio server cannot be
 *   synchronised from a URL, so the record is manual).
 *
 * The merge parses with jsonc-parser's tree (offsets) and splices Polly's entry into the text:
 * every byte outside Polly's entry stays as it was. A file that does not parse, or whose `mcpServers` is not an object, is
 * refused and left untouched.
 */
import { parseTree, printParseErrorCode, findNodeAtLocation, type ParseError } from 'jsonc-parser';
import { isAbsolute, join, resolve } from 'node:path';
import { PollyError } from '../core/errors.js';

export const HOSTS = ['claude-code', 'kiro', 'openworker', 'generic', 'nemo', 'registry'] as const;
export type Host = (typeof HOSTS)[number];
export type Scope = 'user' | 'workspace';

/** The name Polly's entry has in every host (tools appear as `mcp__polly__<tool>`). */
export const SERVER_NAME = 'polly';

/** The command a host runs: `node <dist/brain/cli.js> mcp --agent A --workspace W --registry DIR`. */
export interface ServerCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * The tools a host may run without asking (Kiro's `autoApprove`, OpenWorker's `tool_risk: low`): they
 * change no run. workflow_list and workflow_journal only read; workflow_state also leases the open
 * order to the caller, which is why its readOnlyHint is false (docs/mcp.md).
 */
export const LOW_RISK_TOOLS = ['workflow_list', 'workflow_state', 'workflow_journal'];

/** The risk levels OpenWorker's per-tool risk patch accepts for `tool_risk` values. */
export const OPENWORKER_RISKS = ['low', 'medium', 'high'] as const;

/**
 * Build the server command for an agent area, a workspace and its store.
 * @param registry the store directory; must be absolute (it is pinned in the host's entry).
 * @throws PollyError `internal` for a relative store path.
 */
export function serverCommand(nodePath: string, cliPath: string, agent: string, workspace: string, registry: string, env: Record<string, string> = {}): ServerCommand {
  if (!isAbsolute(registry))
    throw new PollyError('internal', `serverCommand: the store path ${JSON.stringify(registry)} is not absolute; resolve it before pinning it in a host entry.`);
  return { command: nodePath, args: [cliPath, 'mcp', '--agent', agent, '--workspace', workspace, '--registry', registry], env };
}

/**
 * The store an installed entry pins: `--registry DIR`, else `$POLLY_HOME`, else
 * `~/.polly/workspaces/<workspace>` (one store per workspace), resolved to an absolute path.
 */
export function defaultStoreDir(workspace: string, cwd: string, env: NodeJS.ProcessEnv, registry?: string): string {
  if (registry) return resolve(cwd, registry);
  if (env.POLLY_HOME) return resolve(cwd, env.POLLY_HOME);
  return join(env.HOME ?? env.USERPROFILE ?? cwd, '.polly', 'workspaces', ...workspace.split('/'));
}

/** The host's entry object for `mcpServers.polly`. */
export function hostEntry(host: Host, cmd: ServerCommand): Record<string, unknown> {
  switch (host) {
    case 'claude-code':
      return { type: 'stdio', command: cmd.command, args: cmd.args, env: cmd.env };
    case 'kiro':
      return { command: cmd.command, args: cmd.args, env: cmd.env, disabled: false, autoApprove: LOW_RISK_TOOLS };
    case 'openworker':
      return {
        command: cmd.command,
        args: cmd.args,
        env: cmd.env,
        requires_approval: false,
        tool_risk: Object.fromEntries(LOW_RISK_TOOLS.map((t) => [t, 'low' satisfies (typeof OPENWORKER_RISKS)[number]])),
      };
    default:
      return { command: cmd.command, args: cmd.args, env: cmd.env };
  }
}

/**
 * The file a host reads, or null for hosts that are printed, not written.
 * @param env   HOME, APPDATA, COWORKER_STATE_DIR are read from here.
 * @throws PollyError `bad_input` for a scope the host does not have (Claude Code: workspace only;
 *         OpenWorker: user only).
 */
export function hostConfigPath(host: Host, scope: Scope | undefined, cwd: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string | null {
  const home = env.HOME ?? env.USERPROFILE ?? '';
  switch (host) {
    case 'claude-code':
      if (scope === 'user')
        throw new PollyError(
          'bad_input',
          'polly install: --host claude-code writes the project file ./.mcp.json only (--scope workspace). For a user-wide entry run "claude mcp add --scope user polly -- <command>" with the command "polly install --host generic" prints.',
          { details: { flag: '--scope' } },
        );
      return join(cwd, '.mcp.json');
    case 'kiro':
      return scope === 'workspace' ? join(cwd, '.kiro', 'settings', 'mcp.json') : join(home, '.kiro', 'settings', 'mcp.json');
    case 'openworker':
      if (scope === 'workspace')
        throw new PollyError('bad_input', 'polly install: OpenWorker reads one global mcp.json (--scope user); use --workspace NAME to keep runs of different workspaces apart.', {
          details: { flag: '--scope' },
        });
      if (env.COWORKER_STATE_DIR) return join(env.COWORKER_STATE_DIR, 'mcp.json');
      if (platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'coworker', 'mcp.json');
      return join(home, '.config', 'coworker', 'mcp.json');
    default:
      return null;
  }
}

export type MergeAction = 'created' | 'added' | 'updated' | 'unchanged';

function lineCol(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

/**
 * Merge `entry` as `mcpServers.<name>` into the text of a host's JSON file (null: no file yet).
 * Only the bytes of that one entry (or of its insertion) change.
 * @throws PollyError `bad_input` naming `file:line:column` when the text does not parse, or when
 *         the top level or `mcpServers` is not an object. The caller writes nothing then.
 */
export function mergeServerEntry(existing: string | null, name: string, entry: Record<string, unknown>, file: string): { text: string; action: MergeAction } {
  if (existing === null || existing.trim() === '') {
    return { text: `${JSON.stringify({ mcpServers: { [name]: entry } }, null, 2)}\n`, action: 'created' };
  }
  const errors: ParseError[] = [];
  const root = parseTree(existing, errors, { allowTrailingComma: false, disallowComments: false });
  const refuse = (offset: number, what: string): never => {
    const at = lineCol(existing, offset);
    throw new PollyError('bad_input', `${file}:${at.line}:${at.column}: ${what}; the file was left unchanged. Fix it (or move it aside), then run polly install again.`, {
      details: { file, line: at.line, column: at.column },
    });
  };
  if (errors.length > 0) refuse(errors[0]!.offset, `cannot parse the file as JSON (${printParseErrorCode(errors[0]!.error)})`);
  if (root?.type !== 'object') refuse(root?.offset ?? 0, 'the top level is not a JSON object');
  const servers = findNodeAtLocation(root!, ['mcpServers']);
  if (servers && servers.type !== 'object') refuse(servers.offset, '"mcpServers" is not an object');
  const current = servers ? findNodeAtLocation(servers, [name]) : undefined;
  if (current && JSON.stringify(JSON.parse(existing.slice(current.offset, current.offset + current.length))) === JSON.stringify(entry))
    return { text: existing, action: 'unchanged' };
  // Our own edits (jsonc-parser's formatter would also re-indent the neighbouring member).
  const eol = existing.includes('\r\n') ? '\r\n' : '\n';
  const unit = /\n([ \t]+)"/.exec(existing)?.[1] ?? '  ';
  const indentAt = (offset: number): string => /^[ \t]*/.exec(existing.slice(existing.lastIndexOf('\n', offset - 1) + 1))?.[0] ?? '';
  const pretty = (value: unknown, base: string): string =>
    JSON.stringify(value, null, unit)
      .split('\n')
      .join(eol + base);
  const splice = (from: number, to: number, insert: string): string => existing.slice(0, from) + insert + existing.slice(to);
  if (current) {
    return { text: splice(current.offset, current.offset + current.length, pretty(entry, indentAt(current.parent!.offset))), action: 'updated' };
  }
  if (servers) {
    const last = servers.children?.at(-1);
    if (last) {
      const base = indentAt(last.offset);
      return { text: splice(last.offset + last.length, last.offset + last.length, `,${eol}${base}${JSON.stringify(name)}: ${pretty(entry, base)}`), action: 'added' };
    }
    const base = indentAt(servers.parent!.offset);
    return {
      text: splice(servers.offset, servers.offset + servers.length, `{${eol}${base}${unit}${JSON.stringify(name)}: ${pretty(entry, base + unit)}${eol}${base}}`),
      action: 'added',
    };
  }
  const lastTop = root!.children?.at(-1);
  const block = (base: string): string => `${JSON.stringify('mcpServers')}: {${eol}${base}${unit}${JSON.stringify(name)}: ${pretty(entry, base + unit)}${eol}${base}}`;
  if (lastTop) {
    const base = indentAt(lastTop.offset);
    return { text: splice(lastTop.offset + lastTop.length, lastTop.offset + lastTop.length, `,${eol}${base}${block(base)}`), action: 'added' };
  }
  return { text: splice(root!.offset, root!.offset + root!.length, `{${eol}${unit}${block(unit)}${eol}}`), action: 'added' };
}

function yamlString(s: string): string {
  return JSON.stringify(s);
}

/** NeMo Agent Toolkit YAML: the `mcp_client` function group and the workflow's tool_names. */
export function nemoYaml(cmd: ServerCommand): string {
  const env = Object.entries(cmd.env);
  return [
    '# NeMo Agent Toolkit (needs nvidia-nat-mcp): Polly as an MCP client function group.',
    'function_groups:',
    `  ${SERVER_NAME}:`,
    '    _type: mcp_client',
    '    server:',
    '      transport: stdio',
    `      command: ${yamlString(cmd.command)}`,
    `      args: [${cmd.args.map(yamlString).join(', ')}]`,
    ...(env.length ? ['      env:', ...env.map(([k, v]) => `        ${k}: ${yamlString(v)}`)] : []),
    '',
    "# Add the group to your workflow's tools:",
    'workflow:',
    '  _type: react_agent',
    `  tool_names: [${SERVER_NAME}]`,
    '',
  ].join('\n');
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The AWS CLI call that publishes a manual MCP record for Polly in an Agent Registry. */
export function registryCommand(cmd: ServerCommand, description: string): string {
  const server = {
    name: SERVER_NAME,
    description,
    transport: { type: 'stdio', command: cmd.command, args: cmd.args },
    tools: ['workflow_list', 'workflow_start', 'workflow_report', 'workflow_state', 'workflow_signal', 'workflow_journal'],
  };
  const descriptors = { mcpServer: { data: JSON.stringify(server) } };
  return [
    'aws agent-registry-control create-registry-record \\',
    '  --registry-id "$REGISTRY_ID" \\',
    `  --name ${SERVER_NAME} \\`,
    '  --display-name Polly \\',
    `  --description ${shellQuote(description)} \\`,
    '  --record-type MCP \\',
    `  --descriptors ${shellQuote(JSON.stringify(descriptors))}`,
    '',
  ].join('\n');
}
