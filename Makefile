# ctxfold: the one build entry point. Every target does its own set-up (idempotent), so each works
# on a fresh machine of this image. The work is done by the scripts in .ci/.
#
#   make demo     build the package, generate the sample session, serve the demo on 127.0.0.1
#   make test     every test (what CI runs: .ci/run)
#
#   make setup    tools only: wasm32 target, wasm-bindgen-cli (.tools/), npm tools (tests/), chromium
#   make pkg      build the npm package into pkg/
#   make bench    node benchmarks (tests/bench/*.bench.mjs) against pkg/, each file in a fresh
#                 process; `first-call` is the first useful call after import (import + open a
#                 1 MB session + plan, FIRST_ROUNDS=10 fresh processes), `workerd` the start of a
#                 worker to its first answer (WORKERD_ROUNDS=6); BENCH="a b" runs only those files
#   make bench-reference   the same steps in pkg/ and in the reference (oh-my-pi 18.2.3 under Bun,
#                 installed in tests/reference/), each in a fresh process, no warm-up, the sides
#                 alternating: both times, the ratios with min-max and the load (ROUNDS=5, PKG=dir,
#                 STEPS="first chain-small ...", REF_MODULES=dir BUN=file: an existing install,
#                 OURS_NODE_FLAGS="--v8-pool-size=1": Node.js flags of ctxfold's side only)
#   make lint     cargo fmt --check + clippy (native and wasm32) + Biome over the JavaScript
#                 + tsc --noEmit over src/js (builds the package first when its generated inputs are missing)
#   make size     build the package and check it against the size budget (.ci/size-budget)
#   make fuzz     the cargo-fuzz targets of fuzz/ (FUZZ_TARGET=all|name, FUZZ_SECONDS=600 each)
#   make test-rust | test-wasm | test-js | test-browser    one group of tests
#   make fmt      cargo fmt + Biome's formatting and safe fixes of the JavaScript (.ci/biome.sh)
#   make sample   regenerate www/sample/sample.jsonl
#   make serve    serve www/ as it is (no rebuild)
#   make clean    remove pkg/, www/pkg, www/sample, tests/out (keeps target/, .tools/, node_modules)

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
export RUSTUP_AUTO_INSTALL := 0
PORT ?= 8080
FUZZ_TARGET ?= all
FUZZ_SECONDS ?= 600

.PHONY: all setup pkg size test demo bench bench-reference lint fuzz fmt test-rust test-wasm test-js test-browser sample serve clean

all: pkg

setup:
	bash .ci/setup.sh

pkg:
	bash .ci/pkg.sh

test:
	bash .ci/test.sh

demo:
	PORT=$(PORT) bash .ci/demo.sh

bench: pkg
	node tests/bench/run.mjs $(BENCH)

# PKG=dir measures that build instead of building pkg/.
bench-reference: $(if $(PKG),,pkg)
	node tests/reference/run.mjs $(STEPS)

size:
	bash .ci/test.sh setup pkg size

lint:
	bash .ci/test.sh setup fmt clippy clippy-wasm jslint tscheck

fmt:
	cargo fmt --all
	bash .ci/biome.sh --write

fuzz:
	bash .ci/fuzz.sh $(FUZZ_TARGET) $(FUZZ_SECONDS)

test-rust:
	bash .ci/test.sh setup rust

test-wasm:
	bash .ci/test.sh setup wasm-node wasm-browser

test-js:
	bash .ci/test.sh setup pkg js

test-browser:
	bash .ci/test.sh setup pkg browser

sample:
	mkdir -p www/sample
	cargo run --release -p ctxfold-testkit --bin gen-session -- --preset sample --out www/sample/sample.jsonl

serve:
	node www/serve.mjs --root www --port $(PORT)

clean:
	rm -rf pkg www/pkg www/pkg.tmp www/sample tests/out target/pkg.staging target/wasm-bindgen
