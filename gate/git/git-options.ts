/**
 * One option parser for git's argument grammar, driven by per-subcommand flag tables
 * (git-flag-specs.ts), the way simple-git models a command as data. It follows git's parse-options
 * rules (git-scm.com/docs/gitcli, "ENHANCED OPTION PARSER"): long options by unique prefix
 * (`--forc` is `--force`), `--name=value` or `--name value` for options that take a value, bundled
 * short flags (`-fu`, `-vfu`), a short option's value stuck to it or in the next word (`-bmain`,
 * `-b main`), and `--` ending the options. Pure.
 */
import { UNKNOWN } from '../paths.js';

/** One option of a command: a long name, a short letter, or both, and whether it takes a value. */
export interface OptionSpec {
  long?: string;
  short?: string;
  /** `required`: the value is inline (`--x=v`, `-xv`) or the next word; `optional`: inline only (`--track[=direct]`). */
  value?: 'required' | 'optional';
}

/** A command's options, as data. */
export type FlagSpec = readonly OptionSpec[];

/** An argv parsed against a {@link FlagSpec}. */
export interface ParsedArgs {
  /**
   * Options seen, by canonical name (the long name, else the short letter), each with the values
   * given (`''` for a flag). An ambiguous long prefix counts as every option it could mean, which
   * errs towards the more dangerous reading.
   */
  options: Map<string, string[]>;
  /** Non-option words before `--`. */
  positionals: string[];
  /** Words after `--`, or null when there was no `--`. */
  afterDashDash: string[] | null;
  /** Option words the table does not know (as written; short ones as `-x`). */
  unknown: string[];
  /** The first option word with a part produced at run time, or null. */
  unresolved: string | null;
}

/**
 * Match `--name[=value]` against long option names by git's unique-prefix rule: the exact name if
 * there is one, else every name the prefix starts.
 */
export function matchLong(arg: string, known: readonly string[]): { names: string[]; value: string | null } {
  const body = arg.slice(2);
  const eq = body.indexOf('=');
  const name = eq < 0 ? body : body.slice(0, eq);
  const value = eq < 0 ? null : body.slice(eq + 1);
  if (known.includes(name)) return { names: [name], value };
  return { names: known.filter((k) => k.startsWith(name) && name.length > 0), value };
}

const canonical = (o: OptionSpec): string => (o.long ?? o.short) as string;

/** Parse `args` (the words after the subcommand) against `spec`. Never throws. */
export function parseArgs(args: readonly string[], spec: FlagSpec): ParsedArgs {
  const longs = spec.filter((o) => o.long !== undefined);
  const longNames = longs.map((o) => o.long as string);
  const byLong = new Map(longs.map((o) => [o.long as string, o]));
  const byShort = new Map(spec.filter((o) => o.short !== undefined).map((o) => [o.short as string, o]));
  const out: ParsedArgs = { options: new Map(), positionals: [], afterDashDash: null, unknown: [], unresolved: null };
  const add = (name: string, value: string): void => void (out.options.get(name) ?? out.options.set(name, []).get(name))?.push(value);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      out.afterDashDash = args.slice(i + 1);
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      out.positionals.push(arg);
      continue;
    }
    if (arg.includes(UNKNOWN) && out.unresolved === null) out.unresolved = arg;
    if (arg.startsWith('--')) {
      const m = matchLong(arg, longNames);
      if (m.names.length === 0) out.unknown.push(arg);
      for (const n of m.names) add(n, m.value ?? '');
      const only = m.names.length === 1 ? byLong.get(m.names[0] as string) : undefined;
      if (only?.value === 'required' && m.value === null) {
        i += 1;
        const v = args[i] ?? '';
        (out.options.get(only.long as string) as string[]).splice(-1, 1, v);
      }
      continue;
    }
    for (let j = 1; j < arg.length; j++) {
      const c = arg[j] as string;
      const o = byShort.get(c);
      if (o === undefined) {
        out.unknown.push(`-${c}`);
        continue;
      }
      if (o.value !== undefined) {
        const stuck = arg.slice(j + 1);
        if (stuck === '' && o.value === 'required') {
          i += 1;
          add(canonical(o), args[i] ?? '');
        } else add(canonical(o), stuck);
        break;
      }
      add(canonical(o), '');
    }
  }
  return out;
}

/** True when any of `names` was given. */
export function has(p: ParsedArgs, ...names: string[]): boolean {
  return names.some((n) => p.options.has(n));
}

/** Every value given to any of `names`, in order. */
export function values(p: ParsedArgs, ...names: string[]): string[] {
  return names.flatMap((n) => p.options.get(n) ?? []);
}
