#!/usr/bin/env bash
# Checks the built package (pkg/, from `make pkg`) against the size budget in .ci/size-budget:
# the gzipped tar of pkg/ without the optional Unifont asset. Prints the breakdown per file
# (each gzip -9 on its own, for orientation; the budget is on the tar) and fails when over.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '\033[1m[size]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[size] error:\033[0m %s\n' "$*" >&2; exit 1; }

setting() { awk -v k="$1" '$1 == k { print $2 }' .ci/size-budget; }
budget=$(setting budget)
[[ "$budget" =~ ^[0-9]+$ ]] || die ".ci/size-budget must hold 'budget <bytes>' (found '$budget')"
[ -f pkg/ctxfold_bg.wasm ] || die "pkg/ is not built: run 'make pkg' (or the 'pkg' step) first"

total=$(tar czf - --exclude=unifont.cxfb -C pkg . | wc -c)
wasm_raw=$(wc -c <pkg/ctxfold_bg.wasm)
say "pkg/ctxfold_bg.wasm: $wasm_raw B raw, $(gzip -9 -c pkg/ctxfold_bg.wasm | wc -c) B gzip -9"
group() { # label, files...
  local label=$1 sum=0 f
  shift
  for f in "$@"; do [ -f "$f" ] && sum=$((sum + $(gzip -9 -c "$f" | wc -c))); done
  printf '[size]   %-28s %7s B gzip -9\n' "$label" "$sum"
}
(
  cd pkg
  shopt -s nullglob
  api_js=()
  for f in *.js; do [ "$f" = glue.js ] || api_js+=("$f"); done
  group "wasm" ctxfold_bg.wasm
  group "glue.js (wasm-bindgen)" glue.js
  group "API JavaScript" "${api_js[@]}"
  group ".d.ts" *.d.ts
  group "README.md, package.json" README.md package.json
)
measure="tar czf - --exclude=unifont.cxfb -C pkg . | wc -c"
if [ "$total" -gt "$budget" ]; then
  die "the package is over its size budget: $total B ($measure) > $budget B from .ci/size-budget, $((total - budget)) B too many"
fi
say "package without unifont.cxfb: $total B gzip (tar), budget $budget B: $((budget - total)) B to spare"
