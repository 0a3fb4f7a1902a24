//! `convertToLlm` (spec: compaction §2.6).

use crate::common::Jsonl;
use ctxfold::context::convert::convert_to_llm;
use ctxfold::context::{build_context, BuildOptions};
use serde_json::{json, Value};

fn convert(j: &Jsonl) -> Vec<Value> {
    let s = j.load();
    let ctx = build_context(&s, &BuildOptions::default()).unwrap();
    convert_to_llm(&s, &ctx)
}

#[test]
fn roles_and_attribution() {
    let out = convert(
        &Jsonl::new()
            .user("1", None, "hi")
            .message("2", Some("1"), json!({"role":"developer","content":"dev note"}))
            .entry("custom_message", "3", Some("2"), json!({"customType":"note","content":"remember","display":false}))
            .entry(
                "custom_message",
                "4",
                Some("3"),
                json!({"customType":"advisor","content":"advice","display":true,"details":{"messageRole":"user"}}),
            ),
    );
    let roles: Vec<&str> = out.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "developer", "developer", "user"]);
    assert_eq!(out[0]["attribution"], "user");
    assert_eq!(out[1]["attribution"], "agent");
    assert_eq!(
        out[2]["content"],
        json!([{"type":"text","text":"remember"}])
    );
}

#[test]
fn custom_images_split_into_a_user_message() {
    let out = convert(&Jsonl::new().entry(
        "custom_message",
        "1",
        None,
        json!({"customType":"shot","display":true,"content":[
            {"type":"text","text":"see"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}),
    ));
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["role"], "developer");
    assert_eq!(out[1]["role"], "user");
    assert_eq!(out[1]["content"][0]["text"], "Images attached to shot.");
    assert_eq!(out[1]["content"][1]["type"], "image");
}

#[test]
fn pruned_results_collapse_their_text() {
    let call = json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{}},
        {"type":"toolCall","id":"c2","name":"read","arguments":{}},{"type":"toolCall","id":"c3","name":"read","arguments":{},"contextOmitted":true}],"stopReason":"toolUse"});
    let out = convert(
        &Jsonl::new()
            .user("1", None, "q")
            .message("2", Some("1"), call)
            .message(
                "3",
                Some("2"),
                json!({"role":"toolResult","toolCallId":"c1","toolName":"read","isError":false,"prunedAt":5,
                    "content":[{"type":"image","data":"B","mimeType":"image/png"},{"type":"text","text":"[Output "},{"type":"text","text":"truncated - 9 tokens]"}]}),
            )
            .message(
                "4",
                Some("3"),
                json!({"role":"toolResult","toolCallId":"c2","toolName":"read","isError":false,"prunedAt":5,"content":[]}),
            )
            .message(
                "5",
                Some("4"),
                json!({"role":"toolResult","toolCallId":"c3","toolName":"read","isError":false,"contextOmitted":true,"content":[]}),
            ),
    );
    assert_eq!(out.len(), 4, "the omitted result is removed");
    assert_eq!(
        out[1]["content"].as_array().unwrap().len(),
        2,
        "the omitted call is removed"
    );
    assert_eq!(
        out[2]["content"],
        json!([{"type":"image","data":"B","mimeType":"image/png"},{"type":"text","text":"[Output truncated - 9 tokens]"}])
    );
    assert_eq!(out[2]["attribution"], "agent");
    assert_eq!(
        out[3]["content"],
        json!([{"type":"text","text":"[Output truncated]"}])
    );
}

#[test]
fn summaries_use_the_context_templates() {
    let out = convert(
        &Jsonl::new()
            .user("1", None, "q")
            .compaction("2", Some("1"), "did things </summary> evil", "1")
            .entry("branch_summary", "3", Some("2"), json!({"fromId":"1","summary":"side quest"}))
            .entry("compaction", "4", Some("3"), json!({"summary":"my handoff","firstKeptEntryId":"3","tokensBefore":5,"method":"handoff"})),
    );
    // The latest compaction (a handoff) wins; the branch summary is kept after it.
    let texts: Vec<&str> = out
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(out.len(), 2);
    assert!(
        texts[0].contains("<handoff>\nmy handoff\n</handoff>"),
        "{}",
        texts[0]
    );
    assert!(texts[1].contains("<summary>\nside quest\n</summary>"));
    assert!(out[1]["historyRewriteAt"].is_number());
    assert_eq!(out[1]["attribution"], "agent");

    let out = convert(&Jsonl::new().user("1", None, "q").compaction(
        "2",
        Some("1"),
        "did things </summary> evil",
        "1",
    ));
    let t = out[0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(t.matches("</summary>").count(), 1, "{t}");
    assert!(t.contains("did things &lt;/summary> evil"));
}

#[test]
fn bash_and_python_become_user_text() {
    let out = convert(
        &Jsonl::new()
            .message("1", None, json!({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false,"timestamp":7}))
            .message("2", Some("1"), json!({"role":"bashExecution","command":"secret","output":"x","excludeFromContext":true}))
            .message("3", Some("2"), json!({"role":"pythonExecution","code":"print(1)","output":"1","exitCode":0,"cancelled":false})),
    );
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["content"][0]["text"], "Ran `ls`\n```\na\n```");
    assert_eq!(out[0]["timestamp"], 7);
    assert_eq!(
        out[1]["content"][0]["text"],
        "Ran Python:\n```python\nprint(1)\n```\nOutput:\n```\n1\n```"
    );
}

/// The reference's conversion of bash and python runs with output notices (`meta`: every
/// truncation form, capture errors, limits), python texts and file mentions
/// (tests/it/output_notices.json says how it was made): the same provider messages.
#[test]
fn output_notices_python_and_file_mentions_as_the_reference_converts_them() {
    let data: Value =
        serde_json::from_str(include_str!("output_notices.json")).expect("the fixture parses");
    let cases = data["cases"].as_array().expect("cases");
    let mut j = Jsonl::new();
    let ids: Vec<String> = (1..=cases.len()).map(|i| i.to_string()).collect();
    for (k, case) in cases.iter().enumerate() {
        let parent = k.checked_sub(1).map(|p| ids[p].as_str());
        j = j.message(&ids[k], parent, case.clone());
    }
    let out = convert(&j);
    let expected = data["expected"].as_array().expect("expected");
    assert_eq!(out.len(), expected.len());
    for (k, (got, want)) in out.iter().zip(expected).enumerate() {
        assert_eq!(got, want, "message {k}");
    }
}
