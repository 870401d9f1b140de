/**
 * Which Polly this is: the package version and the build stamp, the SHA-256 of the sources the
 * build compiled (`dist/.sources-sha256`, written by scripts/post-build.mjs). Two installations run
 * the same Polly when both are equal; a remote host must (workers/hosts/), since the turn it runs
 * is described by this one's data formats and its sandbox profile.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './install-paths.js';

/** The version (package.json) and build (the sources' SHA-256, or `unknown` for a build without a stamp). */
export interface BuildIdentity {
  version: string;
  build: string;
}

let cached: BuildIdentity | undefined;

/** This installation's identity, read once. */
export function buildIdentity(): BuildIdentity {
  if (cached) return cached;
  const root = packageRoot();
  let version = '0.0.0-unknown';
  try {
    version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string }).version ?? version;
  } catch {
    // keep the unknown version
  }
  let build = 'unknown';
  try {
    const stamp = readFileSync(join(root, 'dist', '.sources-sha256'), 'utf8').trim();
    if (/^[0-9a-f]{64}$/.test(stamp)) build = stamp;
  } catch {
    // a build without a stamp
  }
  cached = { version, build };
  return cached;
}

/** `0.1.0 (build 1a2b3c4d5e6f)`: how a message names an identity. Pure. */
export function describeBuild(id: BuildIdentity): string {
  return `${id.version} (build ${id.build === 'unknown' ? 'unknown' : id.build.slice(0, 12)})`;
}

/** True when both name the same build (an unknown build never matches). Pure. */
export function sameBuild(a: BuildIdentity, b: BuildIdentity): boolean {
  return a.version === b.version && a.build === b.build && a.build !== 'unknown';
}
