//! Session files whose snapcompact frames are stored by reference (`archive::stored`; issue 43
//! item 5), mutated: loading, the reference check, every context build (payloads inline,
//! omitted, as the JS shell's references), the frames a host copies and both migrations never
//! panic; the file writes back byte for byte; a migration changes no context (a reference that
//! resolves reads as the bytes it names, one that does not stays a placeholder).
#![no_main]
use ctxfold::archive::blocks::{FrameData, HistoryOptions};
use ctxfold::archive::stored::{check, frames_json, migrate_frames};
use ctxfold::context::{build_context_with, BuildOptions};
use ctxfold::session::{EntryKind, LoadOptions, SequentialIds, Session};
use ctxfold::settings::FrameStorage;
use libfuzzer_sys::fuzz_target;

fn contexts(s: &Session) -> Vec<String> {
    let mut out = Vec::new();
    for data in [FrameData::Inline, FrameData::Omitted, FrameData::Refs] {
        let h = HistoryOptions {
            max_frame_data_bytes: Some(64),
            max_images: Some(3),
            data,
        };
        for h in [
            h,
            HistoryOptions {
                data,
                ..HistoryOptions::default()
            },
        ] {
            out.push(match build_context_with(s, &BuildOptions::default(), &h) {
                Ok(ctx) => ctx.to_json(s),
                Err(e) => format!("error {}", e.code().as_str()),
            });
        }
    }
    for i in 0..s.len() {
        if s.entries()[i].kind() == EntryKind::Compaction {
            out.push(frames_json(s, i));
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let load = |bytes: Vec<u8>| {
        Session::load(bytes, LoadOptions::with_ids(Box::new(SequentialIds::new()))).ok()
    };
    let Some(s) = load(data.to_vec()) else {
        return;
    };
    // A file of an older format version is migrated on load (its lines rewritten).
    if s.header().version_on_disk >= ctxfold::session::CURRENT_VERSION {
        assert_eq!(s.to_bytes(), data, "the file writes back as it was loaded");
    }
    // Both ways, one after the other, on the session as saved: a file of an older format
    // version is compared after its own migration has been written and loaded again.
    let Some(mut m) = load(s.to_bytes()) else {
        return;
    };
    let warnings = check(&m);
    let want = contexts(&m);
    for to in [
        FrameStorage::Inline,
        FrameStorage::Reference,
        FrameStorage::Inline,
    ] {
        let migration = migrate_frames(&mut m, to);
        assert_eq!(migration.bytes_after, m.to_bytes().len() as u64);
        assert_eq!(
            contexts(&m),
            want,
            "a migration to {to:?} changed a context"
        );
        if to == FrameStorage::Inline {
            assert!(migration.missing <= warnings.len());
            assert!(check(&m).len() <= warnings.len());
        }
        // What it wrote loads again, with the same contexts.
        let again = load(m.to_bytes()).expect("a migrated file loads");
        assert_eq!(contexts(&again), want);
    }
});
