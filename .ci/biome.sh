#!/usr/bin/env bash
# Biome (npm @biomejs/biome, pinned in tests/package.json; rules in .ci/biome.jsonc) over the
# hand-written JavaScript: the package API, the demo, the JS tests and benchmarks, tests/reference/.
#
#   .ci/biome.sh           check formatting, lint rules and import order; fails on any finding
#                          (`biome ci`: the `jslint` step of .ci/test.sh, run by `make lint`)
#   .ci/biome.sh --write   apply the formatting, the import order and the safe lint fixes
#                          (`make fmt`); what is left is printed and needs a hand
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

paths=(src/js www tests/js tests/browser tests/bench tests/fuzz tests/reference)
biome=tests/node_modules/.bin/biome
if [ ! -x "$biome" ]; then
  printf '\033[1;31m[biome] error:\033[0m %s\n' "Biome is not installed in tests/node_modules: run 'make setup'" >&2
  exit 1
fi
case "${1:-}" in
  --write) exec "$biome" check --write --config-path=.ci/biome.jsonc "${paths[@]}" ;;
  '') exec "$biome" ci --colors=off --error-on-warnings --config-path=.ci/biome.jsonc "${paths[@]}" ;;
  *)
    echo "usage: .ci/biome.sh [--write]" >&2
    exit 2
    ;;
esac
