#!/usr/bin/env node
/**
 * `polly` — the command-line entry point.
 *
 * Dispatches `polly <command> [args]` to a command module (see {@link COMMANDS}); each module is
 * imported lazily so that a command only pays for what it uses. Exit codes: 0 ok, 1 a refused or
 * failed outcome, 2 bad input. Errors are printed to stderr as `polly: <message>`; with `--json`
 * they are also printed on stdout as `{"error": {"code", "message", ...details}}`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command, CommandIO } from './commands/command.js';
import { PollyError, exitCodeFor, isPollyError } from './core/errors.js';

/** Command name → module path (relative to this file) exporting `command: Command`. */
export const COMMANDS: Record<string, { module: string; summary: string }> = {
  init: { module: './commands/init.js', summary: 'set up Polly in this git repository (.polly/config.yaml)' },
  status: { module: './commands/status.js', summary: 'show goals, plans, tasks, workers and PRs' },
  doctor: { module: './commands/doctor.js', summary: 'check this repository and machine for Polly (config, agents, sandbox, git)' },
  check: { module: './commands/check.js', summary: 'model-check a workflow: admitted or REFUSED' },
  gate: { module: './commands/gate.js', summary: 'decide tool calls with the gate; show the decision log' },
  mcp: { module: './commands/mcp.js', summary: 'run the MCP workflow server on stdio' },
  install: { module: './commands/install.js', summary: 'register the MCP server with an agent host' },
  goal: { module: './commands/goal.js', summary: 'state a goal: the Brain investigates and proposes a plan' },
  watch: { module: './commands/watch.js', summary: 'take labelled issues in as goals; keep their issues current (plan, answers, progress)' },
  issue: { module: './commands/issue.js', summary: 'local forge issues: add, list, show, comment (answer the plan gate with /polly approve)' },
  brain: { module: './commands/brain.js', summary: 'run the Brain process for this repository' },
  plan: { module: './commands/plan.js', summary: 'show, approve or reject a proposed plan' },
  run: { module: './commands/run.js', summary: 'admit and execute a human-written plan file' },
  try: { module: './commands/try.js', summary: 'run a plan with the real agent CLIs against a scripted model (no API key)' },
  resume: { module: './commands/resume.js', summary: 'resume a plan after the Brain stopped or crashed' },
  retry: { module: './commands/retry.js', summary: 'run tasks that stopped again, in their worktree, with their work' },
  pr: { module: './commands/pr.js', summary: 'pull requests: list, show, diff, order, sync; on the local forge also comment, request changes, set a check' },
  hosts: { module: './commands/hosts.js', summary: 'remote worker hosts: list them, check them over SSH, install this Polly on one' },
  host: { module: './commands/host.js', summary: 'the host side of remote workers (run by Polly over SSH; see polly hosts)' },
  ui: { module: './commands/ui.js', summary: 'open a local web dashboard: goals, plans and the plan gate, live workers, PRs, journal' },
};

/** The package version, read from package.json next to the build. */
export function pollyVersion(): string {
  for (const rel of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(fileURLToPath(new URL(rel, import.meta.url)), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'polly' && pkg.version) return pkg.version;
    } catch {
      // try the next location
    }
  }
  return '0.0.0-unknown';
}

async function loadCommand(name: string): Promise<Command> {
  const entry = COMMANDS[name];
  if (!entry) {
    throw new PollyError('unknown_command', `unknown command ${JSON.stringify(name)}. Run "polly help" to list the commands.`, { details: { command: name } });
  }
  let mod: { command?: Command };
  try {
    mod = (await import(entry.module)) as { command?: Command };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(entry.module.replace(/^\.\.?\//, ''))) {
      throw new PollyError(
        'not_built',
        `"polly ${name}" is missing from this build of Polly (${entry.module} next to ${fileURLToPath(import.meta.url)}). Run "npm run build" in the Polly checkout, or reinstall Polly.`,
        { cause: error },
      );
    }
    throw error;
  }
  if (!mod.command) throw new PollyError('internal', `command module ${entry.module} exports no "command"`);
  return mod.command;
}

function helpText(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return [
    'polly — a git-native orchestrator for coding agents. Polly never merges.',
    '',
    'Usage: polly <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    "  help [command]  show this help, or a command's usage",
    '  --version       print the version',
    '',
    'Every command that prints data takes --json. Exit codes: 0 ok, 1 refused or failed, 2 bad input.',
  ].join('\n');
}

/**
 * Run the CLI with `argv` (words after `polly`). Returns the exit code; never calls process.exit.
 */
export async function main(argv: string[], io: CommandIO): Promise<number> {
  const wantsJson = argv.includes('--json');
  try {
    const [first, ...rest] = argv;
    if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
      const topic = first === 'help' ? rest.find((a) => !a.startsWith('-')) : undefined;
      if (topic) {
        const cmd = await loadCommand(topic);
        io.stdout.write(`${cmd.usage.trimEnd()}\n`);
      } else {
        io.stdout.write(`${helpText()}\n`);
      }
      return first === undefined ? 2 : 0;
    }
    if (first === '--version' || first === '-V' || first === 'version') {
      io.stdout.write(wantsJson ? `${JSON.stringify({ version: pollyVersion() })}\n` : `polly ${pollyVersion()}\n`);
      return 0;
    }
    if (first.startsWith('-')) {
      throw new PollyError('bad_input', `unknown option ${JSON.stringify(first)} before the command. Run "polly help".`, { details: { flag: first } });
    }
    const cmd = await loadCommand(first);
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout.write(`${cmd.usage.trimEnd()}\n`);
      return 0;
    }
    return await cmd.run(rest, io);
  } catch (error) {
    return reportError(error, io, wantsJson);
  }
}

/** Print an error (stderr always; stdout JSON with --json) and return its exit code. */
export function reportError(error: unknown, io: Pick<CommandIO, 'stdout' | 'stderr'>, json: boolean): number {
  const code = isPollyError(error) ? error.code : 'internal';
  const message = error instanceof Error ? error.message : String(error);
  io.stderr.write(`polly: ${message}\n`);
  if (!isPollyError(error) && error instanceof Error && error.stack) io.stderr.write(`${error.stack}\n`);
  if (json) {
    const details = isPollyError(error) ? error.details : undefined;
    io.stdout.write(`${JSON.stringify({ error: { code, message, ...(details ?? {}) } })}\n`);
  }
  return exitCodeFor(error);
}

const invokedDirectly = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === (await import('node:fs')).realpathSync(process.argv[1]);
if (invokedDirectly) {
  // `polly status | head -1`: a reader that closes early is not an error.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw error;
    });
  }
  const code = await main(process.argv.slice(2), {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    cwd: process.cwd(),
    env: process.env,
  });
  process.exitCode = code;
}
