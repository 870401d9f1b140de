/**
 * `polly ui [--port N] [--host 127.0.0.1] [--allow-remote] [--json]`: the local web dashboard
 * (brain/ui/). It reads the same registry, journal and worker files as the CLI, and writes only
 * the plan gate's decision, as `polly plan approve|reject` does. It runs until SIGINT/SIGTERM.
 */
import { parseCommandArgs } from './args.js';
import { writeJson, writeLine, type Command } from './command.js';
import { PollyError } from '../core/errors.js';
import { openRepoContext } from '../registry/repo-context.js';
import { createRepoUiSource } from '../ui/ui-source.js';
import { createUiServer } from '../ui/ui-server.js';
import { join } from 'node:path';
import { repoStateDir } from '../../workers/sandbox/agent-state-dir.js';

export const command: Command = {
  summary: 'open a local web dashboard: goals, plans and the plan gate, live workers, PRs, journal',
  usage: `Usage: polly ui [--port N] [--host 127.0.0.1] [--allow-remote] [--json]

Serve a dashboard of this repository's Polly state: goals and plans; the plan gate (the plan's
tasks, the admission line, a refused plan's counterexample step by step) with Approve/Reject;
each task's acceptance runs, review findings, gate denials and its workers' events, pushed live;
each local PR's diff, checks and reviews; the journal. Approving in the page writes the same
plan-gate record as "polly plan approve" (decidedBy human:$USER (polly ui), decidedAt).

Security: it listens on 127.0.0.1 unless --host names another address, and a non-loopback
address is refused unless --allow-remote. It prints a login URL with a random token that works
once: opening it starts a browser session bound to this server (a secret root path and an
HttpOnly, SameSite=Strict cookie scoped to it, so a server on another port of this machine never
gets it), which lasts 12 hours. Press Enter here for another login URL (another browser, or after
the session ended). A restarted polly ui takes the last one's port when it is free (without
--port) and its sessions, so an open tab reconnects by itself; it keeps only hashes of them, in
the repository's state directory (~/.local/state/polly/<repo>/ui/). Every request must name this server in its Host header (DNS rebinding);
state changes are POSTs that must come from the dashboard's own Origin (CSRF).

Output: the URL to open on stdout, and another on each Enter (--json: {url, loginUrl, port},
then {loginUrl} lines). It runs until Ctrl-C.
Exit codes: 0 stopped; 2 bad flags, a non-loopback --host without --allow-remote, or a port in use.`,
  async run(argv, io) {
    const args = parseCommandArgs('ui', argv, { port: { type: 'string' }, host: { type: 'string' }, 'allow-remote': { type: 'boolean' }, json: { type: 'boolean' } }, 0);
    const port = args.values.port === undefined ? 0 : Number(args.values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new PollyError('bad_input', `polly ui: --port ${JSON.stringify(args.values.port)} is not a TCP port (an integer 0-65535; 0 picks a free one).`, {
        details: { port: args.values.port },
      });
    }
    const ctx = await openRepoContext(io.cwd, io.env);
    const source = createRepoUiSource({ repoRoot: ctx.repo.root, pollyDir: ctx.repo.pollyDir, store: ctx.store, config: ctx.config });
    const server = await createUiServer(
      { source, user: `human:${io.env.USER ?? 'unknown'} (polly ui)` },
      {
        host: args.values.host ?? '127.0.0.1',
        ...(args.values.port === undefined ? {} : { port }),
        allowRemote: Boolean(args.values['allow-remote']),
        keepDir: join(repoStateDir(ctx.repo.root, io.env), 'ui'),
      },
    );
    // The login URL carries this session's token: stdout only (it is the user's own capability), never stderr or a file.
    if (args.values.json) writeJson(io.stdout, { url: server.url, loginUrl: server.loginUrl, port: server.port });
    else writeLine(io.stdout, `Polly dashboard: open ${server.loginUrl}`);
    io.stderr.write(`[polly ui] serving ${ctx.repo.root} at ${server.url}; the login URL works once, press Enter for another; Ctrl-C to stop\n`);
    // Each line on stdin (Enter in the terminal) asks for another single-use login URL.
    const more = () => {
      const loginUrl = server.newLoginUrl();
      if (args.values.json) writeJson(io.stdout, { loginUrl });
      else writeLine(io.stdout, `Polly dashboard: open ${loginUrl}`);
    };
    const onData = (chunk: Buffer | string) => {
      for (const c of String(chunk)) if (c === '\n') more();
    };
    process.stdin.on('data', onData);
    process.stdin.on('error', () => {}); // a closed or unreadable stdin just means no more links
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    process.stdin.off('data', onData);
    process.stdin.pause();
    await server.close();
    return 0;
  },
};
