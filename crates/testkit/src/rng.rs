//! A tiny deterministic PRNG: xoshiro256** seeded through splitmix64.
//!
//! Only integer arithmetic and exact IEEE operations are used, so a seed yields the same
//! stream on every platform and build.

/// One step of splitmix64 (used for seeding and for hashing small tuples).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mixes a list of words into one 64-bit value (order-sensitive).
pub fn mix(words: &[u64]) -> u64 {
    let mut s = 0x243F_6A88_85A3_08D3u64;
    let mut acc = 0u64;
    for &w in words {
        s ^= w;
        acc = acc.rotate_left(17) ^ splitmix64(&mut s);
    }
    acc
}

/// xoshiro256** generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from `seed` (any value, including 0, is fine).
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let mut s = [0u64; 4];
        for w in &mut s {
            *w = splitmix64(&mut sm);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    /// A generator for a derived stream (independent of this generator's position).
    pub fn derived(parts: &[u64]) -> Self {
        Rng::new(mix(parts))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `0..n` (`n == 0` yields 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform `usize` in `0..n`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// Uniform in `lo..=hi` (returns `lo` when `hi < lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// Uniform `usize` in `lo..=hi`.
    pub fn range_usize(&mut self, lo: usize, hi: usize) -> usize {
        self.range(lo as u64, hi as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    /// A uniformly chosen element (`xs` must not be empty).
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.index(xs.len())]
    }

    /// A uniformly chosen string (`xs` must not be empty).
    pub fn ps(&mut self, xs: &[&'static str]) -> &'static str {
        xs[self.index(xs.len())]
    }

    /// An index chosen with the given integer weights (all-zero weights pick index 0).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut r = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            let w = u64::from(w);
            if r < w {
                return i;
            }
            r -= w;
        }
        0
    }

    /// A size that is roughly log-uniform in `lo..=hi` (product of two uniforms over the
    /// square-root range keeps it cheap and exactly reproducible).
    pub fn log_size(&mut self, lo: usize, hi: usize) -> usize {
        if hi <= lo || lo == 0 {
            return self.range_usize(lo, hi);
        }
        // Piecewise: choose an octave uniformly, then a value within it.
        let mut octaves = Vec::with_capacity(24);
        let mut a = lo;
        while a < hi {
            let b = (a.saturating_mul(2)).min(hi);
            octaves.push((a, b));
            a = b;
        }
        let (a, b) = octaves[self.index(octaves.len())];
        self.range_usize(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = Rng::new(43);
        assert_ne!(Rng::new(42).next_u64(), c.next_u64());
    }

    #[test]
    fn bounded_helpers_stay_in_range() {
        let mut r = Rng::new(7);
        for _ in 0..10_000 {
            assert!(r.below(10) < 10);
            let v = r.range(5, 9);
            assert!((5..=9).contains(&v));
            let s = r.log_size(200, 8000);
            assert!((200..=8000).contains(&s));
            let f = r.f64();
            assert!((0.0..1.0).contains(&f));
        }
        assert_eq!(r.weighted(&[0, 0, 5]), 2);
    }
}
