/**
 * Which shell variables a command line may assign, read textually (before and beside the parse): a
 * conservative over-approximation used to decide when `$HOME`, `$PWD` and `~` still mean the
 * context's home and directory, and which variables only ever hold a fresh `mktemp` name. Pure.
 * Assigning forms: `NAME=`, `NAME+=`, `read … NAME`, `for NAME`, `select`, `getopts`, `mapfile`,
 * `readarray`, `printf -v NAME`, `unset`, `local`, `declare`, `typeset`, `export`, `readonly`,
 * `${NAME:=…}` (gnu.org/software/bash/manual/bash.html, "Shell Parameters" and "Bash Builtins").
 */

const bare = (name: string): string => name.replace(/\W/g, '');

/** True when `source` may assign the variable `name` in any form (false positives are fine: it only makes the gate stricter). */
export function mayAssign(source: string, name: string): boolean {
  const n = bare(name);
  return (
    new RegExp(`(^|[^\\w$])${n}\\+?=`).test(source) ||
    new RegExp(`\\b(read|for|select|getopts|mapfile|readarray|unset|local|declare|typeset|export|readonly)\\b[^\\n;&|]*\\b${n}\\b|printf\\s+-v\\s*${n}\\b|\\$\\{${n}:?[=?+-]`).test(
      source,
    )
  );
}

/** `mktemp` invocations whose output is a fresh file or directory that exists (no `-u`/`--dry-run`). */
const MKTEMP = /^mktemp(\s+(-d|-q|-t|--directory|--quiet|--tmpdir(=\S+)?|-p\s+\S+|--suffix=\S+|[\w./-]*X{3,}[\w.-]*))*$/;

/** A synthetic path standing for a fresh `mktemp` name: a temp dir's child no other command names. */
export const MKTEMP_PATH = '/tmp/polly-gate-mktemp.XXXXXXXXXX';

/**
 * The variables of `source` that only ever hold a fresh `mktemp` name: every assignment to them is
 * `NAME=$(mktemp …)` (or `"$(mktemp …)"`) and no other assigning form touches them. Such a name is
 * a new, empty file or directory whatever TMPDIR says, so writing to it, moving it or deleting it
 * touches nothing that existed. Conservative: any other mention in an assigning form leaves it out.
 */
export function freshTempVariables(source: string): Set<string> {
  const out = new Set<string>();
  for (const m of source.matchAll(/(?:^|[\s;&|(])([A-Za-z_]\w*)="?\$\((mktemp[^()]*)\)"?/g)) {
    const name = m[1] as string;
    if (out.has(name) || !MKTEMP.test((m[2] as string).trim())) continue;
    const n = bare(name);
    const assigns = [...source.matchAll(new RegExp(`(^|[^\\w$])${n}\\+?=`, 'g'))].length;
    const fresh = [...source.matchAll(new RegExp(`(^|[^\\w$])${n}="?\\$\\(mktemp[^()]*\\)`, 'g'))].filter((x) =>
      MKTEMP.test(
        x[0]
          .replace(/^[^=]*="?\$\(/, '')
          .replace(/\)$/, '')
          .trim(),
      ),
    ).length;
    const other = new RegExp(
      `\\b(read|for|select|getopts|mapfile|readarray|unset|local|declare|typeset|export|readonly)\\b[^\\n;&|]*\\b${n}\\b|printf\\s+-v\\s*${n}\\b|\\$\\{${n}:?[=?+-]`,
    );
    if (assigns === fresh && !other.test(source)) out.add(name);
  }
  return out;
}
