//! The anchor harvesters and `searchHistory` on arbitrary input (issue 38): the bytes before
//! the first NUL are a query, the rest a text and, when it loads, a session file. Harvesting
//! never panics and every anchor is a slice of the text, at most `MAX_ANCHOR_BYTES` long (read
//! back from a block, in the text or a path its `<files>` tree lists); the ranking holds each
//! anchor once; a
//! block never exceeds its budget; a search never panics, returns at most its limit, and
//! leaves the session byte-identical. The context tools (issue 38 item 3) on the same input:
//! the query is the model's arguments (its JSON when it parses, else `{"query": …}`), its
//! figures made from the input's first bytes; a call answers or fails with
//! `E_INVALID_ARGUMENT`, a `recall_history` answer never exceeds its budget, and the session
//! stays byte-identical. Saved artifacts (shake's, pruned originals): the query read as an
//! artifact list never panics; the text handed in as an artifact, with a planted identifier
//! and the first entry as its source, is found by that identifier and named, every hit is an
//! entry of the session or a held artifact, and the session stays byte-identical.
#![no_main]
use ctxfold::summary::anchors::harvest::{
    error_line, first_line, harvest_text, Scope, MAX_ANCHOR_BYTES,
};
use ctxfold::summary::anchors::{anchor_block, AnchorIndex};
use ctxfold::summary::recall::{Artifact, HistoryIndex, SearchOptions, MAX_LIMIT};
use ctxfold::summary::tools::{
    run_context_tool, text_tokens, upsert_recall_pointer, ToolFigures, CONTEXT_STATUS,
    DEFAULT_RECALL_TOKENS, MIN_RECALL_TOKENS, RECALL_HISTORY,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (query, rest) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&[][..], data),
    };
    let query = String::from_utf8_lossy(query);
    let text = String::from_utf8_lossy(rest);
    let range = text.as_ptr() as usize..text.as_ptr() as usize + text.len();
    let mut index = AnchorIndex::new();
    for scope in [
        Scope::default(),
        Scope {
            user: true,
            symbols: true,
        },
    ] {
        harvest_text(&text, scope, &mut |kind, a| {
            let at = a.as_ptr() as usize;
            assert!(
                range.contains(&at) || a.is_empty(),
                "an anchor outside its text"
            );
            assert!(at + a.len() <= range.end);
            assert!(a.len() <= MAX_ANCHOR_BYTES);
            index.add(kind, a, scope.user);
        });
    }
    for line in [first_line(&text), error_line(&text)].into_iter().flatten() {
        assert!(line.len() <= MAX_ANCHOR_BYTES && text.contains(line));
    }
    // A whole text, as a message's: its `<anchors>` and `<files>` blocks are read back. Every
    // anchor is in the text, or a path its `<files>` tree lists; the ranking holds each once.
    let listed = ctxfold::summary::fileops::listed_paths(&text);
    let mut whole = AnchorIndex::new();
    whole.add_text(&text, Scope::default());
    let ranked = whole.ranked();
    assert_eq!(ranked.len(), whole.len());
    for a in &ranked {
        assert!(
            text.contains(a.text.as_str()) || listed.iter().any(|p| *p == a.text),
            "an anchor from outside its text: {:?}",
            a.text
        );
    }
    let budget = u64::from(data.first().copied().unwrap_or(0)) * 4;
    let ranked = index.ranked();
    assert_eq!(ranked.len(), index.len());
    if let Some((block, held)) = anchor_block(&ranked, |_| false, budget) {
        assert!((block.encode_utf16().count() as u64).div_ceil(4) <= budget);
        assert!(!held.is_empty());
    }
    // The recall pointer's upsert: one pointer at the end, whatever the text held.
    let pointed = upsert_recall_pointer(&text, Some("<recall>p</recall>"));
    assert!(pointed.ends_with("<recall>p</recall>"));
    let Ok(session) = ctxfold_fuzz::invariants::load(rest) else {
        return;
    };
    let before = session.to_bytes();
    let mut search = HistoryIndex::new();
    let limit = usize::from(data.last().copied().unwrap_or(1) % 20) + 1;
    let options = SearchOptions {
        limit: Some(limit),
        ..SearchOptions::default()
    };
    for _ in 0..2 {
        if let Ok(hits) = search.search(&session, &query, &options) {
            assert!(hits.len() <= limit);
            for h in &hits {
                assert!(session.index_of(&h.entry_id).is_some());
            }
        }
    }
    assert_eq!(session.to_bytes(), before);

    // Saved artifacts.
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&query) {
        if let Ok(list) = Artifact::list_from_json(&v) {
            for a in list {
                search.add_artifact(&session, a);
            }
        }
    }
    let planted = format!("zq_{}_planted", data.len());
    let from = session.entries().first().map(|e| e.id().to_string());
    for name in ["fuzz.txt", "fuzz.txt", "other.md"] {
        search.add_artifact(
            &session,
            Artifact {
                name: name.into(),
                kind: "prune".into(),
                text: format!("{text}\n{planted}"),
                entry_id: from.clone(),
            },
        );
    }
    let all = SearchOptions {
        limit: Some(MAX_LIMIT),
        ..SearchOptions::default()
    };
    let hits = search.search(&session, &planted, &all).unwrap();
    if hits.len() < MAX_LIMIT {
        for name in ["fuzz.txt", "other.md"] {
            let h = hits
                .iter()
                .find(|h| h.artifact.as_deref() == Some(name))
                .expect("a planted artifact is found");
            assert!(h.exact && h.snippet.contains(&planted));
            assert_eq!(h.entry_id, from.clone().unwrap_or_default());
        }
    }
    if let Ok(hits) = search.search(&session, &query, &options) {
        assert!(hits.len() <= limit);
        for h in &hits {
            assert!(h.artifact.is_some() || session.index_of(&h.entry_id).is_some());
        }
    }
    assert_eq!(session.to_bytes(), before);

    // The context tools.
    let args = serde_json::from_str::<serde_json::Value>(&query)
        .unwrap_or_else(|_| serde_json::json!({"query": query, "limit": limit}));
    let b = |i: usize| u64::from(data.get(i).copied().unwrap_or(0));
    let budget = MIN_RECALL_TOKENS + b(1) * 16;
    let figures = ToolFigures {
        context_window: Some(1 + b(2) * 4096),
        context_tokens: (b(3) % 2 == 0).then(|| b(3) * 1000),
        recall_tokens: Some(budget),
        ..ToolFigures::default()
    };
    let settings = ctxfold::settings::CompactionSettings::default();
    for name in [RECALL_HISTORY, CONTEXT_STATUS, "other"] {
        match run_context_tool(&mut search, &session, &settings, name, &args, &figures) {
            Ok(answer) => {
                if name == RECALL_HISTORY {
                    assert!(text_tokens(&answer) <= budget, "{answer}");
                } else {
                    assert!(serde_json::from_str::<serde_json::Value>(&answer).is_ok());
                }
            }
            Err(e) => assert_eq!(e.code(), ctxfold::ErrorCode::InvalidArgument, "{e}"),
        }
    }
    let default = ToolFigures::default();
    if let Ok(answer) = run_context_tool(
        &mut search,
        &session,
        &settings,
        RECALL_HISTORY,
        &args,
        &default,
    ) {
        assert!(text_tokens(&answer) <= DEFAULT_RECALL_TOKENS);
    }
    assert_eq!(session.to_bytes(), before);
});
