/**
 * `polly host <sub>`: the host side of remote workers, run by another machine's Polly over SSH
 * (workers/hosts/ssh.ts `remotePollyCommand`), never by a person. Every subcommand that acts takes
 * `--expect-build <sha>` and refuses (exit 3) when this installation is another build: the two
 * ends of a turn must run the same Polly.
 *
 * - `probe --json --dir DIR [--command H=CMD]…`: what this host offers (workers/hosts/host-probe.ts).
 * - `prepare --dir DIR --repo KEY`: make sure the repository's bare mirror exists; prints `{mirror}`.
 * - `turn --dir DIR`: run one turn; its request is the first line of stdin (workers/hosts/host-turn.ts).
 * - `remove --dir DIR --repo KEY --clone KEY --task ID`: remove that clone's worktree of the task
 *   there, its work kept under a backup ref first (workers/hosts/host-turn.ts `removeHostWorktree`).
 */
import { buildIdentity, describeBuild } from '../core/build-identity.js';
import { PollyError } from '../core/errors.js';
import { HARNESSES, type Harness } from '../core/vocabulary.js';
import { createInterface, type Interface } from 'node:readline';
import { collectHostProbe } from '../../workers/hosts/host-probe.js';
import { ensureMirror, hostDir, removeHostWorktree, runHostTurn, type HostTurnLine, type HostTurnRequest } from '../../workers/hosts/host-turn.js';
import { createGitRunner } from '../../workers/git/git.js';
import { parseCommandArgs } from './args.js';
import { writeJson, type Command } from './command.js';

/**
 * A key as `prepare`/`remove` take it (16 hex digits): `--repo`, a repository's
 * (workers/hosts/worktree-transfer.ts `repoKeyFor`), or `--clone`, a clone's (brain/core/polly-identity.ts).
 */
function requireKey(key: string | undefined, sub: string, flag: 'repo' | 'clone' = 'repo'): string {
  if (!key || !/^[0-9a-f]{16}$/.test(key))
    throw new PollyError('bad_input', `polly host ${sub}: --${flag} ${JSON.stringify(key ?? '')} is not a ${flag === 'repo' ? 'repository' : 'clone'} key (16 hex digits)`);
  return key;
}

/** The first line of `lines` (null when the input ends first); later lines stay with `lines` for the turn. */
async function firstLine(lines: Interface): Promise<string | null> {
  return new Promise((resolve) => {
    const onLine = (line: string): void => {
      lines.off('close', onClose);
      lines.pause();
      resolve(line);
    };
    const onClose = (): void => {
      lines.off('line', onLine);
      resolve(null);
    };
    lines.once('line', onLine);
    lines.once('close', onClose);
  });
}

/** Exit code of a `polly host` call refused for a build mismatch. */
export const BUILD_MISMATCH_EXIT = 3;

const USAGE = `Usage: polly host probe --json --dir DIR [--command HARNESS=COMMAND]...
       polly host prepare --dir DIR --repo KEY --expect-build SHA
       polly host turn --dir DIR --expect-build SHA        (the request on stdin)
       polly host remove --dir DIR --repo KEY --clone KEY --task ID --expect-build SHA

The host side of remote workers (docs/hosts.md): another machine's Polly runs these over SSH.
Not for people: use "polly hosts" on the machine that dispatches.`;

export const command: Command = {
  summary: 'the host side of remote workers (run by Polly over SSH; see polly hosts)',
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    const args = parseCommandArgs(
      'host',
      rest,
      {
        json: { type: 'boolean' },
        dir: { type: 'string' },
        repo: { type: 'string' },
        clone: { type: 'string' },
        task: { type: 'string' },
        'expect-build': { type: 'string' },
        command: { type: 'string', multiple: true },
      },
      0,
    );
    const dir = args.values.dir;
    if (!dir) throw new PollyError('bad_input', `polly host ${sub ?? ''}: --dir is required. ${USAGE}`);
    const expected = args.values['expect-build'];
    if (expected !== undefined && expected !== buildIdentity().build) {
      io.stderr.write(
        `polly host: this host runs Polly ${describeBuild(buildIdentity())}, the caller expects build ${expected.slice(0, 12)}: run "polly hosts install" for this host on the calling machine\n`,
      );
      return BUILD_MISMATCH_EXIT;
    }
    switch (sub) {
      case 'probe': {
        const commands: Partial<Record<Harness, string>> = {};
        for (const pair of args.values.command ?? []) {
          const [h, ...cmd] = pair.split('=');
          if (!HARNESSES.includes(h as Harness) || cmd.length === 0)
            throw new PollyError('bad_input', `polly host probe: --command ${JSON.stringify(pair)} is not HARNESS=COMMAND`);
          commands[h as Harness] = cmd.join('=');
        }
        writeJson(io.stdout, collectHostProbe(commands, dir));
        return 0;
      }
      case 'prepare': {
        const key = requireKey(args.values.repo, 'prepare');
        const mirror = await ensureMirror(createGitRunner(), hostDir(dir, io.env), key);
        writeJson(io.stdout, { mirror });
        return 0;
      }
      case 'remove': {
        const key = requireKey(args.values.repo, 'remove');
        const clone = requireKey(args.values.clone, 'remove', 'clone');
        const task = args.values.task;
        if (!task || !/^[a-z0-9][a-z0-9-]*$/.test(task)) throw new PollyError('bad_input', `polly host remove: --task ${JSON.stringify(task ?? '')} is not a task id`);
        const removal = await removeHostWorktree(hostDir(dir, io.env), key, clone, task);
        writeJson(io.stdout, { removed: removal.backupRef !== null, ...removal });
        return 0;
      }
      case 'turn': {
        if (expected === undefined) throw new PollyError('bad_input', 'polly host turn: --expect-build is required');
        const lines = createInterface({ input: io.stdin });
        const request = await firstLine(lines);
        if (!request) throw new PollyError('bad_input', 'polly host turn: no request on stdin');
        // The channel may close at any time: a line that cannot be written is dropped, never a crash.
        const out = io.stdout as NodeJS.WritableStream & { on?: (e: string, f: () => void) => void };
        out.on?.('error', () => undefined);
        const write = (line: HostTurnLine): void => {
          try {
            io.stdout.write(`${JSON.stringify(line)}\n`);
          } catch {
            // the dispatcher is gone
          }
        };
        return runHostTurn(JSON.parse(request) as HostTurnRequest, lines, write, { dir, env: io.env });
      }
      default:
        throw new PollyError('bad_input', `polly host: unknown subcommand ${JSON.stringify(sub ?? '')}. ${USAGE}`);
    }
  },
};
