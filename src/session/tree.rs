//! Tree operations (spec: compaction §1.8): paths, children, moving the leaf.

use crate::error::Result;
use crate::session::message::{Role, StopReason};
use crate::session::{EntryKind, Leaf, Session};

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

    /// Indices from the root to `index`, root first (`getBranch`). A missing parent ends the
    /// walk (an orphan is the root of its path); cycles were cut at load time.
    pub fn path_to(&self, index: usize) -> Vec<usize> {
        {
            let mut cache = self.last_path.borrow_mut();
            if let Some((at, path)) = cache.as_mut() {
                if *at == index {
                    return path.clone();
                }
                // A child of the cached leaf (an append): one entry more.
                if self.entries[index].parent == Some(*at as u32) {
                    path.push(index);
                    *at = index;
                    return path.clone();
                }
            }
        }
        let path = self.walk_to_root(index);
        *self.last_path.borrow_mut() = Some((index, path.clone()));
        path
    }

    fn walk_to_root(&self, index: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut cur = Some(index as u32);
        while let Some(i) = cur {
            path.push(i as usize);
            cur = self.entries[i as usize].parent;
            if path.len() > self.entries.len() {
                break; // unreachable once cycles are cut; a guard all the same
            }
        }
        path.reverse();
        path
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
