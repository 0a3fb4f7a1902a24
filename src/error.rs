//! Errors of the core. Every error and every load warning carries an [`ErrorCode`] whose
//! string form (`E_…`) is stable: it crosses the JS boundary unchanged as `Error.code`.

use std::fmt;

/// Stable error codes. The string forms are part of the public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A JSONL line is not valid JSON (or not a JSON object).
    JsonlLine,
    /// The input does not start with a session header.
    NotASession,
    /// The header's `version` is newer than this library understands.
    VersionTooNew,
    /// A line holds bytes that are not valid UTF-8.
    InvalidUtf8,
    /// An entry id that the session does not hold.
    UnknownEntry,
    /// An entry's `parentId` names no entry of the session.
    UnknownParent,
    /// Following `parentId` links returns to an entry already visited.
    ParentCycle,
    /// Two entries share one id.
    DuplicateId,
    /// A JSON object line that is not a usable entry (no string `type` or `id`).
    InvalidEntry,
    /// An entry's body does not have the shape its type requires.
    InvalidEntryBody,
    /// A session file was migrated from an older format version.
    Migrated,
    /// Invalid options or settings passed by the host.
    Settings,
    /// Invalid argument passed by the host.
    InvalidArgument,
    /// Compaction has nothing to summarize.
    NothingToCompact,
    /// The active path already ends with a compaction.
    AlreadyCompacted,
    /// A summarizer callback or endpoint failed.
    Summarizer,
    /// The operation was aborted by the host.
    Aborted,
    /// A compaction or navigation plan no longer fits the session.
    StalePlan,
    /// A compaction plan was committed before all answers were in.
    PlanIncomplete,
    /// A hook cancelled the operation.
    Cancelled,
    /// Another compaction of this session is still running.
    Busy,
    Shape,
    Options,
    Font,
    Encode,
    /// A compaction cannot be undone: the entry is not a compaction, or the session moved on.
    UndoRefused,
    /// A compaction would not make the context smaller, or not small enough to fit the window.
    NoReduction,
    /// A message handed to an append is not an agent message the core reads back as it was
    /// written (spec: compaction §1.7); the error names the field.
    InvalidMessage,
    /// A JS object (a session, a plan) was used after `free()`.
    Freed,
    /// The host's `tokenCounter` threw or returned something other than a count.
    TokenCounter,
}

impl ErrorCode {
    /// Every code, in declaration order (the `.d.ts` `ErrorCode` union lists the same names).
    pub const ALL: [ErrorCode; 30] = [
        ErrorCode::JsonlLine,
        ErrorCode::NotASession,
        ErrorCode::VersionTooNew,
        ErrorCode::InvalidUtf8,
        ErrorCode::UnknownEntry,
        ErrorCode::UnknownParent,
        ErrorCode::ParentCycle,
        ErrorCode::DuplicateId,
        ErrorCode::InvalidEntry,
        ErrorCode::InvalidEntryBody,
        ErrorCode::Migrated,
        ErrorCode::Settings,
        ErrorCode::InvalidArgument,
        ErrorCode::NothingToCompact,
        ErrorCode::AlreadyCompacted,
        ErrorCode::Summarizer,
        ErrorCode::Aborted,
        ErrorCode::StalePlan,
        ErrorCode::PlanIncomplete,
        ErrorCode::Cancelled,
        ErrorCode::Busy,
        ErrorCode::Shape,
        ErrorCode::Options,
        ErrorCode::Font,
        ErrorCode::Encode,
        ErrorCode::UndoRefused,
        ErrorCode::NoReduction,
        ErrorCode::InvalidMessage,
        ErrorCode::Freed,
        ErrorCode::TokenCounter,
    ];

    /// The stable string form, e.g. `E_JSONL_LINE`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::JsonlLine => "E_JSONL_LINE",
            ErrorCode::NotASession => "E_NOT_A_SESSION",
            ErrorCode::VersionTooNew => "E_VERSION_TOO_NEW",
            ErrorCode::InvalidUtf8 => "E_INVALID_UTF8",
            ErrorCode::UnknownEntry => "E_UNKNOWN_ENTRY",
            ErrorCode::UnknownParent => "E_UNKNOWN_PARENT",
            ErrorCode::ParentCycle => "E_PARENT_CYCLE",
            ErrorCode::DuplicateId => "E_DUPLICATE_ID",
            ErrorCode::InvalidEntry => "E_INVALID_ENTRY",
            ErrorCode::InvalidEntryBody => "E_INVALID_ENTRY_BODY",
            ErrorCode::Migrated => "E_MIGRATED",
            ErrorCode::Settings => "E_SETTINGS",
            ErrorCode::InvalidArgument => "E_INVALID_ARGUMENT",
            ErrorCode::NothingToCompact => "E_NOTHING_TO_COMPACT",
            ErrorCode::AlreadyCompacted => "E_ALREADY_COMPACTED",
            ErrorCode::Summarizer => "E_SUMMARIZER",
            ErrorCode::Aborted => "E_ABORTED",
            ErrorCode::StalePlan => "E_STALE_PLAN",
            ErrorCode::PlanIncomplete => "E_PLAN_INCOMPLETE",
            ErrorCode::Cancelled => "E_CANCELLED",
            ErrorCode::Busy => "E_BUSY",
            ErrorCode::Shape => "E_SHAPE",
            ErrorCode::Options => "E_OPTIONS",
            ErrorCode::Font => "E_FONT",
            ErrorCode::Encode => "E_ENCODE",
            ErrorCode::UndoRefused => "E_UNDO_REFUSED",
            ErrorCode::NoReduction => "E_NO_REDUCTION",
            ErrorCode::InvalidMessage => "E_INVALID_MESSAGE",
            ErrorCode::Freed => "E_FREED",
            ErrorCode::TokenCounter => "E_TOKEN_COUNTER",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of the core: what went wrong, with enough context to act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input is empty or its first line is not a `{"type":"session","id":…}` header.
    NotASession { line: u32, reason: String },
    /// The header declares a format version this library cannot read.
    VersionTooNew { version: u64, supported: u64 },
    /// An operation named an entry id the session does not hold.
    UnknownEntry { id: String },
    /// An entry exists but its body cannot be read as its type requires.
    InvalidEntryBody {
        id: String,
        line: u32,
        reason: String,
    },
    /// The host passed an invalid value.
    InvalidArgument { what: String },
    /// Invalid settings; `field` names the offending setting.
    Settings { field: String, reason: String },
    /// The active path already ends with a compaction.
    AlreadyCompacted,
    /// Compaction would summarize nothing.
    NothingToCompact { reason: String },
    /// A plan no longer fits the session (it changed after planning).
    StalePlan { reason: String },
    /// A plan is committed before all its answers are in.
    PlanIncomplete { missing: Vec<String> },
    /// A summarizer failed in a way the plan cannot recover from.
    Summarizer { reason: String },
    /// A message handed to an append that the core would not read back as written;
    /// `field` is its path inside the message (`content[2].text`, empty for the whole).
    InvalidMessage { field: String, reason: String },
    /// An error whose code and whole message were decided where it arose: argument checks at
    /// the host boundary, and the render layer's errors (`E_SHAPE`, `E_OPTIONS`, `E_FONT`,
    /// `E_ENCODE`), which keep their code inside a compaction.
    Coded { code: ErrorCode, message: String },
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::NotASession { .. } => ErrorCode::NotASession,
            Error::VersionTooNew { .. } => ErrorCode::VersionTooNew,
            Error::UnknownEntry { .. } => ErrorCode::UnknownEntry,
            Error::InvalidEntryBody { .. } => ErrorCode::InvalidEntryBody,
            Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Error::Settings { .. } => ErrorCode::Settings,
            Error::AlreadyCompacted => ErrorCode::AlreadyCompacted,
            Error::NothingToCompact { .. } => ErrorCode::NothingToCompact,
            Error::StalePlan { .. } => ErrorCode::StalePlan,
            Error::PlanIncomplete { .. } => ErrorCode::PlanIncomplete,
            Error::Summarizer { .. } => ErrorCode::Summarizer,
            Error::InvalidMessage { .. } => ErrorCode::InvalidMessage,
            Error::Coded { code, .. } => *code,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotASession { line, reason } => write!(
                f,
                "not a session file: {reason} (line {line}); a session starts with a \
                 {{\"type\":\"session\",\"id\":…}} header line — use Session.create() for a new session"
            ),
            Error::VersionTooNew { version, supported } => write!(
                f,
                "session format version {version} is newer than this library supports \
                 (up to {supported}); upgrade ctxfold to read it"
            ),
            Error::UnknownEntry { id } => write!(f, "Entry {id} not found"),
            Error::InvalidEntryBody { id, line, reason } => write!(
                f,
                "entry {id} (line {line}) cannot be read: {reason}"
            ),
            Error::InvalidArgument { what } => write!(f, "invalid argument: {what}"),
            Error::Settings { field, reason } => write!(f, "invalid setting `{field}`: {reason}"),
            Error::AlreadyCompacted => f.write_str(
                "Already compacted: the active path ends with a compaction; add messages first",
            ),
            Error::NothingToCompact { reason } => {
                write!(f, "Nothing to compact (session too small): {reason}")
            }
            Error::StalePlan { reason } => write!(
                f,
                "the plan no longer fits the session ({reason}); plan again"
            ),
            Error::PlanIncomplete { missing } => write!(
                f,
                "the plan still waits for answers to: {}; answer every pending request first",
                missing.join(", ")
            ),
            Error::Summarizer { reason } => write!(f, "Summarization failed: {reason}"),
            Error::InvalidMessage { field, reason } if field.is_empty() => {
                write!(f, "invalid message: {reason}")
            }
            Error::InvalidMessage { field, reason } => {
                write!(f, "invalid message: {field}: {reason}")
            }
            Error::Coded { message, .. } => f.write_str(message),
        }
    }
}

impl Error {
    /// An error with `code` and exactly `message`.
    pub fn coded(code: ErrorCode, message: impl Into<String>) -> Error {
        Error::Coded {
            code,
            message: message.into(),
        }
    }
}

/// A wrong field of a settings or options object the core reads is a settings error naming the
/// field (`E_SETTINGS`).
impl From<crate::support::json::fields::FieldError> for Error {
    fn from(e: crate::support::json::fields::FieldError) -> Error {
        Error::Settings {
            reason: format!("expected {}", e.expected),
            field: e.field,
        }
    }
}

impl std::error::Error for Error {}

/// Result alias of the core.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn all_lists_every_code_once_in_declaration_order() {
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(
                *code as usize, i,
                "{code} is out of place in ErrorCode::ALL"
            );
        }
        // `TokenCounter` is the last variant: a new code goes after it and into ALL.
        assert_eq!(ErrorCode::ALL.len(), ErrorCode::TokenCounter as usize + 1);
    }

    /// The file of the package's TypeScript sources (`src/js/`) that declares `ErrorCode`.
    fn typescript_error_codes() -> String {
        fn walk(dir: &std::path::Path, out: &mut Option<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if path.extension().is_some_and(|x| x == "ts") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    if text.contains("export type ErrorCode =") {
                        *out = Some(text);
                    }
                }
            }
        }
        let mut found = None;
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/js"),
            &mut found,
        );
        found.expect("a file of src/js declares `export type ErrorCode =`")
    }

    /// The TypeScript union must name exactly the core's codes, plus the codes only the JS
    /// shell raises.
    #[test]
    fn the_typescript_union_names_the_same_codes() {
        const JS_ONLY: [&str; 2] = ["E_NOT_INITIALISED", "E_LOCKED"];
        let dts = typescript_error_codes();
        let start = dts
            .find("export type ErrorCode =")
            .expect("src/js declares ErrorCode");
        let members = dts[start..]
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| l.starts_with("| '"));
        let mut names = Vec::new();
        for line in members {
            names.push(
                line.trim_start_matches("| '")
                    .split('\'')
                    .next()
                    .unwrap_or(""),
            );
            if line.ends_with(';') {
                break;
            }
        }
        let mut ours: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        ours.extend(JS_ONLY);
        names.sort_unstable();
        ours.sort_unstable();
        assert_eq!(names, ours);
    }
}
