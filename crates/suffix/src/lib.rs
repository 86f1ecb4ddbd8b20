//! Whether a host name ends in a known public suffix, for value provenance
//! (`skeleton_crew::rules::tokens`): a bare host counts as a value only when it does.
//!
//! A crate of its own so that psl's generic lookup is compiled here, once, and not inside
//! skeleton-crew (see Cargo.toml).

/// Whether `host` (lower-case bytes) ends in a suffix of the public suffix list, with a label
/// before it: `example.com` does, `com`, `example.invalid` and `localhost` do not.
pub fn has_public_suffix(host: &[u8]) -> bool {
    psl::domain(host).is_some_and(|domain| domain.suffix().is_known())
}

#[cfg(test)]
mod tests {
    use super::has_public_suffix;

    #[test]
    fn a_known_suffix_needs_a_label_before_it() {
        for host in [
            "example.com",
            "docs.vendor.io",
            "bbc.co.uk",
            "a.b.example.org",
        ] {
            assert!(has_public_suffix(host.as_bytes()), "{host}");
        }
        for host in ["com", "co.uk", "example.invalid", "localhost", "", "."] {
            assert!(!has_public_suffix(host.as_bytes()), "{host}");
        }
    }
}
