//! `sc-hook install`, `uninstall` and `doctor`: the hook written into each agent's own
//! configuration file, in its format (JSON or TOML), merged with what is there, and checked.

mod check;
mod codex_trust;
mod doctor;
mod entries;
mod error;
mod file;
mod json;
mod target;
mod toml;

pub use self::check::Check;
pub use self::doctor::{doctor, DoctorRequest};
pub use self::file::{install, uninstall, InstallError, InstallRequest, Outcome};
pub use self::target::{config_file, Scope};
