//! The paged display transcript (issue 22, spec: compaction §2.5): every page is the slice of
//! the whole transcript, and the page JSON carries the slice of each per-message array.

use ctxfold::context::{build_context, page_range, transcript_page, BuildOptions};
use ctxfold::session::{LoadOptions, Session};
use ctxfold_testkit::{generate, GenOptions};
use serde_json::Value;

fn json_of(s: &Session, page: &ctxfold::context::TranscriptPage) -> Value {
    let mut out = String::new();
    page.write_json(s, &mut |p| out.push_str(p));
    serde_json::from_str(&out).unwrap()
}

#[test]
fn page_ranges_follow_slice() {
    assert_eq!(page_range(10, 0, None), 0..10);
    assert_eq!(page_range(10, 3, Some(4)), 3..7);
    assert_eq!(page_range(10, -3, None), 7..10);
    assert_eq!(page_range(10, -30, Some(2)), 0..2);
    assert_eq!(page_range(10, 12, Some(2)), 10..10);
    assert_eq!(page_range(10, 8, Some(u64::MAX)), 8..10);
    assert_eq!(page_range(0, -1, Some(5)), 0..0);
}

#[test]
fn pages_are_slices_of_the_whole_transcript() {
    let opts = GenOptions {
        seed: 11,
        entries: 1_500,
        ..GenOptions::default()
    };
    let s = Session::load(generate(&opts), LoadOptions::default()).unwrap();
    let whole = build_context(
        &s,
        &BuildOptions {
            transcript: true,
            ..Default::default()
        },
    )
    .unwrap();
    let whole: Value = serde_json::from_str(&whole.to_json(&s)).unwrap();
    let total = whole["messages"].as_array().unwrap().len();
    assert!(total > 500, "{total}");
    let all = transcript_page(&s, &BuildOptions::default(), 0, None).unwrap();
    let all = json_of(&s, &all);
    assert_eq!(all["total"], total);
    assert_eq!(all["messages"], whole["messages"]);
    assert_eq!(all["entryIds"], whole["entryIds"]);
    assert_eq!(all["cacheMissExplainedAt"], whole["cacheMissExplainedAt"]);
    assert_eq!(all.get("strippedToolCalls"), whole.get("strippedToolCalls"));
    let mut seen = 0;
    let mut from = 0;
    while from < total {
        let page = transcript_page(&s, &BuildOptions::default(), from as i64, Some(97)).unwrap();
        let page = json_of(&s, &page);
        assert_eq!(page["from"], from);
        let n = page["messages"].as_array().unwrap().len();
        for k in 0..n {
            assert_eq!(page["messages"][k], whole["messages"][from + k]);
            assert_eq!(page["entryIds"][k], whole["entryIds"][from + k]);
            assert_eq!(
                page["cacheMissExplainedAt"][k],
                whole["cacheMissExplainedAt"][from + k]
            );
        }
        seen += n;
        from += 97;
    }
    assert_eq!(seen, total);
    let last = json_of(
        &s,
        &transcript_page(&s, &BuildOptions::default(), -5, Some(5)).unwrap(),
    );
    assert_eq!(last["from"], total - 5);
    assert_eq!(last["messages"][4], whole["messages"][total - 1]);
}
