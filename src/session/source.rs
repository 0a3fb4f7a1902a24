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
use crate::session::load::{LoadOptions, Progress};
use crate::session::model::Session;

/// The bytes of a session file being written by its host.
pub struct SourceBuffer {
    /// The file so far (its length: the bytes written). The host writes its next piece into
    /// the spare capacity after it: the room is never filled with zeros first, so a page of
    /// the module's memory is first touched by the host's own write (a read from a file on
    /// another thread touches it there).
    bytes: Vec<u8>,
    /// The end of the room handed out last (what [`SourceBuffer::advance`] may take up to).
    room_end: usize,
    /// The end of the room known to hold bytes (zeroed for a native host's
    /// [`SourceBuffer::window`]).
    init_end: usize,
    /// The lines read so far ([`SourceBuffer::read_lines`]).
    progress: Progress,
}

impl SourceBuffer {
    /// A buffer with room for `size` bytes (the file's size when the host knows it: one
    /// allocation; `0` when it does not). `E_INVALID_ARGUMENT` when that much memory cannot
    /// be had.
    pub fn with_size(size: usize) -> Result<SourceBuffer> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(size).map_err(|_| too_large())?;
        Ok(SourceBuffer {
            bytes,
            room_end: 0,
            init_end: 0,
            progress: Progress::new(size),
        })
    }

    /// Makes room for `n` more bytes after what is filled and returns the offset they go to.
    /// The buffer grows when it must, its capacity at least doubling (a stream of unknown
    /// length costs a logarithmic number of copies).
    pub fn room(&mut self, n: usize) -> Result<usize> {
        let filled = self.bytes.len();
        let need = filled.checked_add(n).ok_or_else(too_large)?;
        if let Some(capacity) = self.grown_capacity(n) {
            self.bytes
                .try_reserve_exact(capacity - filled)
                .or_else(|_| self.bytes.try_reserve_exact(n))
                .map_err(|_| too_large())?;
        }
        self.room_end = need;
        self.init_end = filled;
        Ok(filled)
    }

    /// The capacity [`SourceBuffer::room`] grows the buffer to for `n` more bytes (at least
    /// double the present one), or `None` when it has the room. The wasm binding makes that
    /// much room at the top of the heap first, so that the growth extends the buffer in place
    /// instead of copying it (a copy would hold the old buffer and the new one at once).
    pub fn grown_capacity(&self, n: usize) -> Option<usize> {
        let need = self.bytes.len().checked_add(n)?;
        (need > self.bytes.capacity()).then(|| need.max(self.bytes.capacity().saturating_mul(2)))
    }

    /// The bytes the buffer's allocation holds (written, room handed out, and spare).
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The room for `n` more bytes, zeroed, as a slice to write them into (what a native
    /// host writes through; the wasm binding writes at [`SourceBuffer::address`] instead).
    #[allow(unsafe_code)]
    pub fn window(&mut self, n: usize) -> Result<&mut [u8]> {
        let at = self.room(n)?;
        let spare = &mut self.bytes.spare_capacity_mut()[..n];
        spare.fill(std::mem::MaybeUninit::new(0));
        self.init_end = at + n;
        // SAFETY: the `n` bytes after the filled ones are within the capacity (`room`) and
        // were just written.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.bytes.as_mut_ptr().add(at), n) })
    }

    /// The address of the buffer's first byte in this process's memory (the module's linear
    /// memory on wasm32): valid until the next [`SourceBuffer::room`].
    pub fn address(&self) -> usize {
        self.bytes.as_ptr() as usize
    }

    /// Records that the host wrote `n` bytes into the [`SourceBuffer::window`] it was given.
    /// `E_INVALID_ARGUMENT` when `n` is more than that window.
    #[allow(unsafe_code)]
    pub fn advance(&mut self, n: usize) -> Result<()> {
        let end = self.checked_end(n, self.init_end)?;
        // SAFETY: the bytes up to `init_end` (within the capacity) were written by `window`.
        unsafe { self.bytes.set_len(end) };
        Ok(())
    }

    /// Records that the host wrote `n` bytes at [`SourceBuffer::address`] plus the offset
    /// [`SourceBuffer::room`] gave. `E_INVALID_ARGUMENT` when `n` is more than that room.
    ///
    /// # Safety
    /// The host wrote all `n` bytes (through the memory, outside Rust: the module's linear
    /// memory, written by JavaScript).
    #[allow(unsafe_code)]
    pub unsafe fn advance_written(&mut self, n: usize) -> Result<()> {
        let end = self.checked_end(n, self.room_end)?;
        // SAFETY: within the capacity (`room`); written, by the caller's contract.
        unsafe { self.bytes.set_len(end) };
        Ok(())
    }

    /// The end of the file after `n` more bytes, when that is at most `limit`.
    fn checked_end(&self, n: usize, limit: usize) -> Result<usize> {
        match self.bytes.len().checked_add(n) {
            Some(end) if end <= limit => Ok(end),
            _ => Err(Error::coded(
                ErrorCode::InvalidArgument,
                "more bytes written than the room given",
            )),
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Reads the lines written so far that are complete (see [`Progress`]): the load's scan,
    /// done while the host fetches more.
    pub fn read_lines(&mut self) {
        self.progress.read(&self.bytes);
    }

    /// How far the lines read while the file arrived reach (0 before the header is read):
    /// the position after the last line break read.
    pub fn lines_read_to(&self) -> usize {
        self.progress.position()
    }

    /// The file: the bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The session of the file written (the lines read before are not read again).
    pub fn load(self, options: LoadOptions) -> Result<Session> {
        self.progress.finish(self.bytes, options)
    }
}

impl std::fmt::Debug for SourceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceBuffer")
            .field("len", &self.bytes.len())
            .field("capacity", &self.bytes.capacity())
            .field("lines_read_to", &self.lines_read_to())
            .finish()
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
        // No room asked for yet: nothing can be claimed.
        assert!(buf.advance(1).is_err());
        buf.window(1).unwrap()[0] = b'x';
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
