#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ one after the other (`make fuzz`).
#
#   .ci/fuzz.sh [TARGET|all] [SECONDS]     default: all targets, 600 s each
#
# Targets: load, roundtrip, build_context, compaction, snapcompact, triggers, shake, native_openai,
# native_anthropic, native_ondemand, native_inline, inline, walk, agent, append, batch, frame_refs, recall, journal, classify, pi_entries, frame_steps, append_entry, anchors_in_place, load_chunks, json_text. Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`;
# installed here when missing). Runs under
# `nice -n 19` with -rss_limit_mb=4096, a 30 s per-input timeout, no sanitizer (the crate
# forbids unsafe code) and debug assertions (overflow checks) on. The corpus grows in
# fuzz/corpus/TARGET (seeded with small sessions, tests/fuzz-regressions/ and the
# conformance text when present), crashes land in fuzz/artifacts/TARGET, logs in
# fuzz/logs/TARGET.log; the last lines print libFuzzer's executions and exec/s per target.
set -euo pipefail
export RUSTUP_AUTO_INSTALL=0
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/fuzz"

all=(load roundtrip build_context compaction snapcompact triggers shake native_openai native_anthropic native_ondemand native_inline inline walk agent append batch frame_refs recall journal classify pi_entries frame_steps append_entry anchors_in_place load_chunks json_text)
target=${1:-all}
seconds=${2:-${FUZZ_SECONDS:-600}}
if [ "$target" = all ]; then targets=("${all[@]}"); else targets=("$target"); fi

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

seed() {
  local t=$1 dir=corpus/$1
  mkdir -p "$dir"
  [ -n "$(ls -A "$dir")" ] && return 0
  local conf=$root/../shared/conformance
  case "$t" in
    load | roundtrip | load_chunks)
      # Small sessions: a v3 file with a tool call, and a v1 file (no version, no ids) that
      # migrates. (roundtrip reads raw bytes after an even first byte.)
      local v3='{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"Fix the test"}}
{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"src/a.ts"}}],"usage":{"input":1200,"output":40,"cacheRead":0,"cacheWrite":0},"stopReason":"toolUse"}}
{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false}}
{"type":"compaction","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:04.000Z","summary":"s","firstKeptEntryId":"a3","tokensBefore":5}'
      local v1='{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}
{"type":"compaction","timestamp":"2026-01-01T00:00:02.000Z","summary":"s","firstKeptEntryIndex":0,"tokensBefore":5}'
      printf '%s\n' "$v3" > "$dir/seed-v3"
      printf '%s\n' "$v1" > "$dir/seed-v1"
      if [ "$t" = roundtrip ]; then
        for f in "$dir"/seed-v3 "$dir"/seed-v1; do { printf '\0'; cat "$f"; } > "$f.raw" && rm "$f"; done
      fi
      find "$root/tests/fuzz-regressions" -name '*.jsonl' -exec cp {} "$dir/" \; 2>/dev/null || true
      ;;
    native_openai)
      # A V1 answer and a V2 event stream.
      printf '%s' '{"output":[{"type":"message","role":"user","content":[]},{"type":"compaction","encrypted_content":"E"}]}' > "$dir/seed-v1"
      printf 'event: response.output_item.done\ndata: {"type":"response.output_item.done","item":{"type":"compaction"}}\n\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}}\n\ndata: [DONE]\n\n' > "$dir/seed-v2"
      ;;
    native_ondemand)
      # An on-demand answer and a threshold-lane answer (refused: no signature, no stop).
      printf '%s' '{"type":"message","role":"assistant","stop_reason":"compaction","content":[{"type":"compaction","content":"S","signature":"G"}],"usage":{"input_tokens":3}}' > "$dir/seed-ondemand"
      printf '%s' '{"content":[{"type":"compaction","content":"S","encrypted_content":"E"}]}' > "$dir/seed-threshold"
      ;;
    native_inline)
      # A reply whose output holds a compaction item and a configuration update, and a stream.
      printf '%s' '{"output":[{"type":"compaction","encrypted_content":"E"},{"type":"configuration_update"},{"type":"message","role":"assistant","content":[]}]}' > "$dir/seed-response"
      printf 'event: response.output_item.done\ndata: {"type":"response.output_item.done","item":{"type":"compaction","encrypted_content":"E"}}\n\ndata: {"type":"response.completed","response":{"output":[]}}\n\n' > "$dir/seed-stream"
      ;;
    json_text)
      # Tool-call arguments: spaced, with a repeated key, escapes and number forms.
      printf '%s' ' { "path" : "a\"b" , "n" : [ 1 , 2.50 , -0 , 1e400 ] , "path" : null } ' > "$dir/seed-object"
      printf '%s' '["\ud83d",{"k":{"x":1,"x":2}},12345678901234567890]' > "$dir/seed-array"
      ;;
    append)
      # A generated session's bytes, a NUL, then the message's JSON.
      printf '\1\2\3\4\5\6\7\0{"role":"user","content":"hi"}' > "$dir/seed-user"
      printf '\1\2\3\4\5\6\7\0{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a"}}],"usage":{"input":1e20}}' > "$dir/seed-assistant"
      ;;
    append_entry)
      # A generated session's bytes (the first byte picks the type), a NUL, then the fields' JSON.
      printf '\13\2\3\4\5\6\7\0{"summary":"s","firstKeptEntryId":"x","tokensBefore":5}' > "$dir/seed-compaction"
      printf '\1\2\3\4\5\6\7\0{"customType":"demo","data":{"a":[1,"b"]}}' > "$dir/seed-custom"
      ;;
    batch)
      # A generated session's bytes, a NUL, then JSON lines of messages.
      printf '\1\2\3\0{"role":"user","content":"hi"}\n{"role":"assistant","content":[{"type":"text","text":"a"}],"usage":{"input":1}}\n' > "$dir/seed-batch"
      printf '\1\2\3\0{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"x"}]}\n{"role":"user","content":42}\n' > "$dir/seed-refused"
      ;;
    recall)
      # A query, a NUL, then a small session holding identifiers of several kinds.
      printf '%s\0%s\n%s\n' '3f9a2c1e' \
        '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}' \
        '{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"Fix #38: commit 3f9a2c1e in src/a.rs, port 8080, \"--frozen\", v1.2.3 E_STALE_PLAN https://x.dev/a"}}' \
        > "$dir/seed-session"
      ;;
    classify)
      # The error bodies of tests/fixtures/errors/: a header byte, a NUL, then the body.
      local n=0 f
      for f in "$root"/tests/fixtures/errors/*.json; do
        node -e 'for (const c of require(process.argv[1]).cases) process.stdout.write(JSON.stringify(typeof c.body === "string" ? c.body : JSON.stringify(c.body)) + "\n")' "$f" 2>/dev/null |
          while IFS= read -r line; do
            n=$((n + 1))
            { printf '\1\0'; node -e 'process.stdout.write(JSON.parse(process.argv[1]))' "$line"; } > "$dir/seed-$(basename "$f" .json)-$n"
          done
      done
      ;;
    pi_entries)
      # pi 1.6 sessions: context edits, usage entries, system checkpoints, retain-none.
      cp "$conf"/pi-1.6/sessions/*.jsonl "$dir/" 2>/dev/null || cp "$root"/fuzz/seeds/frame-refs.jsonl "$dir/"
      ;;
    anchors_in_place)
      # Message texts after an empty generated session: a user's, an assistant's with calls
      # (one hidden), a result with blocks, an error result, a handoff document's blocks.
      {
        printf '\0%s' '{"role":"user","content":"port 8080 at src/a.rs, \"--frozen\" #42"}'
        printf '\0%s' '{"role":"assistant","content":[{"type":"text","text":"see b/c.rs"},{"type":"toolCall","id":"c1","name":"grep","arguments":{"pattern":"fn_name","d":{"p":"x/y.rs"}}},{"type":"toolCall","id":"c2","name":"ls","arguments":{"p":"hidden"},"contextOmitted":1}],"errorMessage":"Error: ECONNRESET 16c43069c43a"}'
        printf '\0%s' '{"role":"toolResult","toolCallId":"c1","toolName":"grep","content":[{"type":"text","text":"a\n"},{"type":"image","data":"z"},{"type":"text","text":"error: cannot find ENOENT"}],"isError":false}'
        printf '\0%s' '{"role":"toolResult","toolCallId":"c2","toolName":"ls","content":"fatal: boom E5402","isError":true,"contextOmitted":0}'
        printf '\0%s' '{"role":"developer","content":"<files>\n<read-files>\nsrc/\n  m.rs\n</read-files>\n</files>\n<anchors>\n- number: 48218\n</anchors>"}'
      } > "$dir/seed-messages"
      ;;
    frame_refs)
      # A session whose snapcompact frames are stored by reference: references to inline
      # frames, to a frame on another branch, and one to an entry the file does not hold.
      cp "$root/fuzz/seeds/frame-refs.jsonl" "$dir/seed-refs"
      ;;
    snapcompact)
      if [ -f "$conf/snapcompact/input.txt" ]; then
        { printf '\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0'; head -c 3000 "$conf/snapcompact/input.txt"; } > "$dir/seed-input"
      fi
      ;;
  esac
  # libFuzzer wants at least one input.
  [ -n "$(ls -A "$dir")" ] || printf '\0' > "$dir/seed-empty"
}

mkdir -p logs
failed=()
for t in "${targets[@]}"; do
  seed "$t"
  echo "=== fuzz $t for ${seconds}s"
  # libFuzzer exits non-zero on a crash; keep going with the next target.
  # No sanitizer (the crate forbids unsafe code), debug assertions on (overflow checks).
  nice -n 19 cargo +nightly fuzz run -s none -a "$t" "corpus/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 \
    > "logs/$t.log" 2>&1 || {
    echo "!!! $t stopped with a failure: see fuzz/logs/$t.log and fuzz/artifacts/$t/"
    failed+=("$t")
  }
done

echo
printf '%-14s %14s %10s %8s  %s\n' target executions exec/s seconds result
for t in "${targets[@]}"; do
  f=logs/$t.log
  [ -f "$f" ] || continue
  n=$(awk '/stat::number_of_executed_units/ {print $2}' "$f" | tail -n 1)
  r=$(awk '/stat::average_exec_per_sec/ {print $2}' "$f" | tail -n 1)
  result=clean
  [[ " ${failed[*]} " == *" $t "* ]] && result=FAILED
  printf '%-14s %14s %10s %8s  %s\n' "$t" "${n:-?}" "${r:-?}" "$seconds" "$result"
done
# A target that stopped on a crash, a timeout or an out-of-memory fails the run (the others
# still ran, so one call reports every target).
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${failed[*]} stopped with a failure" >&2
  exit 1
fi
