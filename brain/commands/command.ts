/**
 * The shape every `polly` subcommand module implements. A command module lives next to the
 * concept it drives (e.g. `workflows/check-command.ts`) and exports `command`.
 */
import type { Writable } from 'node:stream';

/** What a command may touch: its streams, working directory and environment. */
export interface CommandIO {
  stdin: NodeJS.ReadableStream;
  /** Results only (or MCP JSON-RPC). */
  stdout: Writable;
  /** Diagnostics, progress, prompts. */
  stderr: Writable;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export interface Command {
  /** One line for `polly help`. */
  summary: string;
  /** Full usage text for `polly help <name>`. */
  usage: string;
  /**
   * Run the command. Returns the exit code: 0 ok, 1 refused or failed outcome, 2 bad input.
   * Faults are thrown as PollyError and turned into exit codes by the CLI.
   */
  run(argv: string[], io: CommandIO): Promise<number>;
}

/** Write one line to a stream. */
export function writeLine(stream: Writable, line = ''): void {
  stream.write(`${line}\n`);
}

/** Write a JSON value as one document on stdout (pretty, trailing newline). */
export function writeJson(stream: Writable, value: unknown): void {
  stream.write(`${JSON.stringify(value, null, 2)}\n`);
}
