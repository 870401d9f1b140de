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

/** How strictly to read options: subcommands use git's parse-options; git's own global options do not. */
export interface ParseMode {
  /** Long options by unique prefix (default true; git's global options match exactly). */
  longPrefixes?: boolean;
  /** Bundled short flags and stuck short values, `-fu`, `-bmain` (default true; not for global options). */
  bundling?: boolean;
  /** Stop at the first word that is not an option (global options end at the subcommand). */
  stopAtPositional?: boolean;
}

/** One option word as read, in argv order. */
export interface OptionToken {
  /** The word as written (for messages). */
  raw: string;
  /** Canonical names it may mean (several for an ambiguous prefix; empty when unknown). */
  names: string[];
  /** Its value (`''` for a flag). */
  value: string;
  /** Whether a value was given inline (`--x=v`, `-xv`) rather than in the next word or not at all. */
  inline: boolean;
}

/** An argv read as tokens: options in order, positionals, the words after `--`, and where reading stopped. */
export interface Tokens {
  options: OptionToken[];
  positionals: string[];
  afterDashDash: string[] | null;
  /** Index of the first word not read (with `stopAtPositional`: the first positional). */
  next: number;
}

interface SpecIndex {
  longNames: string[];
  byLong: Map<string, OptionSpec>;
  byShort: Map<string, OptionSpec>;
}
const indexes = new WeakMap<FlagSpec, SpecIndex>();

/** A flag table's lookups, built once per table (the tables are module constants). */
function indexOf(spec: FlagSpec): SpecIndex {
  let index = indexes.get(spec);
  if (index === undefined) {
    const longs = spec.filter((o) => o.long !== undefined);
    index = {
      longNames: longs.map((o) => o.long as string),
      byLong: new Map(longs.map((o) => [o.long as string, o])),
      byShort: new Map(spec.filter((o) => o.short !== undefined).map((o) => [o.short as string, o])),
    };
    indexes.set(spec, index);
  }
  return index;
}

/** The one tokenizer: read `args` against `spec` in `mode`. Never throws. */
export function tokenize(args: readonly string[], spec: FlagSpec, mode: ParseMode = {}): Tokens {
  const prefixes = mode.longPrefixes ?? true;
  const bundling = mode.bundling ?? true;
  const { longNames, byLong, byShort } = indexOf(spec);
  const out: Tokens = { options: [], positionals: [], afterDashDash: null, next: args.length };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      out.afterDashDash = args.slice(i + 1);
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      if (mode.stopAtPositional) {
        out.next = i;
        return out;
      }
      out.positionals.push(arg);
      continue;
    }
    if (arg.startsWith('--')) {
      const m = prefixes ? matchLong(arg, longNames) : exactLong(arg, longNames);
      const only = m.names.length === 1 ? byLong.get(m.names[0] as string) : undefined;
      if (only?.value === 'required' && m.value === null) {
        i += 1;
        out.options.push({ raw: arg, names: m.names, value: args[i] ?? '', inline: false });
      } else out.options.push({ raw: arg, names: m.names, value: m.value ?? '', inline: m.value !== null });
      continue;
    }
    if (!bundling) {
      const o = byShort.get(arg.slice(1));
      if (o === undefined || arg.length !== 2) out.options.push({ raw: arg, names: [], value: '', inline: false });
      else if (o.value === 'required') {
        i += 1;
        out.options.push({ raw: arg, names: [canonical(o)], value: args[i] ?? '', inline: false });
      } else out.options.push({ raw: arg, names: [canonical(o)], value: '', inline: false });
      continue;
    }
    for (let j = 1; j < arg.length; j++) {
      const c = arg[j] as string;
      const o = byShort.get(c);
      if (o === undefined) {
        out.options.push({ raw: `-${c}`, names: [], value: '', inline: false });
        continue;
      }
      if (o.value !== undefined) {
        const stuck = arg.slice(j + 1);
        if (stuck === '' && o.value === 'required') {
          i += 1;
          out.options.push({ raw: arg, names: [canonical(o)], value: args[i] ?? '', inline: false });
        } else out.options.push({ raw: arg, names: [canonical(o)], value: stuck, inline: stuck !== '' });
        break;
      }
      out.options.push({ raw: arg, names: [canonical(o)], value: '', inline: false });
    }
  }
  return out;
}

/** `--name[=value]` matched exactly (no prefixes). */
function exactLong(arg: string, known: readonly string[]): { names: string[]; value: string | null } {
  const body = arg.slice(2);
  const eq = body.indexOf('=');
  const name = eq < 0 ? body : body.slice(0, eq);
  return { names: known.includes(name) ? [name] : [], value: eq < 0 ? null : body.slice(eq + 1) };
}

/** Parse `args` (the words after the subcommand) against `spec` with git's parse-options rules. Never throws. */
export function parseArgs(args: readonly string[], spec: FlagSpec): ParsedArgs {
  const t = tokenize(args, spec);
  const out: ParsedArgs = { options: new Map(), positionals: t.positionals, afterDashDash: t.afterDashDash, unknown: [], unresolved: null };
  for (const o of t.options) {
    if (o.raw.includes(UNKNOWN) && out.unresolved === null) out.unresolved = o.raw;
    if (o.names.length === 0) out.unknown.push(o.raw);
    for (const n of o.names) {
      const list = out.options.get(n) ?? [];
      list.push(o.value);
      out.options.set(n, list);
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
