//! A session file written in pieces into a `SourceBuffer` (what `Session.fromReader`,
//! `Session.fromAsyncReader` and `Session.fromStream` do through the wasm binding), with
//! arbitrary piece lengths, room asked beyond each piece, a known, short or unknown size, and
//! writes that claim more than their room: the buffer gives back exactly the bytes written, a
//! refused claim changes nothing, and the session loaded from it is the one loaded from the
//! whole file. Then the same pieces with the complete lines read after each one (the scan
//! while a file arrives): the same session, warnings, facts and bytes as the whole file's.
//!
//! Input: a piece-length program (bytes), a NUL, then the file (no NUL: all of it is the file,
//! in pieces of 7 bytes). The program's first byte picks the announced size.
#![no_main]
use ctxfold::session::SourceBuffer;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (program, file) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&[7u8][..], data),
    };
    let mode = program.first().copied().unwrap_or(0);
    let size = match mode % 4 {
        0 => file.len(),
        1 => 0,
        2 => file.len() / 2,
        _ => file.len() + usize::from(mode),
    };
    let lengths: Vec<usize> = program.iter().skip(1).map(|&b| usize::from(b)).collect();
    let mut buf = SourceBuffer::with_size(size).expect("a buffer of the file's size");
    let mut at = 0;
    let mut k = 0;
    // The buffer's length: the announced size, or the furthest room asked for.
    let mut high = size;
    while at < file.len() {
        let wanted = lengths.get(k % lengths.len().max(1)).copied().unwrap_or(7);
        k += 1;
        let n = wanted.clamp(1, file.len() - at);
        let extra = wanted % 5;
        let window = buf.window(n + extra).expect("room for a piece");
        assert_eq!(window.len(), n + extra);
        window[..n].copy_from_slice(&file[at..at + n]);
        high = high.max(at + n + extra);
        // A claim beyond the room is refused and leaves the buffer as it was.
        let before = buf.len();
        assert!(buf.advance(high - at + 1).is_err());
        assert_eq!(buf.len(), before);
        buf.advance(n).expect("the piece fits its room");
        at += n;
    }
    assert_eq!(buf.len(), file.len());
    let bytes = buf.into_bytes();
    assert_eq!(bytes, file);
    let whole = ctxfold_fuzz::invariants::load(file);
    let pieces = ctxfold_fuzz::invariants::load(&bytes);
    match (whole, pieces) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.len(), b.len());
            assert_eq!(a.to_bytes(), b.to_bytes());
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("the file and its pieces load differently"),
    }
    let lengths = if lengths.is_empty() { vec![7] } else { lengths };
    if let Err(e) = ctxfold_fuzz::invariants::load_in_pieces(file, size, &lengths, true) {
        panic!("{e}");
    }
});
