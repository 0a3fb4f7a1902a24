//! The change journal on arbitrary sessions and operation sequences (spec: compaction §1,
//! §6.7): a store applying every `changes()` to what it holds holds `to_bytes()`; old marks,
//! foreign marks and failed operations behave (`ctxfold_testkit::journal::run`). The session
//! is a fuzzer-built tree (bad lines, duplicate ids, no final newline), sometimes with `\r\n`
//! endings or a byte order mark.
#![no_main]
use arbitrary::Unstructured;
use ctxfold_testkit::journal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(spec) = ctxfold_fuzz::session(&mut u, 30) else {
        return;
    };
    let mut bytes = ctxfold_fuzz::spec::write(&spec);
    if u.ratio(1, 8).unwrap_or(false) {
        bytes = String::from_utf8_lossy(&bytes)
            .replace('\n', "\r\n")
            .into_bytes();
    }
    if u.ratio(1, 8).unwrap_or(false) {
        bytes.splice(0..0, *b"\xEF\xBB\xBF");
    }
    let mut ops = Vec::new();
    while ops.len() < 32 {
        let Ok((kind, a, b)) = u.arbitrary::<(u8, u64, bool)>() else {
            break;
        };
        ops.push(journal::op(kind, a, b));
    }
    if let Err(e) = journal::run(&bytes, &ops) {
        panic!("{e}\nops: {ops:?}");
    }
});
