//! One small stable sort for the whole crate.
//!
//! Every `slice::sort*` call instantiates the standard library's sorts for its element type and
//! comparator (about 4 KB of wasm each). None of our sorts is on a hot path (file lists, labels,
//! load warnings, line splices; the deflate encoder has its own), so they all share this one:
//! a non-generic merge sort over indices with a `dyn` comparator, then a non-generic in-place
//! permutation with a `dyn` swap. Per element type only two small closures remain.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably (equal elements keep their order).
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let order = sorted_order(v.len(), &mut |a, b| cmp(&v[a], &v[b]));
    permute(&order, &mut |a, b| v.swap(a, b));
}

/// Sorts `v` by the key `f` extracts, stably.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut f: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| f(a).cmp(&f(b)));
}

/// The stable sorted order of `0..n` under `cmp`: `order[i]` is the index of the element that
/// belongs at position `i`. Bottom-up merge sort.
fn sorted_order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b: Vec<usize> = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j) = (lo, mid);
            for slot in &mut b[lo..hi] {
                // Take from the right run only when it is strictly smaller: stability.
                let take_right = j < hi && (i >= mid || cmp(a[j], a[i]) == Ordering::Less);
                if take_right {
                    *slot = a[j];
                    j += 1;
                } else {
                    *slot = a[i];
                    i += 1;
                }
            }
            lo = hi;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    a
}

/// Rearranges a sequence so that position `i` holds what was at `order[i]`, by following the
/// permutation's cycles with `swap`.
fn permute(order: &[usize], swap: &mut dyn FnMut(usize, usize)) {
    let mut done = vec![false; order.len()];
    for start in 0..order.len() {
        if done[start] {
            continue;
        }
        // Walking the cycle: position `at` receives its element from `order[at]`; the element
        // first at `start` travels along and lands where the cycle closes.
        let mut at = start;
        loop {
            done[at] = true;
            let from = order[at];
            if from == start {
                break;
            }
            swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_stable_sort() {
        let mut x = 12345u64;
        for n in [0usize, 1, 2, 3, 5, 8, 9, 31, 64, 100, 257] {
            let v: Vec<(u8, usize)> = (0..n)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((x >> 61) as u8, i)
                })
                .collect();
            let mut ours = v.clone();
            sort_by_key(&mut ours, |e| e.0);
            let mut std = v.clone();
            std.sort_by_key(|e| e.0);
            // Equal keys keep their input order (the second field), as in `slice::sort_by_key`.
            assert_eq!(ours, std, "n = {n}");
        }
    }

    #[test]
    fn sorts_owned_strings_and_reverse_orders() {
        let mut v: Vec<String> = ["pear", "apple", "fig", "apple", "kiwi"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        sort_by(&mut v, |a, b| b.cmp(a));
        assert_eq!(v, ["pear", "kiwi", "fig", "apple", "apple"]);
        let mut w: Vec<u32> = (0..50).rev().collect();
        sort_by(&mut w, |a, b| a.cmp(b));
        assert_eq!(w, (0..50).collect::<Vec<u32>>());
    }
}
