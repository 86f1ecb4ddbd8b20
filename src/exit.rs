//! Exit statuses, in one place: 0 done; 1 runtime failure (I/O, audit log); 2 usage or policy
//! error. A closed stdout (`| head -1`) ends a stage quietly with 0.

use crate::error::PolicyError;
use crate::error::UsageError;
use std::io::{self, Write};
use std::process::ExitCode;

pub const SUCCESS: u8 = 0;
pub const RUNTIME_FAILURE: u8 = 1;
pub const USAGE_ERROR: u8 = 2;

/// How a stage ended when nothing stopped it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Inputs that could not be read (each already reported); any makes the status 1.
    pub unreadable_inputs: usize,
    /// Checks that failed (a broken chain, a `--fail-on` match; each already reported); any makes
    /// the status 1.
    pub failed_checks: usize,
}

/// The status for an error: 2 for usage and policy errors, 1 for everything else.
pub(crate) fn status_for(err: &anyhow::Error) -> u8 {
    let usage = err
        .chain()
        .any(|cause| cause.is::<UsageError>() || cause.is::<PolicyError>());
    if usage {
        USAGE_ERROR
    } else {
        RUNTIME_FAILURE
    }
}

/// Whether the error is a write to a closed pipe.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Maps a stage's result to its exit status, printing an error once as `program: message`.
pub fn finish(program: &str, result: anyhow::Result<Completion>) -> ExitCode {
    let status = match result {
        Ok(completion) if completion.unreadable_inputs > 0 || completion.failed_checks > 0 => {
            RUNTIME_FAILURE
        }
        Ok(_) => SUCCESS,
        Err(err) if is_broken_pipe(&err) => SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "{program}: {err:#}");
            status_for(&err)
        }
    };
    ExitCode::from(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn policy_and_usage_errors_are_2_and_the_rest_1() {
        let policy = anyhow::Error::new(PolicyError::new("x".into())).context("loading");
        assert_eq!(status_for(&policy), USAGE_ERROR);
        assert_eq!(
            status_for(&anyhow::Error::new(UsageError("x".into()))),
            USAGE_ERROR
        );
        assert_eq!(
            status_for(&anyhow::anyhow!("disk on fire")),
            RUNTIME_FAILURE
        );
    }

    #[test]
    fn a_broken_pipe_is_found_through_context() {
        let err = Err::<(), _>(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("writing verdicts")
            .unwrap_err();
        assert!(is_broken_pipe(&err));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
    }
}
