/**
 * The gate's git option parser (gate/git/git-options.ts) on its own: git's parse-options rules for
 * subcommands (unique prefixes, bundling, stuck values, `--`) and the exact, unbundled reading of
 * git's global options.
 */
import { describe, expect, it } from 'vitest';
import { CHECKOUT, GLOBAL, PUSH } from '../../../gate/git/git-flag-specs.js';
import { has, parseArgs, tokenize, values } from '../../../gate/git/git-options.js';

describe('git option parser', () => {
  it('reads unique prefixes, and an ambiguous prefix as every option it could mean', () => {
    expect(has(parseArgs(['--forc', 'origin'], PUSH), 'force')).toBe(true);
    const amb = parseArgs(['--fo', 'origin', 'x'], PUSH);
    expect(has(amb, 'force-with-lease', 'follow-tags')).toBe(true);
    expect(amb.positionals).toEqual(['origin', 'x']);
    expect(parseArgs(['--frobnicate'], PUSH).unknown).toEqual(['--frobnicate']);
  });

  it('bundles short flags and reads a value stuck to its flag or in the next word', () => {
    const p = parseArgs(['-vfu', '-oci.skip', 'origin', 'polly/t1'], PUSH);
    expect(has(p, 'verbose', 'force', 'set-upstream')).toBe(true);
    expect(values(p, 'push-option')).toEqual(['ci.skip']);
    expect(p.positionals).toEqual(['origin', 'polly/t1']);
    expect(values(parseArgs(['-bmain'], CHECKOUT), 'b')).toEqual(['main']);
    expect(values(parseArgs(['-b', 'main', 'origin/main'], CHECKOUT), 'b')).toEqual(['main']);
    expect(has(parseArgs(['-bfoo'], CHECKOUT), 'force')).toBe(false);
  });

  it('ends options at --', () => {
    const p = parseArgs(['main', '--', '-f', 'src/a.ts'], CHECKOUT);
    expect(p.positionals).toEqual(['main']);
    expect(p.afterDashDash).toEqual(['-f', 'src/a.ts']);
    expect(has(p, 'force')).toBe(false);
  });

  it('reads global options exactly, unbundled, in order, and stops at the subcommand', () => {
    const t = tokenize(['-C', 'a', '-c', 'x=1', '--git-dir=/g', '-C', 'b', 'push', '-f'], GLOBAL, { longPrefixes: false, bundling: false, stopAtPositional: true });
    expect(t.options.map((o) => `${o.names[0]}=${o.value}`)).toEqual(['C=a', 'c=x=1', 'git-dir=/g', 'C=b']);
    expect(t.next).toBe(7);
    expect(tokenize(['--git-d=/x', 'push'], GLOBAL, { longPrefixes: false, bundling: false, stopAtPositional: true }).options[0]?.names).toEqual([]);
    expect(tokenize(['-Cdir', 'status'], GLOBAL, { longPrefixes: false, bundling: false, stopAtPositional: true }).options[0]?.names).toEqual([]);
  });
});
