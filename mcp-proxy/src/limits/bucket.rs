//! [`TokenBucket`]: one bucket, by GCRA, in integer nanoseconds.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use super::Rate;

/// One token bucket in this process, by GCRA: it keeps one number, the time at which it
/// will be full again (the "theoretical arrival time"); a token is taken when that time,
/// moved on by one token's worth, is at most `burst` tokens' worth ahead of now.
///
/// Pure: every method is told the time, so that tests give it. Exact: times are integer
/// nanoseconds since the bucket was made (u128: no rate or burst overflows them), one
/// token's worth is `1/per_second` rounded up to the nanosecond (never more generous than
/// the rate), and the wait a refusal names is truthful to the nanosecond — a take at
/// `now + retry_after` succeeds, any earlier one does not.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: Rate,
    /// One token's worth, in ns (1 to u64::MAX).
    interval: u128,
    /// What `full` counts from.
    base: Instant,
    /// When the bucket is full again, in ns since `base`; at or before now it is full.
    full: u128,
}

/// One token's worth of `per_second`, in ns, rounded up: at least 1 ns (rates past 10⁹ a
/// second are 10⁹ a second), at most u64::MAX ns (a rate below one in 584 years is one in
/// 584 years; a rate that is not one, which [`Rate`] does not let be made, too).
pub(crate) fn interval_nanos(per_second: f64) -> u128 {
    let ns = (1e9 / per_second).ceil();
    if ns.is_nan() || ns >= u64::MAX as f64 {
        u128::from(u64::MAX)
    } else {
        (ns as u128).max(1)
    }
}

fn duration(ns: u128) -> Duration {
    let secs = u64::try_from(ns / 1_000_000_000).unwrap_or(u64::MAX);
    // The remainder is below 10⁹: it fits.
    Duration::new(secs, (ns % 1_000_000_000) as u32)
}

impl TokenBucket {
    /// A bucket shaped by `rate`, full at `now`.
    pub fn new(rate: Rate, now: Instant) -> TokenBucket {
        TokenBucket {
            rate,
            interval: interval_nanos(rate.per_second),
            base: now,
            full: 0,
        }
    }

    /// Its shape.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Shapes it by `rate` from now on, keeping what was taken: its tokens' worth in time
    /// is kept (a bucket that was to be full in 1 s still is), which is what GCRA keeps.
    pub fn set_rate(&mut self, rate: Rate) {
        if rate != self.rate {
            self.rate = rate;
            self.interval = interval_nanos(rate.per_second);
        }
    }

    fn at(&self, now: Instant) -> u128 {
        now.saturating_duration_since(self.base).as_nanos()
    }

    /// `burst` tokens' worth, in ns (at most 2⁹⁶: no overflow).
    fn span(&self) -> u128 {
        self.interval * u128::from(self.rate.burst.max(1))
    }

    /// Takes one token at `now`, or says how long until one will be there (taking nothing).
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let now = self.at(now);
        let full = self.full.max(now) + self.interval;
        // Taken when the bucket, one token emptier, is at most `burst` tokens from full.
        let allowed_at = full.saturating_sub(self.span());
        if allowed_at > now {
            return Err(duration(allowed_at - now));
        }
        self.full = full;
        Ok(())
    }

    /// Puts back one token taken from it (a call another bucket then refused): the
    /// bucket is as if that take had not been, whatever was taken since.
    pub fn give_back(&mut self) {
        self.full = self.full.saturating_sub(self.interval);
    }

    /// The tokens in it at `now` (whole ones).
    pub fn remaining(&self, now: Instant) -> u32 {
        let now = self.at(now);
        let missing = self.full.saturating_sub(now);
        let left = self.span().saturating_sub(missing) / self.interval;
        u32::try_from(left).unwrap_or(u32::MAX)
    }

    /// How long from `now` until it is full again (zero when it is).
    pub fn full_in(&self, now: Instant) -> Duration {
        duration(self.full.saturating_sub(self.at(now)))
    }

    /// Whether it is full at `now`: forgetting it then changes nothing.
    pub fn is_full(&self, now: Instant) -> bool {
        self.full <= self.at(now)
    }
}

/// Makes room in `buckets` for one more, within `capacity`: when it is full, forgets the
/// buckets full again (nothing lost), and if that is not enough, those nearest to full (a
/// few tokens forgiven, under a flood of distinct keys, rather than memory without bound),
/// down to 7/8 of it so that the sweep (O(n)) runs once in `capacity / 8` additions.
pub(crate) fn bound<K, S>(buckets: &mut HashMap<K, TokenBucket, S>, capacity: usize, now: Instant)
where
    K: Eq + Hash,
    S: BuildHasher,
{
    if buckets.len() < capacity {
        return;
    }
    buckets.retain(|_, b| !b.is_full(now));
    let target = (capacity - capacity / 8).min(capacity.saturating_sub(1));
    if buckets.len() <= target {
        return;
    }
    let mut full_in: Vec<Duration> = buckets.values().map(|b| b.full_in(now)).collect();
    let cut = buckets.len() - target;
    let (_, nth, _) = full_in.select_nth_unstable(cut - 1);
    let nth = *nth;
    // Ties at the cut may take a few more: still within the bound.
    buckets.retain(|_, b| b.full_in(now) > nth);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_full_bucket_gives_its_burst_then_refuses_and_refills_at_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate::per_second(10.0).burst(3), t0);
        assert_eq!(b.remaining(t0), 3);
        for left in [2, 1, 0] {
            assert_eq!(b.take(t0), Ok(()));
            assert_eq!(b.remaining(t0), left);
        }
        assert_eq!(b.take(t0), Err(ms(100)));
        assert_eq!(b.take(t0 + ms(40)), Err(ms(60)));
        assert_eq!(b.take(t0 + ms(100)), Ok(()));
        assert_eq!(b.take(t0 + ms(100)), Err(ms(100)));
        assert!(!b.is_full(t0 + ms(299)));
        assert_eq!(b.full_in(t0 + ms(100)), ms(300));
        assert!(b.is_full(t0 + ms(400)));
        assert_eq!(b.remaining(t0 + ms(10_000)), 3, "never more than the burst");
    }

    #[test]
    fn hammering_at_10_a_second_for_10_seconds_gets_100_tokens() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate::per_second(10.0).burst(1), t0);
        let mut taken = 0;
        let mut t = Duration::ZERO;
        while t < Duration::from_secs(10) {
            taken += u32::from(b.take(t0 + t).is_ok());
            t += Duration::from_micros(250);
        }
        assert!((99..=101).contains(&taken), "{taken}");
    }

    #[test]
    fn the_wait_a_refusal_names_is_truthful() {
        for (rate, start) in [
            (Rate::per_second(10.0).burst(1), ms(0)),
            (Rate::per_second(3.0).burst(2), ms(7)),
            (Rate::per_second(0.5), ms(1234)),
            (Rate::per_second(1000.0).burst(5), ms(1)),
        ] {
            let t0 = Instant::now();
            let mut b = TokenBucket::new(rate, t0);
            let mut now = t0 + start;
            while b.take(now).is_ok() {}
            let wait = b.take(now).expect_err("empty");
            assert!(wait > Duration::ZERO);
            let mut early = b.clone();
            assert!(early.take(now + wait - ms(1)).is_err(), "{rate:?}");
            assert!(early.take(now + wait - Duration::from_nanos(1)).is_err());
            assert_eq!(b.take(now + wait), Ok(()), "{rate:?}");
            now += wait;
            assert!(b.take(now).is_err());
        }
    }

    #[test]
    fn fractional_rates_refill_a_token_in_more_than_a_second() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate::per_second(0.5), t0);
        assert_eq!(b.take(t0), Ok(()));
        assert_eq!(b.take(t0 + ms(1)), Err(ms(1999)));
        assert_eq!(b.take(t0 + ms(2000)), Ok(()));
        // Thirds: one token's worth rounds up, never more generous than the rate.
        let mut b = TokenBucket::new(Rate::per_second(3.0).burst(1), t0);
        let mut taken = 0;
        for i in 0..=30_000u64 {
            taken += u32::from(b.take(t0 + ms(i)).is_ok());
        }
        assert_eq!(
            taken, 90,
            "0 s to 30 s at 3 a second, 90 tokens and no 91st"
        );
    }

    #[test]
    fn a_huge_burst_is_all_there_at_first() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate::per_second(1.0).burst(1_000_000), t0);
        assert_eq!(b.remaining(t0), 1_000_000);
        for _ in 0..1_000_000 {
            assert!(b.take(t0).is_ok());
        }
        assert_eq!(b.take(t0), Err(Duration::from_secs(1)));
        assert_eq!(b.full_in(t0), Duration::from_secs(1_000_000));
    }

    #[test]
    fn extreme_rates_neither_overflow_nor_panic() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(86_400 * 365 * 100);
        for rate in [
            Rate::per_second(f64::MIN_POSITIVE).burst(u32::MAX),
            Rate::per_second(f64::MIN_POSITIVE).burst(1),
            Rate::per_second(f64::MAX),
            Rate::per_second(1e-12).burst(u32::MAX),
        ] {
            let mut b = TokenBucket::new(rate, t0);
            assert_eq!(b.take(t0), Ok(()), "{rate:?}");
            let _ = b.take(later);
            let _ = (b.remaining(later), b.full_in(t0), b.is_full(later));
        }
        let mut slowest = TokenBucket::new(Rate::per_second(f64::MIN_POSITIVE), t0);
        assert_eq!(slowest.take(t0), Ok(()));
        assert_eq!(slowest.take(t0), Err(Duration::from_nanos(u64::MAX)));
        // Past a billion a second every nanosecond has a token: still a limit.
        let mut fastest = TokenBucket::new(Rate::per_second(f64::MAX).burst(1), t0);
        assert_eq!(fastest.take(t0), Ok(()));
        assert_eq!(fastest.take(t0), Err(Duration::from_nanos(1)));
        // A time before the bucket was made is its first instant.
        assert!(fastest.take(t0 - ms(5)).is_err());
    }

    #[test]
    fn a_token_given_back_is_there_to_take_again() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate::per_second(1.0).burst(2), t0);
        assert!(b.take(t0).is_ok() && b.take(t0).is_ok());
        assert!(b.take(t0).is_err());
        b.give_back();
        assert_eq!(b.remaining(t0), 1);
        assert!(b.take(t0).is_ok());
        assert!(b.take(t0).is_err());
        // Given back to a full bucket: still full, never more than its burst.
        let t9 = t0 + ms(9_000);
        b.give_back();
        assert!(b.is_full(t9));
        assert_eq!(b.remaining(t9), 2);
    }

    #[test]
    fn a_new_rate_keeps_what_was_taken() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(Rate::per_second(1.0).burst(2), t0);
        assert!(b.take(t0).is_ok() && b.take(t0).is_ok());
        b.set_rate(Rate::per_second(10.0).burst(20));
        // 2 s of debt at the old rate is 20 tokens' worth at the new one: empty still.
        assert_eq!(b.take(t0), Err(ms(100)));
        assert_eq!(b.rate(), Rate::per_second(10.0).burst(20));
    }

    #[test]
    fn bound_forgets_full_buckets_first_then_the_nearest_to_full() {
        let t0 = Instant::now();
        let rate = Rate::per_second(1.0).burst(1);
        let mut map: HashMap<u32, TokenBucket> = HashMap::new();
        for k in 0..100u32 {
            let mut b = TokenBucket::new(rate, t0);
            if k % 2 == 0 {
                assert!(b.take(t0 + ms(u64::from(k))).is_ok());
            }
            map.insert(k, b);
        }
        bound(&mut map, 200, t0);
        assert_eq!(map.len(), 100, "below capacity: untouched");
        bound(&mut map, 100, t0);
        assert_eq!(map.len(), 50, "the full ones are gone");
        assert!(map.keys().all(|k| k % 2 == 0));
        bound(&mut map, 40, t0);
        assert_eq!(map.len(), 35, "down to 7/8 of capacity");
        assert!(
            map.keys().all(|k| *k >= 30),
            "the nearest to full went: {:?}",
            map.keys().min()
        );
        let mut one: HashMap<u32, TokenBucket> = HashMap::new();
        let mut b = TokenBucket::new(rate, t0);
        assert!(b.take(t0).is_ok());
        one.insert(0, b);
        bound(&mut one, 1, t0);
        assert!(one.is_empty(), "room for one more");
    }
}
