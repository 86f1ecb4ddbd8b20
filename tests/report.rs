//! report tests (to be written).
