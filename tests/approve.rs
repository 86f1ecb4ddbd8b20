//! approve tests (to be written).
