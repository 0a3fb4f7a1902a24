#!/usr/bin/env bash
# Every test of the project, in order (`make test` runs them all; `.ci/run` runs `make test`):
#
#   setup         .ci/setup.sh (wasm target, wasm-bindgen-cli, npm tools, chromium)
#   fmt           cargo fmt --check
#   clippy        cargo clippy --workspace --all-targets -- -D warnings   (native; and the
#                 testkit alone, without its `invariants` feature, as gen-session builds it)
#   clippy-wasm   cargo clippy --target wasm32-unknown-unknown --lib --test wasm -- -D warnings
#   jslint        .ci/biome.sh: Biome's format, lint and import-order check of the hand-written
#                 JavaScript (src/js, www, tests/js, tests/browser, tests/bench)
#   tscheck       tsc -p tsconfig.json --noEmit over src/js (strict TypeScript). It needs the
#                 inputs .ci/pkg.sh generates (the wasm-bindgen glue's .d.ts, runner/prompts.ts):
#                 it runs after `pkg` in a full run, and builds the package first when they are
#                 missing (`make lint` on a fresh clone); then .ci/ts-layers.mjs, the import
#                 direction of src/js (entries → ai-sdk → runner → providers → formats → core)
#                 and no import cycle
#   rust          cargo test --workspace   (native: ctxfold, tests/it, crates/testkit)
#   wasm-node     tests/wasm.rs under Node.js       (wasm-bindgen-test-runner)
#   wasm-browser  tests/wasm.rs in headless Chromium (wasm-bindgen-test-runner + chromedriver)
#   pkg           .ci/pkg.sh (builds pkg/)
#   size          .ci/size.sh (pkg/ against the size budget in .ci/size-budget)
#   js            node --test tests/js/       (the built package under Node.js, types, bundlers)
#   browser       node --test tests/browser/  (the built package in Chromium via playwright-core)
#
#   .ci/test.sh [STEP...]     only those steps (in the order given); FAIL_FAST=1 stops at the
#                             first failure. Logs go to tests/out/logs/STEP.log.
# The last line is "summary: N passed, N failed" over every test that ran (cargo and node).
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# CI builds from scratch in a fresh clone: incremental compilation only costs time there.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

all_steps=(setup fmt clippy clippy-wasm jslint rust wasm-node wasm-browser pkg tscheck size js browser)
if [ $# -gt 0 ]; then steps=("$@"); else steps=("${all_steps[@]}"); fi

logs=tests/out/logs
mkdir -p "$logs"

wasm_test() {
  cargo test --target wasm32-unknown-unknown --test wasm
}

run_step() {
  case "$1" in
    setup) bash .ci/setup.sh ;;
    fmt) cargo fmt --all -- --check ;;
    clippy)
      cargo clippy --workspace --all-targets -- -D warnings
      cargo clippy -p ctxfold-testkit --all-targets -- -D warnings
      ;;
    clippy-wasm) cargo clippy --target wasm32-unknown-unknown --lib --test wasm -- -D warnings ;;
    jslint) bash .ci/biome.sh ;;
    tscheck)
      if [ ! -f src/js/core/glue.d.ts ] || [ ! -f src/js/runner/prompts.ts ]; then
        echo "tscheck: the generated inputs are missing; building the package first"
        bash .ci/pkg.sh
      fi
      tests/node_modules/.bin/tsc -p tsconfig.json --noEmit
      echo "tscheck: tsc --noEmit clean"
      node .ci/ts-layers.mjs
      ;;
    rust) cargo test --workspace ;;
    wasm-node) WASM_BINDGEN_USE_NODE_EXPERIMENTAL=1 wasm_test ;;
    wasm-browser)
      WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=/usr/bin/chromedriver \
        WASM_BINDGEN_TEST_WEBDRIVER_JSON="$root/.ci/webdriver.json" wasm_test
      ;;
    pkg) bash .ci/pkg.sh ;;
    size) bash .ci/size.sh ;;
    js) (cd tests && node --test js/) ;;
    browser) (cd tests && node --test browser/) ;;
    *)
      echo "unknown step '$1' (steps: ${all_steps[*]})" >&2
      return 2
      ;;
  esac
}

declare -A status seconds
failed_steps=()
pkg_failed=0
t_all=$(date +%s)
for step in "${steps[@]}"; do
  if [ "$pkg_failed" = 1 ] && { [ "$step" = size ] || [ "$step" = tscheck ] || [ "$step" = js ] || [ "$step" = browser ]; }; then
    status[$step]=skipped
    seconds[$step]=0
    failed_steps+=("$step")
    printf '\n\033[1;33m=== %s: skipped (pkg failed)\033[0m\n' "$step"
    continue
  fi
  printf '\n\033[1;34m=== %s\033[0m\n' "$step"
  t0=$(date +%s)
  if run_step "$step" 2>&1 | tee "$logs/$step.log"; then
    status[$step]=ok
  else
    status[$step]=FAILED
    failed_steps+=("$step")
    if [ "$step" = setup ]; then
      echo "set-up failed: nothing else can run" >&2
      exit 1
    fi
    [ "$step" = pkg ] && pkg_failed=1
  fi
  seconds[$step]=$(($(date +%s) - t0))
  if [ "${status[$step]}" = FAILED ] && [ "${FAIL_FAST:-0}" = 1 ]; then break; fi
done

# Tests counted over every log: cargo/wasm-bindgen-test "test result:" lines and node's TAP totals.
passed=0
failed=0
for step in "${steps[@]}"; do
  f="$logs/$step.log"
  [ -f "$f" ] && [ "${status[$step]:-}" != skipped ] || continue
  read -r p q < <(sed 's/\x1b\[[0-9;]*m//g' "$f" | awk '
    /^test result: / { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) q += $i } }
    /^# pass [0-9]+$/ { p += $3 }
    /^# fail [0-9]+$/ { q += $3 }
    END { print p + 0, q + 0 }')
  passed=$((passed + p))
  failed=$((failed + q))
done

printf '\n\033[1m%-14s %-8s %s\033[0m\n' step status seconds
for step in "${steps[@]}"; do
  printf '%-14s %-8s %s\n' "$step" "${status[$step]:-not run}" "${seconds[$step]:-}"
done
printf '%-14s %-8s %s\n' total "" "$(($(date +%s) - t_all))"
if [ ${#failed_steps[@]} -gt 0 ]; then
  printf '\033[1;31mfailed steps: %s\033[0m (logs in %s/)\n' "${failed_steps[*]}" "$logs"
fi
echo "summary: $passed passed, $failed failed"
[ ${#failed_steps[@]} -eq 0 ] && [ "$failed" -eq 0 ]
