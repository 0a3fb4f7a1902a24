//! Entry ids (spec: compaction §1.4): short 8-character ids, re-drawn on collision.
//! The source of ids is injected so tests and conformance runs are deterministic.

/// A source of candidate entry ids. The session re-draws on collision.
pub trait IdSource {
    /// The next candidate id.
    fn draw(&mut self) -> String;
}

/// The deterministic ids of the conformance data: `%08x(n)` for the n-th entry (1-based,
/// header excluded). After a migration the counter continues past the migrated entries.
#[derive(Debug, Clone, Default)]
pub struct SequentialIds {
    next: u64,
}

impl SequentialIds {
    /// Starts at `%08x(1)`.
    pub fn new() -> Self {
        SequentialIds { next: 1 }
    }
    /// Continues at `%08x(n)`.
    pub fn starting_at(n: u64) -> Self {
        SequentialIds { next: n }
    }
}

impl IdSource for SequentialIds {
    fn draw(&mut self) -> String {
        let id = hex_id(self.next);
        self.next += 1;
        id
    }
}

/// Pseudo-random 8-hex-digit ids from a seed (xorshift64*). The host seeds it from a real
/// random source; the core itself never reads one.
#[derive(Debug, Clone)]
pub struct RandomIds {
    state: u64,
}

impl RandomIds {
    /// A generator for `seed` (a zero seed is replaced by a fixed odd constant).
    pub fn new(seed: u64) -> Self {
        RandomIds {
            state: if seed == 0 {
                0x9E37_79B9_7F4A_7C15
            } else {
                seed
            },
        }
    }
}

impl IdSource for RandomIds {
    fn draw(&mut self) -> String {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        hex_id(x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32)
    }
}

/// `format!("{:08x}", n)` without the formatting machinery: an id is drawn for every entry
/// of a migrated v1 file, where `format!` was a tenth of the load (issue 42).
fn hex_id(n: u64) -> String {
    let digits = (16 - n.leading_zeros() as usize / 4).max(8);
    (0..digits)
        .rev()
        .map(|k| char::from(b"0123456789abcdef"[(n >> (4 * k) & 0xF) as usize]))
        .collect()
}

/// Draws an id not taken yet: up to 100 draws, then a long fallback made of two draws and a
/// counter, which cannot collide with 8-character ids.
pub(crate) fn fresh_id(source: &mut dyn IdSource, taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = source.draw();
        if !id.is_empty() && !taken(&id) {
            return id;
        }
    }
    let mut n: u64 = 0;
    loop {
        let id = format!("{}{}-{n}", source.draw(), source.draw());
        if !taken(&id) {
            return id;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_match_the_conformance_format() {
        let mut s = SequentialIds::new();
        assert_eq!(s.draw(), "00000001");
        assert_eq!(s.draw(), "00000002");
        let mut s = SequentialIds::starting_at(0x3fa);
        assert_eq!(s.draw(), "000003fa");
    }

    #[test]
    fn hex_ids_are_what_format_writes() {
        use proptest::prelude::*;
        for n in [0, 1, 0xF, 0xFFFF_FFFF, 0x1_0000_0000, u64::MAX, 0x3fa] {
            assert_eq!(hex_id(n), format!("{n:08x}"));
        }
        proptest!(|(n in any::<u64>(), shift in 0u32..64)| {
            prop_assert_eq!(hex_id(n >> shift), format!("{:08x}", n >> shift));
        });
    }

    #[test]
    fn random_ids_are_8_hex_and_redrawn_on_collision() {
        let mut r = RandomIds::new(42);
        let a = r.draw();
        assert_eq!(a.len(), 8);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        let mut same = RandomIds::new(42);
        let first = same.draw();
        let id = fresh_id(&mut same, |id| id == first);
        assert_ne!(id, first);
        // A source that only ever repeats itself falls back to a long id.
        struct Stuck;
        impl IdSource for Stuck {
            fn draw(&mut self) -> String {
                "deadbeef".into()
            }
        }
        let id = fresh_id(&mut Stuck, |id| id == "deadbeef");
        assert_eq!(id, "deadbeefdeadbeef-0");
    }
}
