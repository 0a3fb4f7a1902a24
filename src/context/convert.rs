//! `convertToLlm` (spec: compaction §2.6, [N] column): agent messages of a built context →
//! the provider messages a model is sent (roles `user`, `developer`, `assistant`,
//! `toolResult`), each with an `attribution` (`user` or `agent`).

use crate::context::message::text_blocks;
use crate::context::{ContextMessage, SessionContext};
use crate::prompts;
use crate::session::message::{truthy, AgentMessage, Content, ContentBlock, Role};
use crate::session::Session;
use crate::support::json::deep::DeepValues;
use crate::support::json::js;
use serde_json::{Map, Value};

/// Notice a pruned tool result shows when none of its text survived (spec: compaction §2.6).
pub const PRUNED_FALLBACK: &str = "[Output truncated]";

fn text_block(text: String) -> Value {
    crate::support::json::object(vec![("type", "text".into()), ("text", text.into())])
}

fn image_block(data: &str, mime: &str) -> Value {
    crate::support::json::object(vec![
        ("type", "image".into()),
        ("data", data.into()),
        ("mimeType", mime.into()),
    ])
}

fn blocks_value(c: &Content) -> Vec<Value> {
    c.blocks()
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text_block(text.clone())),
            ContentBlock::Image { data, mime_type } => Some(image_block(data, mime_type)),
            _ => None,
        })
        .collect()
}

fn ts(t: Option<f64>) -> Value {
    t.map_or(Value::Null, Value::from)
}

fn message(role: &str, content: Vec<Value>, attribution: &str, timestamp: Value) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), role.into());
    m.insert("content".into(), Value::Array(content));
    m.insert("attribution".into(), attribution.into());
    if !timestamp.is_null() {
        m.insert("timestamp".into(), timestamp);
    }
    Value::Object(m)
}

/// The text a `bashExecution` message becomes (spec: compaction §2.6; the reference's
/// `bashExecutionToText`, which the conformance data of `rules/` pins): "Ran `<command>`",
/// then the output in a fence closed on a line of its own — even when the output already
/// ends with a newline, so that line shows as blank — or "(no output)", then
/// "(command cancelled)" or the non-zero exit code. A notice comes only from the run's `meta`
/// (`notice::output_notice`, appended by the caller): a `truncated` run with a
/// `fullOutputPath` and no `meta` gets none (issue 19 point 5).
pub fn bash_execution_text(
    command: &str,
    output: &str,
    exit_code: Option<f64>,
    cancelled: bool,
) -> String {
    let head = format!("Ran `{command}`\n");
    let words = ["", "(command cancelled)", "Command exited with code "];
    run_text(head, words, output, exit_code, cancelled)
}

/// The user text a `pythonExecution` message becomes (spec: compaction §2.6): the code and
/// the output fenced, "(no output)" for none, then cancellation or a non-zero exit code.
pub fn python_execution_text(
    code: &str,
    output: &str,
    exit_code: Option<f64>,
    cancelled: bool,
) -> String {
    let head = format!("Ran Python:\n```python\n{code}\n```\n");
    let words = [
        "Output:\n",
        "(execution cancelled)",
        "Execution failed with code ",
    ];
    run_text(head, words, output, exit_code, cancelled)
}

/// A run's text after its `head`: the output fenced (after `words[0]`) or "(no output)", then
/// `words[1]` when cancelled or `words[2]` and a non-zero exit code.
fn run_text(
    mut t: String,
    words: [&str; 3],
    output: &str,
    exit_code: Option<f64>,
    cancelled: bool,
) -> String {
    if output.is_empty() {
        t.push_str("(no output)");
    } else {
        t.push_str(words[0]);
        t.push_str("```\n");
        t.push_str(output);
        t.push_str("\n```");
    }
    if cancelled {
        t.push_str("\n\n");
        t.push_str(words[1]);
    } else if let Some(code) = exit_code.filter(|c| *c != 0.0) {
        t.push_str("\n\n");
        t.push_str(words[2]);
        js::write_number(&mut t, code);
    }
    t
}

/// Parses a context message's JSON into an object map; with `deep`, a message nested deeper
/// than the value parser reads too, its deep containers kept aside in `deep`.
fn object(
    session: &Session,
    m: &ContextMessage,
    deep: Option<&mut DeepValues>,
) -> Map<String, Value> {
    let json = m.json(session);
    let v = match deep {
        Some(deep) => crate::support::json::deep::parse_deep(&json, deep),
        None => crate::support::json::parse(&json).ok(),
    };
    match v {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    }
}

/// [`convert_message`] as the JSON text a host is sent (0–2 messages, comma-joined, appended
/// to `out`). A message nested deeper than the value parser reads (`JSON.parse` reads any
/// depth) is converted too, its deep containers written back whole (`support::json::deep`):
/// dropping it would orphan the result of its tool calls.
pub fn write_message_json(
    out: &mut String,
    session: &Session,
    m: &ContextMessage,
    next: Option<&ContextMessage>,
) {
    let mut deep = DeepValues::default();
    let mut values = Vec::new();
    convert_into(&mut values, session, m, next, Some(&mut deep));
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        deep.write(out, v);
    }
}

/// Converts a built context to provider messages, as JSON values.
pub fn convert_to_llm(session: &Session, ctx: &SessionContext) -> Vec<Value> {
    convert_messages(session, &ctx.messages)
}

/// Converts agent messages (of a context, or any run of entries) to provider messages.
pub fn convert_messages(session: &Session, messages: &[ContextMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for (pos, m) in messages.iter().enumerate() {
        convert_message(&mut out, session, m, messages.get(pos + 1));
    }
    out
}

/// Converts one message (given the message after it, which decides whether trailing thinking
/// of an interrupted turn is dropped) into zero, one or two provider messages appended to
/// `out`. [`convert_messages`] is this over a list; callers that walk a long history a piece
/// at a time (history windows) call it directly.
pub fn convert_message(
    out: &mut Vec<Value>,
    session: &Session,
    m: &ContextMessage,
    next: Option<&ContextMessage>,
) {
    convert_into(out, session, m, next, None)
}

/// [`convert_message`], reading deep messages into `deep` when given.
fn convert_into(
    out: &mut Vec<Value>,
    session: &Session,
    m: &ContextMessage,
    next: Option<&ContextMessage>,
    deep: Option<&mut DeepValues>,
) {
    // A message of a pi-family projection converts as pi converts it.
    if m.pi {
        return convert_pi_message(out, session, m);
    }
    // These four are converted from their JSON; the other roles from the typed message.
    match m.role() {
        Role::User => return out.push(user_message(object(session, m, deep), "user")),
        Role::Developer => return out.push(user_message(object(session, m, deep), "agent")),
        Role::Assistant => {
            let next_is_interrupt = next.is_some_and(ContextMessage::is_interrupt_marker);
            return out.push(assistant_message(
                object(session, m, deep),
                next_is_interrupt,
            ));
        }
        Role::ToolResult => return out.extend(tool_result_message(object(session, m, deep))),
        _ => {}
    }
    match &m.message(session) {
        AgentMessage::BashExecution(b) => {
            if b.exclude_from_context {
                return;
            }
            let mut t = bash_execution_text(&b.command, &b.output, b.exit_code, b.cancelled);
            t.push_str(&super::notice::output_notice(b.meta.as_ref()));
            let mut content = vec![text_block(t)];
            for img in b.images.iter().flatten() {
                if let ContentBlock::Image { data, mime_type } = img {
                    content.push(image_block(data, mime_type));
                }
            }
            out.push(message("user", content, "user", m.json_timestamp(session)));
        }
        AgentMessage::PythonExecution(p) => {
            if p.exclude_from_context {
                return;
            }
            let mut t = python_execution_text(&p.code, &p.output, p.exit_code, p.cancelled);
            t.push_str(&super::notice::output_notice(p.meta.as_ref()));
            out.push(message(
                "user",
                vec![text_block(t)],
                "user",
                m.json_timestamp(session),
            ));
        }
        AgentMessage::Custom(c) => {
            let blocks = blocks_value(&c.content);
            let (texts, images): (Vec<Value>, Vec<Value>) = blocks
                .into_iter()
                .partition(|b| b.get("type").and_then(Value::as_str) == Some("text"));
            let to_user = c.custom_type == "advisor"
                && c.details
                    .as_ref()
                    .and_then(|d| d.get("messageRole"))
                    .and_then(Value::as_str)
                    == Some("user");
            let timestamp = ts(c.timestamp);
            if to_user {
                let mut all = texts;
                all.extend(images);
                out.push(message(
                    "user",
                    all,
                    c.attribution.as_deref().unwrap_or("agent"),
                    timestamp,
                ));
                return;
            }
            out.push(message(
                "developer",
                texts,
                c.attribution.as_deref().unwrap_or("agent"),
                timestamp.clone(),
            ));
            if !images.is_empty() {
                let mut content =
                    vec![text_block(format!("Images attached to {}.", c.custom_type))];
                content.extend(images);
                out.push(message("user", content, "agent", timestamp));
            }
        }
        AgentMessage::BranchSummary(b) => {
            let mut v = message(
                "user",
                vec![text_block(prompts::branch_context(&b.summary))],
                "agent",
                ts(b.timestamp),
            );
            if let (Some(o), Some(t)) = (v.as_object_mut(), b.timestamp) {
                o.insert("historyRewriteAt".into(), Value::from(t));
            }
            out.push(v);
        }
        AgentMessage::CompactionSummary(c) => {
            let text = if c.method.as_deref() == Some("handoff") {
                prompts::handoff_context(&c.summary)
            } else {
                prompts::compaction_context(&c.summary)
            };
            let mut content = vec![text_block(text)];
            for b in c.blocks.iter().flatten() {
                match b {
                    ContentBlock::Text { text } => content.push(text_block(text.clone())),
                    ContentBlock::Image { data, mime_type } => {
                        content.push(image_block(data, mime_type))
                    }
                    _ => {}
                }
            }
            let mut v = message("user", content, "agent", ts(c.timestamp));
            // Like a branch summary, a compaction summary marks when history was rewritten
            // (the reference's converter stamps both; a provider that binds thinking to its
            // prefix drops signatures of turns older than it; issue 36 item 7).
            if let (Some(o), Some(t)) = (v.as_object_mut(), c.timestamp) {
                o.insert("historyRewriteAt".into(), Value::from(t));
            }
            if let Some(p) = object(session, m, deep).remove("providerPayload") {
                if let Some(o) = v.as_object_mut() {
                    o.insert("providerPayload".into(), p);
                }
            }
            out.push(v);
        }
        AgentMessage::FileMention(f) => {
            // Text files go to a developer message, image files (their tags, then the
            // images) to a user message; each file as `<file path="…">` around its content.
            let tag = |file: &crate::session::message::MentionedFile| {
                let mut t = format!("<file path=\"{}\">\n", file.path);
                if !file.content.is_empty() {
                    t.push_str(&file.content);
                    t.push('\n');
                }
                t.push_str("</file>");
                t
            };
            let (with_image, text_only): (Vec<_>, Vec<_>) =
                f.files.iter().partition(|file| file.image.is_some());
            let joined = |files: &[&crate::session::message::MentionedFile]| {
                files.iter().map(|f| tag(f)).collect::<Vec<_>>().join("\n")
            };
            let timestamp = m.json_timestamp(session);
            if !text_only.is_empty() {
                out.push(message(
                    "developer",
                    vec![text_block(joined(&text_only))],
                    "user",
                    timestamp.clone(),
                ));
            }
            if !with_image.is_empty() {
                let mut content = vec![text_block(joined(&with_image))];
                for file in &with_image {
                    if let Some(ContentBlock::Image { data, mime_type }) = &file.image {
                        content.push(image_block(data, mime_type));
                    }
                }
                out.push(message("user", content, "user", timestamp));
            }
        }
        // Converted above from their JSON.
        AgentMessage::User(_)
        | AgentMessage::Developer(_)
        | AgentMessage::Assistant(_)
        | AgentMessage::ToolResult(_)
        | AgentMessage::Other => {}
    }
}

/// A `user` or `developer` message as the provider gets it: as written, with an
/// `attribution` (`default` when it has none).
pub(crate) fn user_message(mut o: Map<String, Value>, default: &str) -> Value {
    o.entry("attribution").or_insert_with(|| default.into());
    Value::Object(o)
}

/// An assistant message as the provider gets it: tool calls flagged `contextOmitted` are
/// removed, and when an interrupted-thinking marker follows, so is trailing unsigned thinking.
pub(crate) fn assistant_message(mut o: Map<String, Value>, next_is_interrupt: bool) -> Value {
    if let Some(Value::Array(blocks)) = o.get_mut("content") {
        blocks.retain(|b| {
            !(b.get("type").and_then(Value::as_str) == Some("toolCall")
                && truthy(b.get("contextOmitted")))
        });
        if next_is_interrupt {
            // An interrupted turn's trailing unsigned thinking cannot be replayed.
            while blocks.last().is_some_and(|b| {
                b.get("type").and_then(Value::as_str) == Some("thinking")
                    && !truthy(b.get("thinkingSignature"))
            }) {
                blocks.pop();
            }
        }
    }
    Value::Object(o)
}

/// A tool result as the provider gets it (none when `contextOmitted`): attributed to the
/// agent; a pruned result's text blocks merged into one (its placeholder), or the fallback
/// text when it has none.
pub(crate) fn tool_result_message(mut o: Map<String, Value>) -> Option<Value> {
    if truthy(o.get("contextOmitted")) {
        return None;
    }
    o.insert("attribution".into(), "agent".into());
    let pruned = o.get("prunedAt").is_some_and(Value::is_number);
    if pruned {
        if let Some(Value::Array(blocks)) = o.get_mut("content") {
            let mut merged = String::new();
            let mut any_text = false;
            for b in blocks.iter() {
                if b.get("type").and_then(Value::as_str) == Some("text") {
                    any_text = true;
                    merged.push_str(b.get("text").and_then(Value::as_str).unwrap_or(""));
                }
            }
            if !any_text || merged.is_empty() {
                merged = PRUNED_FALLBACK.to_string();
            }
            let mut new_blocks = Vec::with_capacity(blocks.len());
            let mut placed = false;
            for b in blocks.drain(..) {
                if b.get("type").and_then(Value::as_str) == Some("text") {
                    if !placed {
                        new_blocks.push(text_block(std::mem::take(&mut merged)));
                        placed = true;
                    }
                } else {
                    new_blocks.push(b);
                }
            }
            if !placed {
                new_blocks.insert(0, text_block(merged));
            }
            *blocks = new_blocks;
        }
    }
    Some(Value::Object(o))
}

/// What the provider message of a `message` entry is, told from the load pass's facts
/// without parsing the message, as a code: 1 its JSON as written; 2 or 3 that JSON with
/// `attribution` set to `user` or `agent` (replaced in place where the member exists, else
/// added last; [`ADOPTED_ATTRIBUTION`]); 0 where the conversion changes more (a pruned or
/// omitted tool result, an assistant with omitted tool calls, other roles) or the entry has no
/// facts. It is the outcome of `user_message`, `assistant_message` (with no interrupt marker
/// after the message) and `tool_result_message`, for a message whose JSON the core's parser
/// reads (one nested 128 levels deep is not); `verify_adopted_forms` checks the two agree. A
/// host that holds the messages it wrote as objects uses it to skip their conversion and its
/// copy (`WasmSession::adopt_llm_parts`).
pub fn adopted_form(session: &Session, index: usize) -> u32 {
    use crate::session::facts::{ATTRIBUTED, CALL_OMITTED, KNOWN, OMITTED, PARSE_FAILS, PRUNED};
    let Some(e) = session.entry(index) else {
        return 0;
    };
    let flags = session.fact_flags(index);
    if e.kind() != crate::session::EntryKind::Message
        || flags & KNOWN == 0
        || flags & PARSE_FAILS != 0
    {
        return 0;
    }
    let default = match e.role() {
        Some(Role::User) => 2,
        Some(Role::Developer) => 3,
        Some(Role::Assistant) => return u32::from(flags & CALL_OMITTED == 0),
        Some(Role::ToolResult) if flags & (OMITTED | PRUNED) == 0 => return 3,
        _ => return 0,
    };
    if flags & ATTRIBUTED == 0 {
        default
    } else {
        1
    }
}

/// The `attribution` an [`adopted_form`] code sets (codes 2 and 3).
pub const ADOPTED_ATTRIBUTION: [&str; 4] = ["", "", "user", "agent"];

/// Checks [`adopted_form`] against the conversion on every entry that has one (and whose
/// message parses): the number compared, or the first entry where they differ.
pub fn verify_adopted_forms(s: &Session) -> Result<usize, String> {
    let mut compared = 0;
    for i in 0..s.len() {
        let form = adopted_form(s, i);
        if form == 0 {
            continue;
        }
        let Some(Value::Object(mut expected)) = s
            .message_json(i)
            .and_then(|j| crate::support::json::parse(&j).ok())
        else {
            continue;
        };
        if form > 1 {
            expected.insert(
                "attribution".into(),
                ADOPTED_ATTRIBUTION[form as usize].into(),
            );
        }
        let Some(m) = ContextMessage::from_entry(s, i).ok().flatten() else {
            return Err(format!("entry {i}: not a context message"));
        };
        let mut out = Vec::new();
        convert_message(&mut out, s, &m, None);
        if out != [Value::Object(expected)] {
            return Err(format!("entry {i}: adopted form {form}, converted {out:?}"));
        }
        compared += 1;
    }
    Ok(compared)
}

impl ContextMessage {
    /// The message's `timestamp` field as written.
    fn json_timestamp(&self, session: &Session) -> Value {
        object(session, self, None)
            .remove("timestamp")
            .unwrap_or(Value::Null)
    }
}

// pi's conversion of a pi-family projection (pi 1.6, conformance cases 01-05).

/// The text around a compaction summary in pi's LLM view (model-facing wording, pi 1.6).
const PI_COMPACTION_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const PI_COMPACTION_SUFFIX: &str = "\n</summary>";
/// The text around a branch summary in pi's LLM view.
const PI_BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const PI_BRANCH_SUFFIX: &str = "</summary>";

/// pi's `convertToLlm` of a projected context: system, user, assistant and tool-result
/// messages pass as they are; summaries become user messages with pi's wording; custom
/// messages become user messages; a bash execution its text (unless excluded).
pub fn convert_pi(session: &Session, messages: &[ContextMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        convert_pi_message(&mut out, session, m);
    }
    out
}

/// [`convert_pi`] of one message, appended to `out` (none or one provider message).
pub fn convert_pi_message(out: &mut Vec<Value>, session: &Session, m: &ContextMessage) {
    let Ok(Value::Object(o)) = crate::support::json::parse(&m.json(session)) else {
        return;
    };
    let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
    let text = match s("role") {
        "system" | "user" | "assistant" | "toolResult" => return out.push(Value::Object(o)),
        "compactionSummary" => format!(
            "{PI_COMPACTION_PREFIX}{}{PI_COMPACTION_SUFFIX}",
            s("summary")
        ),
        "branchSummary" => format!("{PI_BRANCH_PREFIX}{}{PI_BRANCH_SUFFIX}", s("summary")),
        "bashExecution" => {
            if o.get("excludeFromContext").and_then(Value::as_bool) == Some(true) {
                return;
            }
            bash_execution_text(
                s("command"),
                s("output"),
                o.get("exitCode").and_then(Value::as_f64),
                o.get("cancelled").and_then(Value::as_bool) == Some(true),
            )
        }
        "custom" => {
            let content = match o.get("content") {
                Some(Value::String(t)) => text_blocks(t.clone()),
                Some(c) => c.clone(),
                None => Value::Array(Vec::new()),
            };
            return out.push(pi_user(content, &o));
        }
        _ => return,
    };
    out.push(pi_user(text_blocks(text), &o));
}

/// A user message of `content` with the timestamp of `of`.
fn pi_user(content: Value, of: &serde_json::Map<String, Value>) -> Value {
    let mut u = serde_json::Map::new();
    u.insert("role".into(), "user".into());
    u.insert("content".into(), content);
    u.insert(
        "timestamp".into(),
        of.get("timestamp").cloned().unwrap_or(Value::Null),
    );
    Value::Object(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_text_format() {
        assert_eq!(
            bash_execution_text("ls", "a\nb", Some(0.0), false),
            "Ran `ls`\n```\na\nb\n```"
        );
        // A final newline of the output stays: the fence closes on the next line.
        assert_eq!(
            bash_execution_text("ls", "a\n", None, false),
            "Ran `ls`\n```\na\n\n```"
        );
        assert_eq!(
            bash_execution_text("false", "", Some(1.0), false),
            "Ran `false`\n(no output)\n\nCommand exited with code 1"
        );
        assert_eq!(
            bash_execution_text("sleep 9", "", None, true),
            "Ran `sleep 9`\n(no output)\n\n(command cancelled)"
        );
        assert_eq!(
            bash_execution_text("x", "o", Some(-2.5), true),
            "Ran `x`\n```\no\n```\n\n(command cancelled)"
        );
    }
}
