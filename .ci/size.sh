#!/usr/bin/env bash
# Checks the built package (pkg/, from `make pkg`) against the size budget in .ci/size-budget:
# the shipped .wasm, gzip -9. Prints what the rest of the package weighs (each file gzip -9 on
# its own, for orientation; not counted) and fails when the .wasm is over.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '\033[1m[size]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[size] error:\033[0m %s\n' "$*" >&2; exit 1; }

setting() { awk -v k="$1" '$1 == k { print $2 }' .ci/size-budget; }
budget=$(setting budget)
[[ "$budget" =~ ^[0-9]+$ ]] || die ".ci/size-budget must hold 'budget <bytes>' (found '$budget')"
[ -f pkg/entries/ctxfold_bg.wasm ] || die "pkg/ is not built: run 'make pkg' (or the 'pkg' step) first"

wasm_raw=$(wc -c <pkg/entries/ctxfold_bg.wasm)
wasm_gz=$(gzip -9 -c pkg/entries/ctxfold_bg.wasm | wc -c)
group() { # label, files...
  local label=$1 sum=0 f
  shift
  for f in "$@"; do [ -f "$f" ] && sum=$((sum + $(gzip -9 -c "$f" | wc -c))); done
  printf '[size]   %-28s %8s B gzip -9\n' "$label" "$sum"
}
say "not counted (reported only):"
(
  cd pkg
  shopt -s nullglob globstar
  # The package's folders since the TypeScript move (entries/, core/, formats/, ...): the glue
  # is core/glue.js; everything else ending in .js is the API's JavaScript.
  api_js=()
  for f in **/*.js; do [ "$f" = core/glue.js ] || api_js+=("$f"); done
  group "core/glue.js (wasm-bindgen)" core/glue.js
  group "API JavaScript" "${api_js[@]}"
  group ".d.ts" **/*.d.ts
  group "README.md, docs/guide/" README.md docs/**/*.md
  group "unifont.cxfb (optional)" unifont.cxfb
  printf '[size]   %-28s %8s B\n' "whole package (tar gzip)" "$(tar czf - -C . . | wc -c)"
)
measure="gzip -9 -c pkg/entries/ctxfold_bg.wasm | wc -c"
if [ "$wasm_gz" -gt "$budget" ]; then
  die "pkg/entries/ctxfold_bg.wasm is over its size budget: $wasm_gz B ($measure) > $budget B from .ci/size-budget, $((wasm_gz - budget)) B too many"
fi
say "pkg/entries/ctxfold_bg.wasm: $wasm_raw B raw, $wasm_gz B gzip -9; budget $budget B: $((budget - wasm_gz)) B to spare"
