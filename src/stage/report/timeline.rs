//! Decisions per time bucket, for the HTML report's timeline, in memory bounded by the number of
//! bars drawn, not by the log: while counting, buckets are widened (minute, hour, day, then 2, 4,
//! 8… days) as soon as there are more than [`MAX_BARS`] of them.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::DecisionCounts;
use crate::verdict::Decision;

/// At most this many bars. The bucket is the narrowest of minute, hour, day (then 2, 4, 8… days)
/// with which the calls' span fits in that many.
pub(crate) const MAX_BARS: u64 = 240;

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// Decisions counted by the time of their gate event, and the span of every event counted.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Seconds in a bucket so far.
    width: u64,
    /// Decisions by bucket (seconds since the epoch divided by `width`).
    buckets: BTreeMap<u64, DecisionCounts>,
    /// Calls whose gate event has no valid `ts` (not in any bucket).
    pub untimed: u64,
    /// The first and the last time of the events counted (seconds since the epoch).
    pub span: Option<(u64, u64)>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            width: MINUTE,
            buckets: BTreeMap::new(),
            untimed: 0,
            span: None,
        }
    }
}

/// The bars to draw: one bucket after another from `start`, empty ones too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bars {
    /// Seconds in a bucket: a minute, an hour, a day or a power of two of days.
    pub width: u64,
    /// The start of the first bucket (seconds since the epoch).
    pub start: u64,
    pub counts: Vec<DecisionCounts>,
}

impl Bars {
    /// The bucket's size in words: `minute`, `hour`, `day` or `4 days`.
    pub(crate) fn unit(&self) -> String {
        match self.width {
            MINUTE => "minute".into(),
            HOUR => "hour".into(),
            DAY => "day".into(),
            width => format!("{} days", width / DAY),
        }
    }

    /// The start of bar `n`.
    pub(crate) fn time_of(&self, n: usize) -> SystemTime {
        at(self.start + n as u64 * self.width)
    }
}

/// Seconds since the epoch as a time.
pub fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

fn wider(width: u64) -> u64 {
    match width {
        MINUTE => HOUR,
        HOUR => DAY,
        width => width * 2,
    }
}

impl Timeline {
    /// Notes the time of a counted event (seconds since the epoch), for the span.
    pub(super) fn saw(&mut self, time: u64) {
        self.span = Some(match self.span {
            None => (time, time),
            Some((first, last)) => (first.min(time), last.max(time)),
        });
    }

    /// Counts a call's decision at the time of its gate event.
    pub(super) fn add(&mut self, time: Option<u64>, decision: Decision) {
        let Some(time) = time else {
            self.untimed += 1;
            return;
        };
        let counts = self.buckets.entry(time / self.width).or_default();
        match decision {
            Decision::Allow => counts.allow += 1,
            Decision::Hold => counts.hold += 1,
            Decision::Deny => counts.deny += 1,
        }
        // More buckets than bars: the bars will be at least this much wider, so are the buckets.
        while self.buckets.len() as u64 > MAX_BARS {
            self.widen(wider(self.width));
        }
    }

    fn widen(&mut self, width: u64) {
        let factor = width / self.width;
        let mut buckets = BTreeMap::new();
        for (key, counts) in std::mem::take(&mut self.buckets) {
            let into: &mut DecisionCounts = buckets.entry(key / factor).or_default();
            into.allow += counts.allow;
            into.hold += counts.hold;
            into.deny += counts.deny;
        }
        self.buckets = buckets;
        self.width = width;
    }

    /// The bars: the narrowest bucket with which the calls' span fits in [`MAX_BARS`]; `None`
    /// when no call has a time.
    pub fn bars(&self) -> Option<Bars> {
        let first = *self.buckets.keys().next()? * self.width;
        let last = *self.buckets.keys().next_back()? * self.width;
        let mut width = self.width;
        while last / width - first / width + 1 > MAX_BARS {
            width = wider(width);
        }
        let mut widened = self.clone();
        if width != self.width {
            widened.widen(width);
        }
        let start_key = first / width;
        let mut counts = vec![DecisionCounts::default(); (last / width - start_key + 1) as usize];
        for (key, bucket) in widened.buckets {
            counts[(key - start_key) as usize] = bucket;
        }
        Some(Bars {
            width,
            start: start_key * width,
            counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(bars: &Bars) -> u64 {
        bars.counts.iter().map(|c| c.allow + c.hold + c.deny).sum()
    }

    #[test]
    fn the_bucket_follows_the_span() {
        let base = 1_795_000_000 / DAY * DAY;
        for (span, unit, bars) in [
            (59, "minute", 1),
            (3 * HOUR, "minute", 181),
            (5 * HOUR, "hour", 6),
            (9 * DAY, "hour", 217),
            (30 * DAY, "day", 31),
            (3 * 365 * DAY, "8 days", 138),
        ] {
            let mut timeline = Timeline::default();
            timeline.add(Some(base), Decision::Allow);
            timeline.add(Some(base + span), Decision::Deny);
            timeline.add(None, Decision::Hold);
            let shown = timeline.bars().unwrap();
            assert_eq!((shown.unit().as_str(), shown.counts.len()), (unit, bars));
            assert_eq!(total(&shown), 2);
            assert_eq!(shown.counts[0].allow, 1);
            assert_eq!(shown.counts[bars - 1].deny, 1);
            assert_eq!(timeline.untimed, 1);
        }
    }

    #[test]
    fn memory_stays_within_the_bars_however_many_times_there_are() {
        let mut timeline = Timeline::default();
        // A call a minute for a year, then calls at wild times.
        for n in 0..365 * 24 * 60 {
            timeline.add(Some(1_700_000_000 + n * MINUTE), Decision::Hold);
            assert!(timeline.buckets.len() as u64 <= MAX_BARS);
        }
        timeline.add(Some(0), Decision::Allow);
        timeline.add(Some(253_402_300_799), Decision::Allow);
        assert!(timeline.buckets.len() as u64 <= MAX_BARS);
        let bars = timeline.bars().unwrap();
        assert!(
            bars.counts.len() as u64 <= MAX_BARS,
            "{}",
            bars.counts.len()
        );
        assert_eq!(total(&bars), 365 * 24 * 60 + 2);
        assert_eq!(bars.start, 0);
        assert!(Timeline::default().bars().is_none());
    }
}
