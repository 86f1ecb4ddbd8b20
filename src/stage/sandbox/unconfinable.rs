//! Why a confined run cannot be made here (no bubblewrap, one that is not trusted, a kernel that
//! refuses the namespaces, a trial that failed, a key that cannot be placed): the door that
//! wanted it holds, declines or fails the call with this reason, and never runs it unconfined.

/// Why a confined run cannot be made, in words that name the place (the binary, the path, the
/// trial's status and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unconfinable(pub String);

impl From<String> for Unconfinable {
    fn from(reason: String) -> Unconfinable {
        Unconfinable(reason)
    }
}

impl From<&str> for Unconfinable {
    fn from(reason: &str) -> Unconfinable {
        Unconfinable(reason.to_owned())
    }
}

/// The reason's words, for a door that quotes or searches them.
impl std::ops::Deref for Unconfinable {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Unconfinable {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}
