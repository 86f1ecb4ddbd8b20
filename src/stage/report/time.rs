//! Times as a report writes them (RFC 3339, UTC).

/// A time as RFC 3339 with fractions, or, past what RFC 3339 can write (year 9999), its seconds
/// since the Unix epoch: a log's times are written by whoever wrote the log, and a report never
/// panics on one.
pub(crate) fn rfc3339(time: std::time::SystemTime) -> String {
    formatted(time, |t| humantime::format_rfc3339(t).to_string_checked())
}

/// [`rfc3339`] to the second.
pub(crate) fn rfc3339_seconds(time: std::time::SystemTime) -> String {
    formatted(time, |t| {
        humantime::format_rfc3339_seconds(t).to_string_checked()
    })
}

pub(super) fn formatted(
    time: std::time::SystemTime,
    format: impl Fn(std::time::SystemTime) -> Option<String>,
) -> String {
    format(time).unwrap_or_else(|| {
        let seconds = time
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        format!("{seconds} s after 1970-01-01T00:00:00Z")
    })
}

/// `to_string` that says `None` where a `Display` fails, instead of panicking.
pub(super) trait ToStringChecked {
    fn to_string_checked(&self) -> Option<String>;
}

impl<T: std::fmt::Display> ToStringChecked for T {
    fn to_string_checked(&self) -> Option<String> {
        use std::fmt::Write;
        let mut text = String::new();
        write!(text, "{self}").ok().map(|()| text)
    }
}
