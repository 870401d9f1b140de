/**
 * Command wrappers the gate strips to reach the real command: `env`, `sudo`, `doas`, `timeout`,
 * `nice`, `nohup`, `setsid`, `stdbuf`, `ionice`, `chrt`, `taskset`, `time`, `command`, `builtin`,
 * `exec`, `xargs`, `watch`, `parallel`, `flock`, `chroot`, `runuser`, `su -c`, `script -c`,
 * `unbuffer`, `strace`/`ltrace`, and shells run with `-c` (`sh`, `bash`, `zsh`, `dash`, `ksh`, …).
 * Pure; option tables follow the GNU coreutils / util-linux / sudo manuals.
 */
import { UNKNOWN } from '../paths.js';

/** What a wrapper runs. */
export type Unwrapped =
  | { kind: 'none' }
  | { kind: 'exec'; argv: string[]; argsFromStdin?: boolean; cwd?: string }
  | { kind: 'script'; source: string; origin: string }
  | { kind: 'stdin-shell'; origin: string }
  | { kind: 'lookup' }
  | { kind: 'unresolved'; reason: string };

export const SHELLS: ReadonlySet<string> = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'mksh',
  'ash',
  'busybox',
  'fish',
  'csh',
  'tcsh',
  'rbash',
  'yash',
  'posh',
  'elvish',
  'nu',
  'xonsh',
  'pwsh',
]);

/** Skip options of a wrapper: `withValue` are short/long options taking a value. Returns the index of the command. */
function skipOptions(argv: string[], start: number, withValue: ReadonlySet<string>, stopAtFirstPositional = true): number {
  let i = start;
  while (i < argv.length) {
    const a = argv[i] as string;
    if (a === '--') return i + 1;
    if (!a.startsWith('-') || a === '-') {
      if (stopAtFirstPositional) return i;
    }
    if (a.startsWith('--')) {
      if (!a.includes('=') && withValue.has(a)) i += 1;
    } else if (a.startsWith('-')) {
      // bundled short options: a value-taking option consumes the rest or the next word
      for (let j = 1; j < a.length; j++) {
        if (withValue.has(`-${a[j]}`)) {
          if (j === a.length - 1) i += 1;
          break;
        }
      }
    }
    i += 1;
  }
  return i;
}

/** Strip leading NAME=value words (env, sudo). */
function skipAssignments(argv: string[], i: number): number {
  while (i < argv.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[i] as string)) i += 1;
  return i;
}

const v = (...names: string[]): ReadonlySet<string> => new Set(names);

/**
 * If `argv` (argv[0] already reduced to its basename) is a wrapper, what it runs.
 * Shell `-c` scripts come back as `script`; a shell reading commands from stdin as `stdin-shell`.
 */
export function unwrap(argv: string[]): Unwrapped {
  const name = argv[0] as string;
  const rest = (i: number): Unwrapped => (i < argv.length ? { kind: 'exec', argv: argv.slice(i) } : { kind: 'none' });
  switch (name) {
    case 'env': {
      let i = 1;
      while (i < argv.length) {
        const a = argv[i] as string;
        if (a === '-S' || a === '--split-string' || a.startsWith('--split-string=') || (a.startsWith('-S') && a.length > 2)) {
          const s = a === '-S' || a === '--split-string' ? (argv[i + 1] ?? '') : a.startsWith('-S') ? a.slice(2) : a.slice(15);
          const after = argv.slice(a === '-S' || a === '--split-string' ? i + 2 : i + 1);
          return { kind: 'script', source: [s, ...after.map((w) => `'${w.replace(/'/g, `'\\''`)}'`)].join(' '), origin: 'env -S' };
        }
        if (a === '-u' || a === '--unset' || a === '-C' || a === '--chdir') i += 2;
        else if (a === '--') {
          i += 1;
          break;
        } else if (a.startsWith('-')) i += 1;
        else if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(a)) i += 1;
        else break;
      }
      return rest(skipAssignments(argv, i));
    }
    case 'sudo':
    case 'doas':
    case 'run0': {
      const i = skipOptions(
        argv,
        1,
        v(
          '-u',
          '-g',
          '-h',
          '-p',
          '-C',
          '-D',
          '-r',
          '-t',
          '-T',
          '-U',
          '--user',
          '--group',
          '--host',
          '--prompt',
          '--close-from',
          '--chdir',
          '--role',
          '--type',
          '--command-timeout',
          '--other-user',
        ),
      );
      return rest(skipAssignments(argv, i));
    }
    case 'su': {
      for (let i = 1; i < argv.length; i++) {
        const a = argv[i] as string;
        if (a === '--command' || /^-[a-zA-Z]*c$/.test(a)) return { kind: 'script', source: argv[i + 1] ?? '', origin: 'su -c' };
        if (a.startsWith('--command=')) return { kind: 'script', source: a.slice(10), origin: 'su -c' };
      }
      return { kind: 'none' };
    }
    case 'timeout': {
      const i = skipOptions(argv, 1, v('-s', '-k', '--signal', '--kill-after'));
      return rest(i + 1); // the duration
    }
    case 'nice':
      return rest(skipOptions(argv, 1, v('-n', '--adjustment')));
    case 'ionice':
      return rest(skipOptions(argv, 1, v('-c', '-n', '-p', '-P', '-u', '--class', '--classdata', '--pid', '--pgid', '--uid')));
    case 'nohup':
    case 'setsid':
    case 'unbuffer':
    case 'builtin':
    case 'caffeinate':
    case 'catchsegv':
      return rest(skipOptions(argv, 1, v()));
    case 'stdbuf':
      return rest(skipOptions(argv, 1, v('-i', '-o', '-e', '--input', '--output', '--error')));
    case 'chrt':
    case 'taskset': {
      const i = skipOptions(argv, 1, v());
      return rest(i + 1);
    }
    case 'time':
      return rest(skipOptions(argv, 1, v('-f', '-o', '--format', '--output')));
    case 'strace':
    case 'ltrace':
      return rest(skipOptions(argv, 1, v('-e', '-o', '-p', '-s', '-u', '-E', '-a', '-b', '-I', '-O', '-P', '-S', '-X')));
    case 'chroot': {
      const i = skipOptions(argv, 1, v('--userspec', '--groups'));
      return rest(i + 1);
    }
    case 'runuser':
      return rest(skipOptions(argv, 1, v('-u', '-g', '-G', '--user', '--group', '--supp-group', '-c', '--command', '-s', '--shell', '-w', '--whitelist-environment')));
    case 'flock': {
      for (let i = 1; i < argv.length; i++) {
        const a = argv[i] as string;
        if (a === '--command' || /^-[a-zA-Z]*c$/.test(a)) return { kind: 'script', source: argv[i + 1] ?? '', origin: 'flock -c' };
      }
      const i = skipOptions(argv, 1, v('-w', '--timeout', '-E', '--conflict-exit-code'));
      return rest(i + 1); // the lock file
    }
    case 'script': {
      for (let i = 1; i < argv.length; i++) {
        const a = argv[i] as string;
        if (a === '--command' || /^-[a-zA-Z]*c$/.test(a)) return { kind: 'script', source: argv[i + 1] ?? '', origin: 'script -c' };
        if (a.startsWith('--command=')) return { kind: 'script', source: a.slice(10), origin: 'script -c' };
      }
      return { kind: 'none' };
    }
    case 'command': {
      let i = 1;
      while (i < argv.length && (argv[i] as string).startsWith('-')) {
        const a = argv[i] as string;
        if (a === '--') {
          i += 1;
          break;
        }
        if (/[vV]/.test(a)) return { kind: 'lookup' };
        i += 1;
      }
      return rest(i);
    }
    case 'exec':
      return rest(skipOptions(argv, 1, v('-a')));
    case 'xargs': {
      let i = 1;
      while (i < argv.length) {
        const a = argv[i] as string;
        if (!a.startsWith('-')) break;
        if (a === '--') {
          i += 1;
          break;
        }
        if (
          [
            '-I',
            '-E',
            '-L',
            '-n',
            '-P',
            '-s',
            '-d',
            '-a',
            '--arg-file',
            '--delimiter',
            '--max-args',
            '--max-procs',
            '--max-chars',
            '--max-lines',
            '--eof',
            '--process-slot-var',
          ].includes(a)
        ) {
          i += 2;
          continue;
        }
        i += 1;
      }
      if (i >= argv.length) return { kind: 'exec', argv: ['echo'], argsFromStdin: true };
      return { kind: 'exec', argv: argv.slice(i), argsFromStdin: true };
    }
    case 'parallel': {
      const i = skipOptions(argv, 1, v('-j', '-S', '--jobs', '-a', '--arg-file', '--delay', '--timeout', '-N', '-n', '--joblog', '--results', '-I'));
      const sep = argv.findIndex((x, k) => k >= i && (x === ':::' || x === '::::' || x === ':::+'));
      const cmd = argv.slice(i, sep < 0 ? undefined : sep);
      if (cmd.length === 0) return { kind: 'unresolved', reason: 'parallel reads the commands to run from its input' };
      return { kind: 'script', source: cmd.join(' '), origin: 'parallel' };
    }
    case 'watch': {
      const i = skipOptions(
        argv,
        1,
        v('-n', '-d', '-q', '--interval', '--differences', '--equexit', '-g', '--chgexit', '-e', '-x', '--exec', '--color', '-c', '-t', '-b', '-p', '-w'),
      );
      if (argv.slice(1, i).some((x) => x === '-x' || x === '--exec')) return rest(i);
      return i < argv.length ? { kind: 'script', source: argv.slice(i).join(' '), origin: 'watch' } : { kind: 'none' };
    }
    case 'eval':
      return { kind: 'script', source: argv.slice(1).join(' '), origin: 'eval' };
    default:
      break;
  }
  if (SHELLS.has(name)) return unwrapShell(argv);
  return { kind: 'none' };
}

/** `sh [-opts] -c script [name args]`, `bash script.sh`, or a shell reading stdin. */
function unwrapShell(argv: string[]): Unwrapped {
  const name = argv[0] as string;
  let i = 1;
  if (name === 'busybox') {
    if (argv[1] === 'sh' || argv[1] === 'ash') return unwrapShell(argv.slice(1));
    return argv.length > 1 ? { kind: 'exec', argv: argv.slice(1) } : { kind: 'none' };
  }
  let hasC = false;
  while (i < argv.length) {
    const a = argv[i] as string;
    if (a === '--' || a === '-') {
      i += 1;
      break;
    }
    if (a.startsWith('--')) {
      if (a === '--command' || a === '--rcfile' || a === '--init-file' || a === '--debugger') hasC = hasC || a === '--command';
      if (a === '--rcfile' || a === '--init-file') i += 1;
      i += 1;
      continue;
    }
    if ((a.startsWith('-') || a.startsWith('+')) && a.length > 1) {
      if (a.slice(1).includes('c')) hasC = true;
      if (/^[-+]o$/.test(a) || a === '-O' || a === '+O') i += 1;
      i += 1;
      continue;
    }
    break;
  }
  if (hasC) {
    const source = argv[i];
    if (source === undefined) return { kind: 'unresolved', reason: `${name} -c without a script` };
    return { kind: 'script', source, origin: `${name} -c` };
  }
  if (i >= argv.length) return { kind: 'stdin-shell', origin: name };
  const file = argv[i] as string;
  if (file.includes(UNKNOWN))
    return { kind: 'unresolved', reason: `${name} runs a script ${JSON.stringify(file.replace(/\u0000/g, '…'))} whose name or content is produced at run time` };
  return { kind: 'none' }; // a script file: the agent's own code, run as-is
}
