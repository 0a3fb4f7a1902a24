#!/usr/bin/env bash
# Builds the npm package in pkg/:
#   cargo (profile `wasm` of Cargo.toml, wasm32, +simd128 from .cargo/config.toml)
#   -> wasm-bindgen (one glue, --target web, for every runtime)
#   -> wasm-opt -O3 (npm binaryen)
#   -> pkg/ = pkg.json (version from Cargo.toml) + src/wasm/js/* + src/wasm/js/entries/* + glue
# Prints the raw and gzipped size of the shipped .wasm at the end.
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '\033[1m[pkg]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[pkg] error:\033[0m %s\n' "$*" >&2; exit 1; }

bash .ci/setup.sh build

crate=ctxfold
version=$(cargo metadata --no-deps --format-version 1 --offline 2>/dev/null \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const p=JSON.parse(s).packages.find(p=>p.name==="'"$crate"'");process.stdout.write(p.version)})')
[ -n "$version" ] || die "could not read the crate version from Cargo.toml"

# 1. The `wasm` profile of Cargo.toml (the release settings). It strips debug info only:
#    `strip = true` would also drop the `target_features` section that wasm-bindgen reads to
#    emit externref glue; wasm-opt removes names and the remaining custom sections below.
say "cargo build --profile wasm --target wasm32-unknown-unknown --lib ($crate $version)"
cargo build --profile wasm --target wasm32-unknown-unknown --lib
raw_wasm="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/wasm/$crate.wasm"

# 2. wasm-bindgen glue, `--target web` (checked on 0.2.130): ESM with async `init` and `initSync`,
#    no Node.js built-ins. Every entry uses it: Node.js reads the .wasm itself and calls
#    `initSync`, workerd passes its compiled module to `initSync`, browsers call `init`.
bg=target/wasm-bindgen
rm -rf "$bg"
say "wasm-bindgen --target web"
.tools/bin/wasm-bindgen --target web --out-dir "$bg/web" --out-name "$crate" "$raw_wasm"

# 3. wasm-opt from npm binaryen. The features are those rustc enables for wasm32-unknown-unknown
#    (Rust 1.95 defaults) plus simd128 from .cargo/config.toml; wasm-opt fails validation if the
#    module uses one that is not listed here. `-O3` rather than `-Os`: on the `opt-level = "s"`
#    build -Os saves 3.8 KB gzip -9 and was no faster anywhere in an A/B of the benchmarks
#    (2026-12-01; -O3 0–5 % faster on loading and pruning, within noise elsewhere).
#    `--low-memory-unused` lets it fold constant offsets into loads and stores, which assumes no
#    access below address 1024: rustc puts the 1 MiB stack first, so that is only its far end,
#    reached by an overflowing stack alone.
#    Two choices for gzip that leave the code as -O3 writes it (docs/decisions/size-budget.md,
#    2026-12-02): `--skip-pass=memory-packing` keeps the data in whole segments (packing cuts
#    their zero runs, which gzip nearly deletes anyway, for segment headers it cannot:
#    -2.7 KB gzip -9, +3 KB raw), and `--reorder-functions-by-name` puts the functions of one
#    module and the copies of one generic next to each other, where gzip finds their likeness
#    (-1.5 KB). `--no-inline=*::Wasm*` keeps the bodies of the exported methods out of
#    their wasm-bindgen shims: each body stays one function its shim calls instead of a copy
#    merged into the shim's argument and result conversions (-6.8 KB gzip -9; the work per
#    call is the body's, one call more; docs/decisions/size-budget.md, 2026-12-03).
say "wasm-opt -O3"
opt_wasm="$bg/${crate}_bg.opt.wasm"
tests/node_modules/.bin/wasm-opt "$bg/web/${crate}_bg.wasm" -o "$opt_wasm" '--no-inline=*::Wasm*' -O3 \
  --skip-pass=memory-packing --reorder-functions-by-name \
  --low-memory-unused \
  --enable-bulk-memory --enable-multivalue --enable-mutable-globals \
  --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext --enable-simd \
  --strip-debug --strip-producers --strip-target-features

# 4. Assemble in a staging folder, then swap it in (a running demo server never sees half a pkg/).
stage="target/pkg.staging"
rm -rf "$stage"
mkdir -p "$stage"
cp "$opt_wasm" "$stage/${crate}_bg.wasm"
# The glue; its `@ts-self-types` pragma names a .d.ts that we do not ship (the entries'
# hand-written .d.ts are the package's types).
sed '/@ts-self-types/d' "$bg/web/$crate.js" >"$stage/glue.js"
# The hand-written API (every .js / .d.ts of src/wasm/js, subfolders except entries/ kept as is).
(cd src/wasm/js && find . -path ./entries -prune -o -type f \( -name '*.js' -o -name '*.d.ts' \) -print) |
  while read -r f; do
    mkdir -p "$stage/$(dirname "$f")"
    cp "src/wasm/js/$f" "$stage/$f"
  done
# The texts the JS shell itself puts into requests (inline imaging's notes and markers), from
# prompts/inline-*.md: `prompts/inline-tool-result.md` is `PROMPTS.toolResult`.
node -e '
  const fs = require("fs");
  const texts = {};
  for (const f of fs.readdirSync("prompts").filter((f) => /^inline-.*\.md$/.test(f)).sort()) {
    const key = f.slice(7, -3).replace(/-(.)/g, (_, c) => c.toUpperCase());
    texts[key] = fs.readFileSync("prompts/" + f, "utf8").trimEnd();
  }
  const body = JSON.stringify(texts, null, 2);
  process.stdout.write("// Generated by .ci/pkg.sh from prompts/inline-*.md (our wording); edit those files.\n" +
    "export const PROMPTS = Object.freeze(" + body + ");\n");
' >"$stage/prompts.js"
for f in src/wasm/js/entries/*.js src/wasm/js/entries/*.d.ts; do
  name=$(basename "$f")
  [ ! -e "$stage/$name" ] || die "src/wasm/js/entries/$name clashes with $name of src/wasm/js or the glue"
  cp "$f" "$stage/$name"
done
# The JavaScript ships as written, comments included: a stack trace or a debugger in pkg/ shows
# the source lines themselves (pkg/X.js is src/wasm/js/X.js, pkg/node.js is
# src/wasm/js/entries/node.js, pkg/glue.js is the wasm-bindgen output), so no source maps.
node -e '
  const fs = require("fs");
  const [src, dst, version] = process.argv.slice(1);
  const pkg = JSON.parse(fs.readFileSync(src, "utf8"));
  pkg.version = version;
  fs.writeFileSync(dst, JSON.stringify(pkg, null, 2) + "\n");
' pkg.json "$stage/package.json" "$version"
# The user documentation: README.md and docs/guide/*.md, each as in the repository except that
# the blocks between `<!-- repo-only` and `<!-- /repo-only -->` (building from a checkout, links
# to CONTRIBUTING.md and the repository's own docs/ pages, which are not shipped) are left out,
# and links into src/wasm/js/ (the .d.ts files) point at the shipped copies at the package root.
# Every example stays, and every relative link resolves inside the package
# (tests/js/readme.test.mjs checks both).
ship_doc() { # source, destination
  mkdir -p "$(dirname "$2")"
  awk '
    /^<!-- repo-only/ { skip = 1; next }
    /^<!-- \/repo-only -->/ { skip = 0; if (!noted++) print "Building from a checkout, the contributor guide and the measurements are in the source repository.\n"; next }
    !skip { print }
  ' "$1" | sed -E 's#\]\(((\.\./)*)src/wasm/js/#](\1#g' | cat -s >"$2"
}
[ -f README.md ] || die "README.md is missing"
ship_doc README.md "$stage/README.md"
for f in docs/guide/*.md; do ship_doc "$f" "$stage/$f"; done
# The optional GNU Unifont fallback (snapcompact: CJK, kana, hangul, rare symbols), exported as
# `ctxfold/unifont.cxfb` and loaded by the host with registerFallbackFont() when it needs it.
cp fonts/compiled/unifont.cxfb "$stage/unifont.cxfb"
# Every file the exports map names must exist.
node -e '
  const fs = require("fs"), path = require("path");
  const dir = process.argv[1];
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const targets = [];
  const walk = (v) => typeof v === "string" ? targets.push(v) : Object.values(v).forEach(walk);
  walk(pkg.exports); ["main", "module", "types"].forEach((k) => pkg[k] && targets.push(pkg[k]));
  const missing = targets.filter((t) => !fs.existsSync(path.join(dir, t)));
  if (missing.length) { console.error("[pkg] error: package.json names missing files: " + missing.join(", ")); process.exit(1); }
' "$stage"
rm -rf pkg
mv "$stage" pkg
# Tests and benchmarks import the built package by its name, through its `exports` map.
ln -sfn ../../pkg tests/node_modules/ctxfold

raw=$(wc -c <"pkg/${crate}_bg.wasm")
gz=$(gzip -9 -c "pkg/${crate}_bg.wasm" | wc -c)
say "pkg/ ready: $crate@$version"
printf '[pkg] %s: %s bytes raw, %s bytes gzip -9\n' "pkg/${crate}_bg.wasm" "$raw" "$gz"
