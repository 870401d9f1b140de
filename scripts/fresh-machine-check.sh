#!/usr/bin/env bash
# Issue 31's acceptance, reproducible: what a newcomer gets on a fresh Debian machine with only
# Node and git. It builds a clean Debian bookworm root with debootstrap (minbase + git +
# ca-certificates, from the mirror apt uses here), copies this machine's Node into it (node, its npm
# and headers), clones the repository's HEAD into it, and runs, as root
# inside that root (own mount and PID namespaces, entered with pivot_root as a container is; the
# network is the host's):
#
#   demo     npm install && npm run demo     (must end with two ready PRs, unconfined, the install line)
#   test     npm test                        (must pass and end listing what it skipped and why)
#   ci-test  CI=true npm test                (must fail, naming the missing system packages)
#
# Nothing else is in the root: no bubblewrap, passt, spin, gcc, chromium, tmux, postgresql, python3,
# make, go or cargo, no HOME dotfiles. The host's extra CA certificates (/usr/local/share/
# ca-certificates) are copied in, for a machine whose HTTPS goes through an egress proxy.
#
# Usage: scripts/fresh-machine-check.sh [--root DIR] [--rebuild] [--reuse-install] [--out DIR] [STEP...]
#   STEP: demo (default), test, ci-test, shell; vitest arguments after `--` go to both test steps.
#   --root DIR  where the root is built or reused (default: ${TMPDIR:-/tmp}/polly-fresh-root).
#   --rebuild   build the root again even when DIR holds one; each run clones the repository again,
#   --reuse-install  except with this: the last clone is moved to HEAD and keeps its node_modules/.
#   --out DIR   where each step's output and vitest's JSON report are kept (default: DIR/../out).
# Needs: root, debootstrap (apt-get install debootstrap), unshare and pivot_root (util-linux).
# Exit: 0 when every step did what the acceptance says (ci-test: the suite FAILED naming packages).
# The whole suite takes about as long as CI (it was checked this way; figures in docs/install.md).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${TMPDIR:-/tmp}/polly-fresh-root"
rebuild=0
reuse=0
out=''
steps=()
vitest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root="$2"; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    --reuse-install) reuse=1; shift ;;
    --out) out="$2"; shift 2 ;;
    --) shift; vitest_args=("$@"); break ;;
    demo | test | ci-test | shell) steps+=("$1"); shift ;;
    *) echo "fresh-machine-check: unknown argument '$1' (steps: demo, test, ci-test, shell; options: --root DIR, --rebuild, --reuse-install, --out DIR)" >&2; exit 2 ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(demo)
[ -n "$out" ] || out="$(dirname "$root")/polly-fresh-out"
mkdir -p "$out"

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-machine-check: needs root (debootstrap, chroot and mount namespaces); run it with sudo" >&2
  exit 2
fi
command -v debootstrap >/dev/null || { echo "fresh-machine-check: debootstrap is missing: apt-get install -y debootstrap" >&2; exit 2; }

# The Debian mirror apt uses on this machine (deb822 or one-line sources), else Debian's own.
mirror="$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
  grep -v security | grep -oE 'https?://[^ ]+' | head -n1 || true)"
mirror="${mirror:-http://deb.debian.org/debian}"

if [ "$rebuild" = 1 ] || [ ! -x "$root/usr/bin/git" ]; then
  rm -rf "$root"
  echo "fresh-machine-check: debootstrap bookworm (minbase + git, ca-certificates) from $mirror into $root" >&2
  debootstrap --variant=minbase --include=git,ca-certificates bookworm "$root" "$mirror" >"$out/debootstrap.log" 2>&1 ||
    { tail -n 20 "$out/debootstrap.log" >&2; exit 1; }
fi

# This machine's Node: its node binary, its npm as installed (npm may have been upgraded since the
# node package), and its headers when it has them (for a native module without a prebuilt binary).
node_bin="$(readlink -f "$(command -v node)")"
prefix="$(dirname "$(dirname "$node_bin")")"
mkdir -p "$root/usr/local/bin" "$root/usr/local/lib/node_modules" "$root/usr/local/include"
cp -a "$node_bin" "$root/usr/local/bin/node"
rm -rf "$root/usr/local/lib/node_modules/npm"
cp -a "$prefix/lib/node_modules/npm" "$root/usr/local/lib/node_modules/"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
[ ! -d "$prefix/include/node" ] || cp -a "$prefix/include/node" "$root/usr/local/include/"
# The host's own CAs (an egress proxy's): into the root's store, and named to Node (which reads
# only its built-in CAs otherwise), as such a machine's npm config would.
ca_env=''
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  ca_env='NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt'
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"

# An empty /tmp on disk (the suite writes gigabytes of temp repositories there).
find "$root/tmp" -mindepth 1 -delete 2>/dev/null || rm -rf "${root:?}/tmp/"*
chmod 1777 "$root/tmp"

# A fresh clone of HEAD (committed work only), as a newcomer's `git clone` would give; with
# --reuse-install the last clone moves to HEAD and keeps its node_modules/ (for trying a fix).
head="$(git -C "$repo" rev-parse HEAD)"
if [ "$reuse" = 1 ] && [ -d "$root/polly/node_modules" ]; then
  git -C "$root/polly" fetch --quiet "$repo" "$head"
  git -C "$root/polly" checkout --quiet --force "$head"
  git -C "$root/polly" clean --quiet -fdx -e node_modules
else
  rm -rf "$root/polly"
  git clone --quiet --no-hardlinks "$repo" "$root/polly"
  git -C "$root/polly" checkout --quiet "$head"
fi

# One shell command inside the root, as root, with a clean environment, in its own mount and PID
# namespaces (every process a step leaves dies with it). The root is entered with pivot_root, as a
# container is, not chroot: in a chroot the kernel refuses user namespaces, which codex's own
# sandbox needs. The shell stays the namespace's init (`; exit $?` keeps bash from exec-ing the
# last command), so it reaps the orphans tests leave.
inside() {
  local log="$1" cmd="$2"
  unshare --mount --pid --fork --kill-child --propagation private bash -c '
    set -e
    r="$1"
    mount --bind "$r" "$r"
    mount --rbind /dev "$r/dev"
    mount -t sysfs sys "$r/sys" 2>/dev/null || true
    mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm" 2>/dev/null || true
    cd "$r"
    mkdir -p .oldroot
    pivot_root . .oldroot
    cd /
    mount -t proc proc /proc
    umount -l /.oldroot
    rmdir /.oldroot
    exec /usr/bin/env -i $3 HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -c "$2; exit \$?"
  ' fresh "$root" "$cmd" "$ca_env" 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}

inside "$out/setup.log" 'update-ca-certificates >/dev/null 2>&1; node --version; git --version;
  for p in bwrap pasta spin cc chromium tmux make go cargo python3 psql; do command -v "$p" >/dev/null && echo "present: $p"; done; true'

status=0
# vitest's arguments, quoted for the shell inside the root.
extra="$(printf ' %q' "${vitest_args[@]+"${vitest_args[@]}"}")"
for step in "${steps[@]}"; do
  case "$step" in
    demo)
      set +e
      inside "$out/demo.log" 'cd /polly && npm install --no-audit --no-fund && time npm run demo'
      rc=$?
      set -e
      ok=1
      [ "$rc" -eq 0 ] || ok=0
      grep -q "Polly's sandbox cannot start here" "$out/demo.log" || ok=0
      grep -q '^Sandbox: NONE, the workers ran unconfined' "$out/demo.log" || ok=0
      grep -q 'apt-get install bubblewrap' "$out/demo.log" || ok=0
      grep -qE '^Branches on origin: polly/[^ ,]+, polly/[^ ,]+$' "$out/demo.log" || ok=0
      echo "fresh-machine-check: demo: exit $rc; $([ "$ok" = 1 ] && echo 'two PRs, unconfined notice and install line: OK' || echo 'NOT as the acceptance says')" >&2
      [ "$ok" = 1 ] || status=1
      ;;
    test)
      set +e
      inside "$out/test.log" "cd /polly && [ -d node_modules ] || npm install --no-audit --no-fund; time npm test -- --reporter=default --reporter=json --outputFile=/polly/.fresh-test.json$extra"
      rc=$?
      set -e
      cp "$root/polly/.fresh-test.json" "$out/test.json" 2>/dev/null || true
      listed=0
      grep -q '^Install what is missing: sudo apt-get install -y' "$out/test.log" && listed=1
      echo "fresh-machine-check: npm test: exit $rc; skip list $([ "$listed" = 1 ] && echo printed || echo MISSING)" >&2
      [ "$rc" -eq 0 ] && [ "$listed" = 1 ] || status=1
      ;;
    ci-test)
      set +e
      inside "$out/ci-test.log" "cd /polly && [ -d node_modules ] || npm install --no-audit --no-fund; time CI=true npm test -- --reporter=default --reporter=json --outputFile=/polly/.fresh-ci-test.json$extra"
      rc=$?
      set -e
      cp "$root/polly/.fresh-ci-test.json" "$out/ci-test.json" 2>/dev/null || true
      named="$(grep -oE '[a-z0-9-]+ is missing \(needed for' "$out/ci-test.log" | cut -d' ' -f1 | sort -u | tr '\n' ' ' || true)"
      echo "fresh-machine-check: CI=true npm test: exit $rc; packages named: ${named:-none}" >&2
      [ "$rc" -ne 0 ] && [ -n "$named" ] || status=1
      ;;
    shell)
      inside /dev/null 'cd /polly && bash -i' || true
      ;;
  esac
done
echo "fresh-machine-check: logs in $out" >&2
exit "$status"
