//! exec tests (to be written).
