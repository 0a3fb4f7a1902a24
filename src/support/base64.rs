//! Standard base64 (RFC 4648 §4, with padding): frame payloads in archives and contexts.

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (frame payloads).
pub fn base64(data: &[u8]) -> String {
    let mut out = vec![0u8; data.len().div_ceil(3) * 4];
    let mut chunks = data.chunks_exact(3);
    let mut quads = out.chunks_exact_mut(4);
    for (c, q) in (&mut chunks).zip(&mut quads) {
        let n = (u32::from(c[0]) << 16) | (u32::from(c[1]) << 8) | u32::from(c[2]);
        q[0] = B64[(n >> 18) as usize & 63];
        q[1] = B64[(n >> 12) as usize & 63];
        q[2] = B64[(n >> 6) as usize & 63];
        q[3] = B64[n as usize & 63];
    }
    let rest = chunks.remainder();
    if let (Some(&b0), Some(q)) = (rest.first(), quads.next()) {
        let b1 = rest.get(1).map_or(0, |&b| u32::from(b));
        let n = (u32::from(b0) << 16) | (b1 << 8);
        q[0] = B64[(n >> 18) as usize & 63];
        q[1] = B64[(n >> 12) as usize & 63];
        q[2] = if rest.len() > 1 {
            B64[(n >> 6) as usize & 63]
        } else {
            b'='
        };
        q[3] = b'=';
    }
    // Only ASCII from `B64` and `=`: the conversion cannot fail.
    String::from_utf8(out).unwrap_or_default()
}

/// Decodes standard base64 (padding optional); `None` on a foreign character.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0;
    for &b in s.as_bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for data in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar"] {
            assert_eq!(base64_decode(&base64(data)).as_deref(), Some(data));
        }
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fo"), "Zm8=");
    }
}
