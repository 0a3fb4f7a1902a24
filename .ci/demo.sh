#!/usr/bin/env bash
# `make demo`: builds the package, generates the sample session, and serves www/ on 127.0.0.1
# (port $PORT, default 8080, or the next free one). Runs until Ctrl-C.
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '\033[1m[demo]\033[0m %s\n' "$*"; }

bash .ci/pkg.sh

# The bundled sample session (deterministic). The page copes without it, so a failure here only
# warns.
mkdir -p www/sample
say "generating www/sample/sample.jsonl (gen-session --preset sample)"
rm -f www/sample/sample.jsonl.tmp
if cargo run --release -p ctxfold-testkit --bin gen-session -- \
     --preset sample --out www/sample/sample.jsonl.tmp && [ -s www/sample/sample.jsonl.tmp ]; then
  mv www/sample/sample.jsonl.tmp www/sample/sample.jsonl
else
  rm -f www/sample/sample.jsonl.tmp
  printf '\033[1;33m[demo] warning:\033[0m gen-session wrote no sample; the demo keeps the previous one, if any, or runs without\n' >&2
fi

# www/ is a self-contained static site: it gets its own copy of the package.
rm -rf www/pkg.tmp
cp -R pkg www/pkg.tmp
rm -rf www/pkg
mv www/pkg.tmp www/pkg

say "serving www/ (Ctrl-C to stop)"
exec node www/serve.mjs --root www --port "${PORT:-8080}"
