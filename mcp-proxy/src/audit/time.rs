//! Times as records write them: RFC 3339 in UTC with milliseconds, from the civil date
//! of a day count, with no time-zone database and, for four-digit years, no allocation.

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as RFC 3339 UTC with milliseconds: `2026-12-06T02:40:00.123Z`.
pub(crate) fn rfc3339_millis(time: SystemTime) -> String {
    match rfc3339_parts(time) {
        Ok(text) => String::from_utf8_lossy(&text).into_owned(),
        Err(odd) => odd,
    }
}

/// [`rfc3339_millis`] as a JSON string.
pub(crate) fn write_rfc3339_millis(out: &mut Vec<u8>, time: SystemTime) {
    out.push(b'"');
    match rfc3339_parts(time) {
        Ok(text) => out.extend_from_slice(&text),
        Err(odd) => out.extend_from_slice(odd.as_bytes()),
    }
    out.push(b'"');
}

/// The text of [`rfc3339_millis`] without allocating for a four-digit year (every real
/// clock's; this is written for every record), else formatted.
fn rfc3339_parts(time: SystemTime) -> Result<[u8; 24], String> {
    let millis: i64 = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        // Before 1970 (a clock set wrong): floor, so -1 ms is 23:59:59.999 the day before.
        Err(before) => {
            let d = before.duration();
            let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
            let partial = i64::from(d.subsec_nanos() % 1_000_000 != 0);
            -(ms.saturating_add(partial))
        }
    };
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (Ok(year @ 0..=9999), Ok(in_day)) = (u32::try_from(year), u32::try_from(in_day)) else {
        return Err(format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            in_day / 3_600_000,
            in_day / 60_000 % 60,
            in_day / 1000 % 60,
            in_day % 1000
        ));
    };
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: u32| {
        for k in (at..at + width).rev() {
            text[k] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, in_day / 3_600_000);
    put(14, 2, in_day / 60_000 % 60);
    put(17, 2, in_day / 1000 % 60);
    put(20, 3, in_day % 1000);
    Ok(text)
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`): eras of 400 years, years starting in March so the leap day is last.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // Both are in range by construction (1..=31, 1..=12).
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis)
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_millis(at(951_782_400, 0)),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339_millis(at(951_868_799, 999)),
            "2000-02-29T23:59:59.999Z"
        );
        assert_eq!(
            rfc3339_millis(at(951_868_800, 0)),
            "2000-03-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339_millis(at(1_709_210_096, 789)),
            "2024-02-29T12:34:56.789Z"
        );
        assert_eq!(
            rfc3339_millis(at(1_796_524_800, 123)),
            "2026-12-06T02:40:00.123Z"
        );
        assert_eq!(
            rfc3339_millis(at(4_107_542_400, 0)),
            "2100-03-01T00:00:00.000Z"
        );
        assert_eq!(
            rfc3339_millis(at(1_735_689_599, 0)),
            "2024-12-31T23:59:59.000Z"
        );
        let before = UNIX_EPOCH - Duration::from_millis(1);
        assert_eq!(rfc3339_millis(before), "1969-12-31T23:59:59.999Z");
        let sub_milli = UNIX_EPOCH + Duration::from_micros(1_999);
        assert_eq!(rfc3339_millis(sub_milli), "1970-01-01T00:00:00.001Z");
    }

    #[test]
    fn civil_from_days_matches_known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
    }
}
