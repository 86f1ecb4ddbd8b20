//! sc-gate as a process.
