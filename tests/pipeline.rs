//! pipeline tests (to be written).
