//! A session file arriving in pieces (a host's reader, a stream of chunks): written straight
//! into a buffer that the loaded session then takes over, so the file reaches the module's
//! memory once and is never held whole by the host as well (`Session.fromReader`,
//! `Session.fromStream`).
//!
//! The host asks for room for its next piece ([`SourceBuffer::room`]), writes the piece
//! there, and says how many bytes it wrote ([`SourceBuffer::advance`]). With the size known
//! up front the buffer is allocated once, at that size; without it (a stream of unknown
//! length, or one longer than announced) it grows geometrically, each growth a copy inside
//! the buffer's own memory.

use crate::error::{Error, ErrorCode, Result};

/// The bytes of a session file being written by its host.
#[derive(Debug, Default)]
pub struct SourceBuffer {
    /// The buffer: its first `filled` bytes are the file so far, the rest is room handed out.
    bytes: Vec<u8>,
    filled: usize,
}

impl SourceBuffer {
    /// A buffer with room for `size` bytes (the file's size when the host knows it: one
    /// allocation; `0` when it does not). `E_INVALID_ARGUMENT` when that much memory cannot
    /// be had.
    pub fn with_size(size: usize) -> Result<SourceBuffer> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(size).map_err(|_| too_large())?;
        bytes.resize(size, 0);
        Ok(SourceBuffer { bytes, filled: 0 })
    }

    /// Makes room for `n` more bytes after what is filled and returns the offset they go to.
    /// The buffer grows when it must, its capacity at least doubling (a stream of unknown
    /// length costs a logarithmic number of copies).
    pub fn room(&mut self, n: usize) -> Result<usize> {
        let need = self.filled.checked_add(n).ok_or_else(too_large)?;
        if need > self.bytes.len() {
            if let Some(capacity) = self.grown_capacity(n) {
                self.bytes
                    .try_reserve_exact(capacity - self.bytes.len())
                    .or_else(|_| self.bytes.try_reserve_exact(need - self.bytes.len()))
                    .map_err(|_| too_large())?;
            }
            self.bytes.resize(need, 0);
        }
        Ok(self.filled)
    }

    /// The capacity [`SourceBuffer::room`] grows the buffer to for `n` more bytes (at least
    /// double the present one), or `None` when it has the room. The wasm binding makes that
    /// much room at the top of the heap first, so that the growth extends the buffer in place
    /// instead of copying it (a copy would hold the old buffer and the new one at once).
    pub fn grown_capacity(&self, n: usize) -> Option<usize> {
        let need = self.filled.checked_add(n)?;
        (need > self.bytes.capacity()).then(|| need.max(self.bytes.capacity().saturating_mul(2)))
    }

    /// The bytes the buffer's allocation holds (written, room handed out, and spare).
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The room for `n` more bytes, as a slice to write them into (what a native host
    /// writes through; the wasm binding writes at [`SourceBuffer::address`] instead).
    pub fn window(&mut self, n: usize) -> Result<&mut [u8]> {
        let at = self.room(n)?;
        Ok(&mut self.bytes[at..at + n])
    }

    /// The address of the buffer's first byte in this process's memory (the module's linear
    /// memory on wasm32): valid until the next [`SourceBuffer::room`].
    pub fn address(&self) -> usize {
        self.bytes.as_ptr() as usize
    }

    /// Records that the host wrote `n` bytes into the room it was given.
    /// `E_INVALID_ARGUMENT` when `n` is more than that room.
    pub fn advance(&mut self, n: usize) -> Result<()> {
        match self.filled.checked_add(n) {
            Some(end) if end <= self.bytes.len() => {
                self.filled = end;
                Ok(())
            }
            _ => Err(Error::coded(
                ErrorCode::InvalidArgument,
                "more bytes written than the room given",
            )),
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.filled
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.filled == 0
    }

    /// The file: the bytes written, without the room left over.
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.bytes.truncate(self.filled);
        self.bytes
    }
}

fn too_large() -> Error {
    Error::coded(
        ErrorCode::InvalidArgument,
        "the session file does not fit in memory",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Fills a buffer with `data` in pieces of the given lengths (cycled), each written into
    /// room asked for `extra` bytes more than the piece (as a reader given more room than it
    /// fills).
    fn filled(data: &[u8], size: usize, pieces: &[usize], extra: usize) -> SourceBuffer {
        let mut buf = SourceBuffer::with_size(size).unwrap();
        let mut at = 0;
        let mut k = 0;
        while at < data.len() {
            let n = pieces[k % pieces.len()].clamp(1, data.len() - at);
            k += 1;
            let window = buf.window(n + extra).unwrap();
            window[..n].copy_from_slice(&data[at..at + n]);
            buf.advance(n).unwrap();
            at += n;
        }
        buf
    }

    #[test]
    fn a_known_size_is_one_allocation() {
        let data = b"0123456789".repeat(100);
        let mut buf = SourceBuffer::with_size(data.len()).unwrap();
        let start = buf.address();
        for piece in data.chunks(7) {
            buf.window(piece.len()).unwrap().copy_from_slice(piece);
            buf.advance(piece.len()).unwrap();
            assert_eq!(buf.address(), start, "the buffer moved");
        }
        assert_eq!(buf.into_bytes(), data);
    }

    #[test]
    fn an_unknown_size_grows_geometrically() {
        let mut buf = SourceBuffer::with_size(0).unwrap();
        let mut moves = 0;
        let mut last = buf.address();
        for _ in 0..4096 {
            buf.window(16).unwrap().fill(b'x');
            buf.advance(16).unwrap();
            if buf.address() != last {
                moves += 1;
                last = buf.address();
            }
        }
        assert_eq!(buf.len(), 65536);
        assert!(moves <= 14, "{moves} moves for 4,096 pieces");
    }

    #[test]
    fn the_growth_is_announced() {
        let mut buf = SourceBuffer::with_size(10).unwrap();
        assert_eq!(buf.grown_capacity(10), None);
        assert_eq!(buf.grown_capacity(11), Some(20));
        assert_eq!(buf.grown_capacity(45), Some(45));
        buf.room(11).unwrap();
        assert!(buf.capacity() >= 20);
        assert_eq!(buf.grown_capacity(buf.capacity() - 11), None);
    }

    #[test]
    fn more_than_the_room_is_refused_and_changes_nothing() {
        let mut buf = SourceBuffer::with_size(4).unwrap();
        buf.window(4).unwrap().copy_from_slice(b"abcd");
        let err = buf.advance(5).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        assert!(buf.is_empty());
        buf.advance(3).unwrap();
        assert_eq!(buf.into_bytes(), b"abc");
    }

    #[test]
    fn a_size_that_cannot_exist_is_an_error() {
        let err = SourceBuffer::with_size(usize::MAX).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
    }

    #[test]
    fn room_that_cannot_exist_is_an_error() {
        let mut buf = SourceBuffer::with_size(1).unwrap();
        buf.advance(1).unwrap();
        assert_eq!(
            buf.room(usize::MAX).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
    }

    proptest! {
        #[test]
        fn pieces_give_the_file_back(
            data in proptest::collection::vec(any::<u8>(), 0..2000),
            pieces in proptest::collection::vec(1usize..300, 1..8),
            known in any::<bool>(),
            extra in 0usize..64,
        ) {
            let size = if known { data.len() } else { 0 };
            let buf = filled(&data, size, &pieces, extra);
            prop_assert_eq!(buf.len(), data.len());
            prop_assert_eq!(buf.into_bytes(), data);
        }
    }
}
