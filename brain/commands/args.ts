/**
 * Argument parsing for every `polly` command: node's `util.parseArgs` in strict mode, with its
 * errors turned into a {@link PollyError} `bad_input` that names the flag and the command's help.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { PollyError } from '../core/errors.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface ParsedArgs<O extends OptionSpec> {
  values: { [K in keyof O]?: O[K] extends { type: 'boolean' } ? boolean : O[K] extends { multiple: true } ? string[] : string };
  positionals: string[];
}

/**
 * Parse `argv` (the words after the command name) against `options`.
 *
 * @param command  the command name, for messages (`polly <command> --help`).
 * @param argv     the arguments, without `node`, the script or the command name.
 * @param options  `util.parseArgs` option specs; `--json` and `--help` are not added implicitly.
 * @param maxPositionals  how many positionals are accepted (default: any number).
 * @throws PollyError `bad_input` for an unknown flag, a missing flag value or too many positionals.
 */
export function parseCommandArgs<O extends OptionSpec>(command: string, argv: string[], options: O, maxPositionals = Number.POSITIVE_INFINITY): ParsedArgs<O> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    const raw = error instanceof Error ? error.message : String(error);
    const flag = /'(-{1,2}[^' ]+)/.exec(raw)?.[1] ?? /(-{1,2}[\w-]+)/.exec(raw)?.[1];
    const what = flag ? `unknown or malformed option ${JSON.stringify(flag)}` : raw;
    throw new PollyError('bad_input', `polly ${command}: ${what}. Run "polly help ${command}" for the accepted options.`, { cause: error, details: { flag: flag ?? null } });
  }
  if (parsed.positionals.length > maxPositionals) {
    const extra = parsed.positionals[maxPositionals];
    throw new PollyError('bad_input', `polly ${command}: unexpected argument ${JSON.stringify(extra)}. Run "polly help ${command}" for usage.`, { details: { argument: extra } });
  }
  return parsed as unknown as ParsedArgs<O>;
}
