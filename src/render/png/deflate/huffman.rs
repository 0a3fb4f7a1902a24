//! Huffman coding (RFC 1951 §3.2.2): code lengths limited to a maximum depth and the canonical
//! codes they give (spec: snapcompact §7.9).

/// Code lengths of a Huffman code over `freqs`, limited to `max_bits` (by flattening the
/// frequencies until the tree fits).
pub(super) fn huffman_lengths(freqs: &[u32], max_bits: u8) -> Vec<u8> {
    let mut f: Vec<u64> = freqs.iter().map(|&x| x as u64).collect();
    loop {
        let lens = unlimited_lengths(&f);
        if lens.iter().all(|&l| l <= max_bits) {
            return lens;
        }
        for x in &mut f {
            if *x > 0 {
                *x = (*x >> 1).max(1);
            }
        }
    }
}

/// Sorts ascending (a few lines instead of linking the standard library's sort for one
/// small array of distinct keys).
fn heapsort<T: Ord + Copy>(v: &mut [T]) {
    fn sift<T: Ord + Copy>(v: &mut [T], mut root: usize, end: usize) {
        loop {
            let mut child = 2 * root + 1;
            if child >= end {
                return;
            }
            if child + 1 < end && v[child] < v[child + 1] {
                child += 1;
            }
            if v[root] >= v[child] {
                return;
            }
            v.swap(root, child);
            root = child;
        }
    }
    for i in (0..v.len() / 2).rev() {
        sift(v, i, v.len());
    }
    for end in (1..v.len()).rev() {
        v.swap(0, end);
        sift(v, 0, end);
    }
}

fn unlimited_lengths(freqs: &[u64]) -> Vec<u8> {
    let mut lens = vec![0u8; freqs.len()];
    let mut leaves: Vec<(u64, usize)> = freqs
        .iter()
        .enumerate()
        .filter(|(_, &f)| f > 0)
        .map(|(i, &f)| (f, i))
        .collect();
    match leaves.len() {
        0 => return lens,
        1 => {
            lens[leaves[0].1] = 1;
            return lens;
        }
        _ => {}
    }
    heapsort(&mut leaves);
    // Two-queue Huffman: leaves sorted, internal nodes created in non-decreasing order.
    let n = leaves.len();
    let mut parent = vec![0usize; 2 * n - 1];
    let mut weight: Vec<u64> = leaves.iter().map(|l| l.0).collect();
    weight.resize(2 * n - 1, 0);
    let (mut li, mut ni) = (0usize, n);
    let mut next = n;
    let pick = |weight: &Vec<u64>, li: &mut usize, ni: &mut usize, next: usize| -> usize {
        if *li < n && (*ni >= next || weight[*li] <= weight[*ni]) {
            *li += 1;
            *li - 1
        } else {
            *ni += 1;
            *ni - 1
        }
    };
    while next < 2 * n - 1 {
        let a = pick(&weight, &mut li, &mut ni, next);
        let b = pick(&weight, &mut li, &mut ni, next);
        weight[next] = weight[a] + weight[b];
        parent[a] = next;
        parent[b] = next;
        next += 1;
    }
    // Depths: root is the last node.
    let mut depth = vec![0u8; 2 * n - 1];
    for i in (0..2 * n - 2).rev() {
        depth[i] = depth[parent[i]].saturating_add(1);
    }
    for (k, &(_, sym)) in leaves.iter().enumerate() {
        lens[sym] = depth[k];
    }
    lens
}

/// Canonical codes (bit-reversed for LSB-first output) from code lengths.
pub(super) fn canonical_codes(lens: &[u8]) -> Vec<u16> {
    let mut bl_count = [0u16; 16];
    for &l in lens {
        bl_count[l as usize] += 1;
    }
    bl_count[0] = 0;
    let mut next = [0u16; 16];
    let mut code = 0u16;
    for bits in 1..16 {
        code = (code + bl_count[bits - 1]) << 1;
        next[bits] = code;
    }
    lens.iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            c.reverse_bits() >> (16 - l)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heapsort_sorts() {
        let mut x = 7u64;
        for n in [0usize, 1, 2, 3, 10, 286] {
            let mut v: Vec<(u64, usize)> = (0..n)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 60, i)
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            heapsort(&mut v);
            assert_eq!(v, want);
        }
    }

    #[test]
    fn limits_code_lengths() {
        // Fibonacci frequencies force a deep tree.
        let mut f = vec![1u32, 1];
        for i in 2..30 {
            let v = f[i - 1] + f[i - 2];
            f.push(v);
        }
        let lens = huffman_lengths(&f, 15);
        assert!(lens.iter().all(|&l| l <= 15 && l > 0));
        let kraft: f64 = lens.iter().map(|&l| 0.5f64.powi(l as i32)).sum();
        assert!(kraft <= 1.0 + 1e-9);
    }
}
