/**
 * `polly install --host claude-code|kiro|openworker|generic|nemo|registry [--scope user|workspace]
 * [--agent A] [--workspace W] [--registry DIR] [--print] [--json]` — register `polly mcp` with an
 * MCP host. The entry pins the store (`--registry <absolute dir>`; see `defaultStoreDir`).
 *
 * File hosts (claude-code, kiro, openworker) get Polly's entry merged into their `mcpServers`
 * file (see `host-installer.ts`): other entries stay byte-for-byte, a file that does not parse is
 * refused and left unchanged (exit 2). `--print` shows the entry and the target path and writes
 * nothing. generic, nemo and registry always print (an entry, NeMo YAML, an AWS CLI call).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { PollyError } from '../core/errors.js';
import { cliPath } from '../core/install-paths.js';
import {
  HOSTS,
  SERVER_NAME,
  defaultStoreDir,
  hostConfigPath,
  hostEntry,
  mergeServerEntry,
  nemoYaml,
  registryCommand,
  serverCommand,
  type Host,
  type Scope,
} from '../mcp/host-installer.js';

const USAGE = `Usage: polly install --host HOST [--scope user|workspace] [--agent AREA] [--workspace AREA] [--registry DIR] [--print] [--json]

Register Polly's MCP server ("polly mcp") with an agent host.

  --host HOST       claude-code  ./.mcp.json (project)
                    kiro         ~/.kiro/settings/mcp.json, or ./.kiro/settings/mcp.json with --scope workspace
                    openworker   ~/.config/coworker/mcp.json (%APPDATA%\\coworker on Windows; $COWORKER_STATE_DIR overrides)
                    generic      print the entry (command, args, env)
                    nemo         print YAML for a NeMo Agent Toolkit mcp_client function group
                    registry     print the AWS CLI call that publishes an Agent Registry record
  --scope SCOPE     user or workspace (where the host has both)
  --agent AREA      agent area the server runs as (default "default")
  --workspace AREA  instance area: whose runs (default "default")
  --registry DIR    the store the entry pins (default: $POLLY_HOME, else ~/.polly/workspaces/AREA);
                    written as an absolute path, so every host and directory shares one store
  --print           show the entry and the target path; write nothing
  --json            machine-readable output

The merge keeps every other entry byte-for-byte; a file that cannot be parsed is refused and left
unchanged (exit 2). Tools appear in the host as mcp__${SERVER_NAME}__workflow_list, … .`;

export const command: Command = {
  summary: 'register the MCP server with an agent host',
  usage: USAGE,
  async run(argv, io) {
    const { values } = parseCommandArgs(
      'install',
      argv,
      {
        host: { type: 'string' },
        scope: { type: 'string' },
        agent: { type: 'string' },
        workspace: { type: 'string' },
        registry: { type: 'string' },
        print: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      0,
    );
    const host = values.host as Host | undefined;
    if (!host || !HOSTS.includes(host)) {
      throw new PollyError('bad_input', `polly install: ${host ? `unknown --host ${JSON.stringify(host)}` : 'missing --host'}; choose one of ${HOSTS.join(', ')}.`, {
        details: { flag: '--host' },
      });
    }
    const scope = values.scope as Scope | undefined;
    if (scope !== undefined && scope !== 'user' && scope !== 'workspace') {
      throw new PollyError('bad_input', `polly install: --scope ${JSON.stringify(scope)} is not user or workspace.`, { details: { flag: '--scope' } });
    }
    const agent = values.agent ?? 'default';
    const workspace = values.workspace ?? 'default';
    for (const [flag, v] of [
      ['--agent', agent],
      ['--workspace', workspace],
    ] as const) {
      if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/.test(v) || v.split('/').some((seg) => seg === '' || seg === '.' || seg === '..'))
        throw new PollyError('bad_input', `polly install: ${flag} ${JSON.stringify(v)} is not a valid area name; use letters, digits and . _ / -.`, { details: { flag } });
    }
    const cli = cliPath();
    const cmd = serverCommand(process.execPath, cli, agent, workspace, defaultStoreDir(workspace, io.cwd, io.env, values.registry));
    const entry = hostEntry(host, cmd);

    if (host === 'nemo' || host === 'registry' || host === 'generic') {
      const text =
        host === 'nemo'
          ? nemoYaml(cmd)
          : host === 'registry'
            ? registryCommand(cmd, 'Polly: model-checked workflows for AI agents, one work order at a time (MCP stdio).')
            : `${JSON.stringify({ [SERVER_NAME]: entry }, null, 2)}\n`;
      if (values.json) writeJson(io.stdout, { host, path: null, action: 'printed', entry, text });
      else io.stdout.write(text);
      return 0;
    }

    const path = hostConfigPath(host, scope, io.cwd, io.env)!;
    const existing = existsSync(path) ? readFileSync(path, 'utf8') : null;
    const merged = mergeServerEntry(existing, SERVER_NAME, entry, path);
    if (values.print) {
      if (values.json) writeJson(io.stdout, { host, path, action: 'printed', wouldBe: merged.action, entry });
      else {
        writeLine(
          io.stdout,
          `# ${host}: would ${merged.action === 'unchanged' ? 'leave unchanged' : merged.action === 'created' ? 'create' : merged.action === 'added' ? 'add to' : 'update'} ${path}`,
        );
        io.stdout.write(`${JSON.stringify({ mcpServers: { [SERVER_NAME]: entry } }, null, 2)}\n`);
      }
      return 0;
    }
    if (merged.action !== 'unchanged') {
      mkdirSync(dirname(path), { recursive: true });
      const tmp = `${path}.polly-tmp`;
      writeFileSync(tmp, merged.text);
      renameSync(tmp, path);
    }
    if (values.json) writeJson(io.stdout, { host, path, action: merged.action, entry });
    else
      writeLine(
        io.stdout,
        `polly: ${merged.action} the "${SERVER_NAME}" entry in ${path}${host === 'claude-code' ? ' (restart Claude Code in this directory to load it)' : ' (restart the host to load it)'}`,
      );
    return 0;
  },
};
