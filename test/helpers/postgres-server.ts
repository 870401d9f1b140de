// A real PostgreSQL server for tests: a temporary cluster (initdb) started on a free loopback port
// and a unix socket in its own directory, stopped (its whole process group) and removed after.
// The binaries come from Debian's `postgresql` package (/usr/lib/postgresql/<version>/bin), or
// from POLLY_TEST_PG_BIN; a machine without them FAILS the tests that need it, with how to install.
// As root (initdb refuses to run as root), the cluster runs as the `postgres` user via runuser.
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** `postgresql://polly@127.0.0.1:<port>/postgres` (trust auth on loopback, no password). */
  url: string;
  port: number;
  /** Stop the server (SIGINT = fast shutdown, SIGKILL to the group after 5 s) and remove its files. */
  stop(): Promise<void>;
}

/** The directory holding `initdb` and `postgres`: POLLY_TEST_PG_BIN, else the newest /usr/lib/postgresql/<v>/bin. */
export function postgresBinDir(): string {
  const fromEnv = process.env.POLLY_TEST_PG_BIN;
  const candidates = fromEnv
    ? [fromEnv]
    : existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .filter((v) => /^\d+$/.test(v))
          .sort((a, b) => Number(b) - Number(a))
          .map((v) => join('/usr/lib/postgresql', v, 'bin'))
      : [];
  const found = candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'postgres')));
  if (!found)
    throw new Error(
      `PostgreSQL server binaries (initdb, postgres) not found in ${candidates.length ? candidates.join(', ') : '/usr/lib/postgresql/*/bin'}: install Debian's package (apt-get update && apt-get install -y postgresql) or set POLLY_TEST_PG_BIN to the directory holding them.`,
    );
  return found;
}

function uidOf(user: string): { uid: number; gid: number } | null {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${user}:`));
  if (!line) return null;
  const f = line.split(':');
  return { uid: Number(f[2]), gid: Number(f[3]) };
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Run `cmd` (as the `postgres` user when root) to completion, bounded by `ms`; rejects with its output on failure. */
async function run(cmd: string, args: string[], asUser: boolean, ms: number): Promise<void> {
  const [file, argv] = asUser ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      reject(new Error(`${cmd} did not finish in ${ms} ms:\n${out}`));
    }, ms);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${cmd} exited ${code}:\n${out}`));
    });
  });
}

/** initdb a temporary cluster and start it; resolves once it accepts connections (bounded: 30 s). */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const root = process.getuid?.() === 0;
  const owner = root ? uidOf('postgres') : null;
  if (root && !owner) throw new Error("running as root, but there is no postgres user to run the test cluster as (Debian's postgresql package creates it).");
  const base = mkdtempSync(join(tmpdir(), 'polly-pg-'));
  const data = join(base, 'data');
  const sockets = join(base, 'sockets');
  mkdirSync(data);
  mkdirSync(sockets);
  if (owner) {
    chmodSync(base, 0o755);
    for (const d of [data, sockets]) chownSync(d, owner.uid, owner.gid);
  }
  chmodSync(data, 0o700);
  await run(join(bin, 'initdb'), ['-D', data, '-U', 'polly', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], root, 60_000);
  const port = await freePort();
  const args = ['-D', data, '-p', String(port), '-k', sockets, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=40', '-c', 'shared_buffers=16MB', '-c', 'fsync=on'];
  const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(bin, 'postgres'), ...args]] : [join(bin, 'postgres'), args];
  const server = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let log = '';
  server.stderr!.on('data', (b: Buffer) => (log = (log + b.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `postgresql://polly@127.0.0.1:${port}/postgres`;

  const stop = async (): Promise<void> => {
    const kill = (signal: NodeJS.Signals): void => {
      try {
        process.kill(-server.pid!, signal);
      } catch {
        // already gone
      }
    };
    if (server.exitCode === null && server.signalCode === null) {
      kill('SIGINT');
      const timer = setTimeout(() => kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    kill('SIGKILL'); // anything left in the group (a backend of a killed postmaster)
    rmSync(base, { recursive: true, force: true });
  };

  const deadline = Date.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null) {
      await stop();
      throw new Error(`postgres exited before accepting connections:\n${log}`);
    }
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`postgres did not accept connections on port ${port} within 30 s:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, port, stop };
}
