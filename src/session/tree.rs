//! Tree operations (spec: compaction §1.8): paths, children, moving the leaf.

use crate::error::Result;
use crate::session::entry::EntryKind;
use crate::session::lines::Leaf;
use crate::session::message::{Role, StopReason};
use crate::session::model::{PathCache, Session};
use std::rc::Rc;

/// `PathCache::pos` of an entry not on the kept path.
const NOT_ON_PATH: u32 = u32::MAX;

impl Session {
    /// Index of the leaf entry; `None` after [`Session::reset_leaf`] or for an empty session.
    pub fn leaf(&self) -> Option<usize> {
        match self.leaf {
            Leaf::At(i) => Some(i as usize),
            Leaf::None => None,
        }
    }

    /// Id of the leaf entry.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf().map(|i| self.entries[i].id())
    }

    /// Whether entry `index` is a message of the user's request: a user, developer or
    /// file-mention message.
    pub fn is_request(&self, index: usize) -> bool {
        let e = &self.entries[index];
        e.kind() == EntryKind::Message
            && matches!(
                e.role(),
                Some(Role::User | Role::Developer | Role::FileMention)
            )
    }

    /// Whether a turn is under way at the leaf: its last message is a tool result, or an
    /// assistant message that stopped for tool calls, so the agent sends another request
    /// before the user speaks again (spec: compaction §8.3, the reference defers a threshold
    /// handoff past such a point).
    pub fn turn_under_way(&self) -> bool {
        let Some(i) = self.leaf() else {
            return false;
        };
        let e = &self.entries[i];
        if e.kind() != EntryKind::Message {
            return false;
        }
        match e.role() {
            Some(Role::ToolResult) => true,
            Some(Role::Assistant) => self
                .message_head(i)
                .is_ok_and(|h| h.stop_reason == Some(StopReason::ToolUse)),
            _ => false,
        }
    }

    /// Whether the leaf's path holds conversation: a message, a compaction, a branch summary or
    /// a custom message. Until it does, the system messages a host appends are the session's
    /// system prompt; after, they are later instructions (the message formats read them so).
    pub fn path_holds_conversation(&self) -> bool {
        let mut at = self.leaf();
        while let Some(i) = at {
            if matches!(
                self.entries[i].kind(),
                EntryKind::Message
                    | EntryKind::Compaction
                    | EntryKind::BranchSummary
                    | EntryKind::CustomMessage
            ) {
                return true;
            }
            at = self.parent_of(i);
        }
        false
    }

    /// Indices from the root to `index`, root first (`getBranch`). A missing parent ends the
    /// walk (an orphan is the root of its path); cycles were cut at load time.
    pub fn path_to(&self, index: usize) -> Vec<usize> {
        self.path_shared(index).to_vec()
    }

    /// [`Session::path_to`] without a copy: the session keeps the last path asked for and
    /// moves it to the next leaf by what changed, so the path to an entry appended below it
    /// (an agent turn) costs the appended entries, and a branch move the entries between the
    /// two leaves and where their paths part; the common part is not walked again. The path
    /// is shared with the session until the next call for another leaf (holding it past that
    /// call makes the next move copy it).
    pub fn path_shared(&self, index: usize) -> Rc<Vec<usize>> {
        let mut kept = self.last_path.borrow_mut();
        let c = kept.get_or_insert_with(PathCache::default);
        if c.leaf == Some(index) {
            return c.path.clone();
        }
        if c.pos.len() < self.entries.len() {
            c.pos.resize(self.entries.len(), NOT_ON_PATH);
        }
        // From `index` up to the first entry the kept path holds (or past a root).
        let mut above = Vec::new();
        let mut fork = None;
        let mut cur = Some(index as u32);
        while let Some(i) = cur {
            let i = i as usize;
            if c.pos[i] != NOT_ON_PATH {
                fork = Some(c.pos[i] as usize);
                break;
            }
            above.push(i);
            if above.len() > self.entries.len() {
                break; // unreachable once cycles are cut; a guard all the same
            }
            cur = self.entries[i].parent;
        }
        let path = Rc::make_mut(&mut c.path);
        let keep = fork.map_or(0, |p| p + 1);
        for &e in &path[keep..] {
            c.pos[e] = NOT_ON_PATH;
        }
        path.truncate(keep);
        for &e in above.iter().rev() {
            c.pos[e] = path.len() as u32;
            path.push(e);
        }
        c.leaf = Some(index);
        c.path.clone()
    }

    /// The position of `entry` on `path`, a path as [`Session::path_to`] gives it: read from
    /// the kept path's positions when `path` is the kept one (a prune asks where its keep
    /// boundary is on every turn), else found by a walk from the root.
    pub fn position_on_path(&self, path: &[usize], entry: usize) -> Option<usize> {
        if let (Some(c), Some(&leaf)) = (self.last_path.borrow().as_ref(), path.last()) {
            if c.leaf == Some(leaf) {
                return c
                    .pos
                    .get(entry)
                    .filter(|&&p| p != NOT_ON_PATH)
                    .map(|&p| p as usize);
            }
        }
        path.iter().position(|&i| i == entry)
    }

    /// [`Session::path_of`] without a copy (see [`Session::path_shared`]).
    pub fn path_of_shared(&self, leaf: Option<&str>) -> crate::error::Result<Rc<Vec<usize>>> {
        Ok(match leaf {
            Some(id) => self.path_shared(self.require(id)?),
            None => self.leaf().map(|l| self.path_shared(l)).unwrap_or_default(),
        })
    }

    /// The path to the entry `leaf` names, or the active path without one; `E_UNKNOWN_ENTRY`
    /// for an id not in the session.
    pub fn path_of(&self, leaf: Option<&str>) -> crate::error::Result<Vec<usize>> {
        Ok(match leaf {
            Some(id) => self.path_to(self.require(id)?),
            None => self.active_path(),
        })
    }

    /// The active path: root to leaf (empty when there is no leaf).
    pub fn active_path(&self) -> Vec<usize> {
        self.leaf().map(|l| self.path_to(l)).unwrap_or_default()
    }

    /// Indices of the entries whose parent is `index` (`None`: the roots), in file order.
    pub fn children(&self, index: Option<usize>) -> Vec<usize> {
        let want = index.map(|i| i as u32);
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.parent == want)
            .map(|(i, _)| i)
            .collect()
    }

    /// Moves the leaf to an existing entry (`branch(id)`); `E_UNKNOWN_ENTRY` if there is none.
    pub fn branch(&mut self, id: &str) -> Result<()> {
        let i = self.require(id)?;
        self.leaf = Leaf::At(i as u32);
        Ok(())
    }

    /// Clears the leaf: the next append becomes a new root (`resetLeaf`).
    pub fn reset_leaf(&mut self) {
        self.leaf = Leaf::None;
    }

    /// Index of the entry's parent.
    pub fn parent_of(&self, index: usize) -> Option<usize> {
        self.entries[index].parent.map(|p| p as usize)
    }
}

#[cfg(test)]
mod tests {
    use crate::session::{LoadOptions, Session};
    use serde_json::json;
    use std::rc::Rc;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#;

    #[test]
    fn conversation_starts_at_a_message_summary_or_custom_message() {
        let mut s = Session::load(HEADER.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        assert!(!s.path_holds_conversation(), "empty");
        let mut data = serde_json::Map::new();
        data.insert("customType".into(), json!("x"));
        s.append("custom", data.clone(), 0).unwrap();
        let model = s.append("model_change", serde_json::Map::new(), 0).unwrap();
        assert!(
            !s.path_holds_conversation(),
            "custom and model entries are not conversation"
        );
        let mut shown = data.clone();
        shown.insert("content".into(), json!("note"));
        shown.insert("display".into(), json!(true));
        s.append("custom_message", shown, 0).unwrap();
        assert!(s.path_holds_conversation(), "a custom message is");
        // Back on the model change: its path holds none; a message on a side branch is.
        s.branch(&model).unwrap();
        assert!(!s.path_holds_conversation());
        s.append_message(json!({"role": "user", "content": "q"}), 0)
            .unwrap();
        assert!(s.path_holds_conversation());
    }

    #[test]
    fn a_turn_extends_the_kept_path_in_place() {
        let mut s = Session::load(HEADER.as_bytes().to_vec(), LoadOptions::default()).unwrap();
        for n in 0..50 {
            s.append_message(json!({"role": "user", "content": format!("q{n}")}), 0)
                .unwrap();
        }
        let first = Rc::as_ptr(&s.path_shared(s.leaf().unwrap()));
        for n in 0..3 {
            // Two appends and more between two questions: the same path, extended.
            for k in 0..=n {
                s.append_message(json!({"role": "user", "content": format!("r{k}")}), 0)
                    .unwrap();
            }
            let path = s.path_shared(s.leaf().unwrap());
            assert!(std::ptr::eq(Rc::as_ptr(&path), first), "turn {n}");
            assert_eq!(path.len(), s.len());
        }
        // A path still held when the leaf moves is left as it was; the session copies.
        let held = s.path_shared(s.leaf().unwrap());
        let other = s.path_shared(10);
        assert_eq!(held.len(), s.len());
        assert_eq!(*other, (0..=10).collect::<Vec<_>>());
        assert!(!Rc::ptr_eq(&held, &other));
    }
}
