#!/usr/bin/env bash
# Idempotent set-up of everything the build and the tests need, on a fresh machine of this image.
#
#   .ci/setup.sh            all of it
#   .ci/setup.sh build      only what `make pkg` needs (wasm target, wasm-bindgen, npm tools)
#
# Nothing is cached outside the repo except what the machine image's own package managers keep:
# the Rust toolchain's wasm32 std (ensure-wasm-target.sh), ~/.cargo/registry (crate sources for
# the pinned wasm-bindgen-cli) and Debian's chromium packages.
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[setup] error:\033[0m %s\n' "$*" >&2; exit 1; }

# wasm-bindgen-cli must match the `wasm-bindgen = "=X"` pin of Cargo.toml exactly.
bindgen_version=$(sed -n 's/^wasm-bindgen *= *"=\([0-9.]*\)".*/\1/p' Cargo.toml)
[ -n "$bindgen_version" ] || die 'Cargo.toml has no exact pin `wasm-bindgen = "=X.Y.Z"`'

# 1. The wasm32 standard library for the machine's one Rust toolchain.
shared_toolchain="$root/../shared/toolchain/ensure-wasm-target.sh"
if [ -d "$(rustc --print sysroot)/lib/rustlib/wasm32-unknown-unknown/lib" ]; then
  say "wasm32-unknown-unknown target: present"
elif [ -x "$shared_toolchain" ] || [ -f "$shared_toolchain" ]; then
  say "wasm32-unknown-unknown target: installing"
  bash "$shared_toolchain"
else
  rustup target add wasm32-unknown-unknown || die "cannot install the wasm32-unknown-unknown target"
fi

# 2. wasm-bindgen-cli (wasm-bindgen + wasm-bindgen-test-runner) pinned, in .tools/.
have=$(.tools/bin/wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
have_runner=$(.tools/bin/wasm-bindgen-test-runner --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" = "$bindgen_version" ] && [ "$have_runner" = "$bindgen_version" ]; then
  say "wasm-bindgen-cli $bindgen_version: present in .tools/"
else
  say "wasm-bindgen-cli $bindgen_version: installing into .tools/ (a few minutes on 2 cores)"
  # No --locked: this is the invocation verified on this machine image. To build in about a third
  # of the time (measured 3.4 vs 10.5 min on a busy 2-core machine): no TLS stack (the test
  # runner only talks plain HTTP to a local chromedriver), only the two binaries we use, and
  # opt-level 1 (these tools process small modules; their speed does not matter).
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo install wasm-bindgen-cli --version "=$bindgen_version" --root .tools --force \
      --no-default-features --bin wasm-bindgen --bin wasm-bindgen-test-runner
fi

# 3. Node tools (binaryen's wasm-opt, esbuild, playwright-core), exactly as in the lockfile.
stamp=tests/node_modules/.ctxfold-npm-stamp
if [ -f "$stamp" ] && [ "$stamp" -nt tests/package-lock.json ] && [ "$stamp" -nt tests/package.json ] \
   && [ -x tests/node_modules/.bin/wasm-opt ]; then
  say "npm dev tools: present in tests/node_modules"
else
  say "npm dev tools: npm ci in tests/"
  (cd tests && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi

[ "$what" = build ] && exit 0

# 4. Debian's Chromium and ChromeDriver for the browser tests.
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  say "chromium + chromedriver: present ($(/usr/bin/chromium --version 2>/dev/null | head -1))"
elif [ "$(id -u)" = 0 ]; then
  say "chromium + chromedriver: installing Debian packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || die "chromium install did not provide /usr/bin/chromium and /usr/bin/chromedriver"
else
  die "the browser tests need Debian's chromium and chromium-driver: run 'sudo apt-get install -y chromium chromium-driver' (or run this as root)"
fi
say "done"
