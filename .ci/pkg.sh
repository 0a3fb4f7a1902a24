#!/usr/bin/env bash
# Builds the npm package in pkg/:
#   cargo (profile `wasm` of Cargo.toml, wasm32, +simd128 from .cargo/config.toml)
#   -> wasm-bindgen (one glue, --target web, for every runtime)
#   -> wasm-opt -O3 (npm binaryen)
#   -> tsc: src/js/ (+ the glue) -> pkg/, beside pkg.json (version from Cargo.toml)
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

# PKG_JS_ONLY=1 reuses the .wasm and glue of the last build (steps 1-3) when they exist: for work
# on src/js/ alone, the TypeScript compile and the assembly take seconds.
bg=target/wasm-bindgen
opt_wasm="$bg/${crate}_bg.opt.wasm"
if [ "${PKG_JS_ONLY:-0}" = 1 ] && [ -f "$opt_wasm" ] && [ -f "$bg/web/$crate.js" ]; then
  say "PKG_JS_ONLY=1: the .wasm and glue of the last build ($opt_wasm)"
else
# 1. The `wasm` profile of Cargo.toml (the release settings). It strips debug info only:
#    `strip = true` would also drop the `target_features` section that wasm-bindgen reads to
#    emit externref glue; wasm-opt removes names and the remaining custom sections below.
say "cargo build --profile wasm --target wasm32-unknown-unknown --lib ($crate $version)"
cargo build --profile wasm --target wasm32-unknown-unknown --lib
raw_wasm="${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/wasm/$crate.wasm"

# 2. wasm-bindgen glue, `--target web` (checked on 0.2.130): ESM with async `init` and `initSync`,
#    no Node.js built-ins. Every entry uses it: Node.js reads the .wasm itself and calls
#    `initSync`, workerd passes its compiled module to `initSync`, browsers call `init`.
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
#    Two runs (docs/decisions/size-budget.md, 2026-12-07 afternoon). By default wasm-opt
#    inlines every function that has ONE caller whatever its size. The second run limits that
#    to small ones (`--one-caller-inline-max-function-size=50`): large single-use steps stay
#    functions of their own (the loader's `#[inline(never)]` steps among them), which V8
#    compiles again with TurboFan at a smaller cost in a first call (open -> plan 0.77 x), and
#    gzip finds the copies of one generic alike. The limit alone would also leave out of line
#    the small generic code that runs per element or per lookup: the allocator's `realloc` and
#    large `malloc`, hash-table lookups and removals, iterator folds. So the first run inlines
#    those as the default does: every function whose name starts with one of `keep_calls`
#    (below: our crate, alloc, the rest of core, std, wasm-bindgen, serde, ...) is kept out of
#    its inliner (`--no-inline=PATTERN`, one wildcard per flag, repeatable), which leaves it
#    dlmalloc, hashbrown, indexmap and `core::iter`, inlined into their one caller whatever
#    their size. It keeps the names (`-g`) for the patterns of the second run, which strips
#    them. Our own hot single-caller functions are `#[inline(always)]` in the source instead
#    (rustc inlines them before wasm-opt sees them). 598,996 -> 575,252 B gzip -9.
keep_calls=(
  'ctxfold*' '<ctxfold*' 'alloc*' '<alloc*' 'core[*' '<core[*' 'core::ops*' 'core::result*'
  'core::slice*' 'core::ptr*' 'core::str*' 'core::hash*' 'core::option*' 'core::fmt*'
  'core::num*' 'core::char*' 'core::cell*' 'std*' '<std*' 'wasm_bindgen*' '<wasm_bindgen*'
  'js_sys*' '<js_sys*' 'serde*' '<serde*' 'ttf_parser*' '<ttf_parser*' 'memchr*' '<memchr*'
  'zmij*' '<zmij*' 'ctxfold_wasm_heap*' '<ctxfold_wasm_heap*' '<&*' '<T *' '<u*' '<f*'
  '<i8*' '<i16*' '<i32*' '<i64*' '<i128*' '<isize*' '<str*' '<char*' '<bool*' '<[*' '<(*'
  '<*const*' '<*mut*'
)
features=(--enable-bulk-memory --enable-multivalue --enable-mutable-globals
  --enable-nontrapping-float-to-int --enable-reference-types --enable-sign-ext --enable-simd)
say "wasm-opt -O3 (run 1 of 2: the allocator, hash tables and iterators inlined)"
tests/node_modules/.bin/wasm-opt "$bg/web/${crate}_bg.wasm" -o "$bg/${crate}_bg.run1.wasm" \
  '--no-inline=*::Wasm*' "${keep_calls[@]/#/--no-inline=}" -O3 \
  --skip-pass=memory-packing --low-memory-unused "${features[@]}" -g
say "wasm-opt -O3 (run 2 of 2: one-caller inlining limited to small functions)"
tests/node_modules/.bin/wasm-opt "$bg/${crate}_bg.run1.wasm" -o "$opt_wasm" '--no-inline=*::Wasm*' -O3 \
  --one-caller-inline-max-function-size=50 \
  --skip-pass=memory-packing --reorder-functions-by-name \
  --low-memory-unused "${features[@]}" \
  --strip-debug --strip-producers --strip-target-features

fi

# 4. Assemble in a staging folder, then swap it in (a running demo server never sees half a pkg/).
#    The package's JavaScript is compiled from src/js/ by the TypeScript compiler of the dev
#    dependencies (tsconfig.json at the root): pkg/ mirrors src/js/ (pkg/entries/node.js is
#    src/js/entries/node.ts), comments kept, ES2022, no minifier, each file with a source map that
#    carries its source. Two inputs are written here first, into src/js/ (git ignores them):
#    the wasm-bindgen glue (src/js/core/glue.js and the .d.ts wasm-bindgen writes for it) and the
#    texts the JS shell puts into requests (src/js/runner/prompts.ts, from prompts/inline-*.md).
stage="target/pkg.staging"
rm -rf "$stage"
mkdir -p "$stage"
mkdir -p "$stage/entries"
cp "$opt_wasm" "$stage/entries/${crate}_bg.wasm"
sed '/@ts-self-types/d' "$bg/web/$crate.js" >src/js/core/glue.js
cp "$bg/web/$crate.d.ts" src/js/core/glue.d.ts
node -e '
  const fs = require("fs");
  const texts = {};
  for (const f of fs.readdirSync("prompts").filter((f) => /^inline-.*\.md$/.test(f)).sort()) {
    const key = f.slice(7, -3).replace(/-(.)/g, (_, c) => c.toUpperCase());
    texts[key] = fs.readFileSync("prompts/" + f, "utf8").trimEnd();
  }
  const body = JSON.stringify(texts, null, 2);
  process.stdout.write("// Generated by .ci/pkg.sh from prompts/inline-*.md (our wording); edit those files.\n" +
    "export const PROMPTS = Object.freeze(" + body + " as const);\n");
' >src/js/runner/prompts.ts
say "tsc (src/js -> pkg)"
tests/node_modules/.bin/tsc -p tsconfig.json --outDir "$stage"
# The glue as wasm-bindgen wrote it (the compiler type-checks against its .d.ts and does not
# emit it; that .d.ts stays out of the package: the API's own declarations describe what the
# package exports). Every other file of pkg/ is the compiler's output, declarations included.
cp src/js/core/glue.js "$stage/core/"
if (cd src/js && find . -type f \( -name '*.js' -o -name '*.d.ts' \) ! -path './core/glue.*' -print | grep -q .); then
  die "src/js holds JavaScript or a hand-written .d.ts besides the generated glue: the package's sources are TypeScript"
fi
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
# and links into src/js/ (the API's sources) point at the shipped declarations in the package.
# Every example stays, and every relative link resolves inside the package
# (tests/js/readme.test.mjs checks both).
ship_doc() { # source, destination
  mkdir -p "$(dirname "$2")"
  awk '
    /^<!-- repo-only/ { skip = 1; next }
    /^<!-- \/repo-only -->/ { skip = 0; if (!noted++) print "Building from a checkout, the contributor guide and the measurements are in the source repository.\n"; next }
    !skip { print }
  ' "$1" | perl -pe 's#\]\(((?:\.\./)*)src/js/([^)]*?)(?<!\.d)\.ts\)#](\1\2.d.ts)#g; s#\]\(((?:\.\./)*)src/js/#](\1#g' | cat -s >"$2"
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

raw=$(wc -c <"pkg/entries/${crate}_bg.wasm")
gz=$(gzip -9 -c "pkg/entries/${crate}_bg.wasm" | wc -c)
say "pkg/ ready: $crate@$version"
printf '[pkg] %s: %s bytes raw, %s bytes gzip -9\n' "pkg/entries/${crate}_bg.wasm" "$raw" "$gz"
