//! ISO 8601 timestamps ⇄ milliseconds since the Unix epoch, as JavaScript's `Date` writes
//! and reads them (`toISOString()`: `YYYY-MM-DDTHH:MM:SS.mmmZ`). The core never reads a
//! clock: `now` is always passed in.

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `new Date(ms).toISOString()`: years outside 0–9999 in the expanded form JavaScript writes
/// and reads (`+275760-09-13…`, `-000001-…`). The callers keep `ms` within the `Date` range.
pub fn format_iso(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else {
        format!("{}{:06}", if y < 0 { '-' } else { '+' }, y.unsigned_abs())
    };
    format!(
        "{}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        year,
        mo,
        d,
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// Parses `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH:MM)` (and a bare date) to milliseconds, the
/// year also in the expanded form `±YYYYYY`. Returns `None` for anything else, like
/// `Date.parse` returning `NaN`.
pub fn parse_iso(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    match b.first() {
        Some(sign @ (b'+' | b'-')) => {
            let digits = b.get(1..7)?;
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let y: i64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
            // `-000000` is no year to JavaScript.
            if *sign == b'-' && y == 0 {
                return None;
            }
            // The rest reads as a four-digit year form from its last four digits on.
            parse_from(s.get(3..)?, Some(if *sign == b'-' { -y } else { y }))
        }
        _ => parse_from(s, None),
    }
}

/// [`parse_iso`] of the four-digit year form; `year` replaces the year it holds.
fn parse_from(s: &str, year: Option<i64>) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let y = num(0..4)?;
    let y = year.unwrap_or(y);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let mo = num(5..7)?;
    let d = num(8..10)?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let mut ms = days_from_civil(y, mo, d) * 86_400_000;
    if b.len() == 10 {
        return Some(ms);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) || b.get(13) != Some(&b':') {
        return None;
    }
    let h = num(11..13)?;
    let mi = num(14..16)?;
    let mut i = 16;
    let mut sec = 0;
    let mut frac = 0;
    if b.get(i) == Some(&b':') {
        sec = num(i + 1..i + 3)?;
        i += 3;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            let mut end = start;
            while b.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            if end == start {
                return None;
            }
            // Milliseconds: first three digits, right-padded.
            let digits = &s[start..end.min(start + 3)];
            frac = digits.parse::<i64>().ok()? * 10_i64.pow(3 - digits.len() as u32);
            i = end;
        }
    }
    if h > 24 || mi > 59 || sec > 59 {
        return None;
    }
    ms += h * 3_600_000 + mi * 60_000 + sec * 1000 + frac;
    match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => Some(ms),
        Some(sign @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = if b.get(i + 3) == Some(&b':') {
                num(i + 4..i + 6)?
            } else {
                num(i + 3..i + 5)?
            };
            let off = (oh * 60 + om) * 60_000;
            Some(if *sign == b'+' { ms - off } else { ms + off })
        }
        // No zone: `Date.parse` reads date-time forms without a zone as local time; a
        // sans-IO core has no local zone, so UTC is the deterministic choice.
        None => Some(ms),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_like_javascript_dates() {
        assert_eq!(format_iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_iso(1_763_681_581_544), "2025-11-20T23:33:01.544Z");
        assert_eq!(
            parse_iso("2025-11-20T23:33:01.550Z"),
            Some(1_763_681_581_550)
        );
        assert_eq!(parse_iso("2026-06-10T12:00:00Z"), Some(1_781_092_800_000));
        assert_eq!(
            parse_iso("2026-06-10T14:00:00+02:00"),
            Some(1_781_092_800_000)
        );
        assert_eq!(parse_iso("2026-06-10"), Some(1_781_049_600_000));
        assert_eq!(parse_iso("1969-12-31T23:59:59.999Z"), Some(-1));
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-06-10T25",
            "2026-06-10T12:00:00Zjunk",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
        for ms in [0, 951_782_400_000, 4_102_444_800_123, 1_781_092_800_007] {
            assert_eq!(parse_iso(&format_iso(ms)), Some(ms));
        }
        // The ends of JavaScript's Date range, in its expanded year form.
        assert_eq!(
            format_iso(8_640_000_000_000_000),
            "+275760-09-13T00:00:00.000Z"
        );
        assert_eq!(
            format_iso(-8_640_000_000_000_000),
            "-271821-04-20T00:00:00.000Z"
        );
        assert_eq!(
            format_iso(-62_198_755_200_000),
            "-000001-01-01T00:00:00.000Z"
        );
        assert_eq!(
            format_iso(253_402_300_800_000),
            "+010000-01-01T00:00:00.000Z"
        );
        for ms in [
            8_640_000_000_000_000,
            -8_640_000_000_000_000,
            -62_198_755_200_000,
            253_402_300_800_000,
            -1_000_000_000_000_000,
        ] {
            assert_eq!(parse_iso(&format_iso(ms)), Some(ms), "{}", format_iso(ms));
        }
        assert_eq!(parse_iso("-000000-01-01T00:00:00.000Z"), None);
        assert_eq!(parse_iso("+27576-09-13T00:00:00.000Z"), None);
    }
}
