//! load → save: an unmigrated file comes back byte for byte, and saving is stable. The input
//! is either raw bytes or (first byte odd) a generated session tree with mutations.
#![no_main]
use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = match data.split_first() {
        Some((b, rest)) if b & 1 == 1 => {
            let mut u = Unstructured::new(rest);
            match ctxfold_fuzz::session(&mut u, 40) {
                Ok(spec) => ctxfold_fuzz::spec::write(&spec),
                Err(_) => return,
            }
        }
        Some((_, rest)) => rest.to_vec(),
        None => return,
    };
    if let Err(e) = ctxfold_fuzz::invariants::save_roundtrip(&bytes) {
        panic!("{e}");
    }
});
