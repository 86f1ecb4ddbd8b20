//! The seccomp filter every process in the sandbox runs under, compiled with `seccompiler` into
//! the classic BPF program bubblewrap loads from a file descriptor (`--seccomp FD`; bubblewrap
//! sets `no_new_privs` with it).
//!
//! The network namespace already has no route out; the filter narrows what a process can make:
//! - `socket()` of any family but `AF_UNIX`, `AF_INET` and `AF_INET6` fails (netlink, packet,
//!   vsock, bluetooth, … each a way around the namespace or into the kernel); the IP families
//!   stay, to reach the loopback proxy;
//! - `socketpair()` of any family but `AF_UNIX` fails;
//! - io_uring cannot be set up: its operations make sockets without `socket()`.
//!
//! Other architectures' system calls (32-bit x86 on x86_64) are refused by the architecture
//! check `seccompiler` puts first; on x86_64 the x32 numbers of the same calls are refused too.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

/// The socket families a process inside may open.
pub const ALLOWED_FAMILIES: [i32; 3] = [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];

/// The compiled filter, as the bytes bubblewrap reads (each instruction in native byte order).
pub fn program() -> Result<Vec<u8>, SandboxError> {
    let error = |err: seccompiler::BackendError| SandboxError::Seccomp(err.to_string());
    let arch = target_arch()?;
    let family_is_not = |family: i32| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
    };
    let other_socket = SeccompRule::new(
        ALLOWED_FAMILIES
            .iter()
            .map(|family| family_is_not(*family))
            .collect::<Result<_, _>>()
            .map_err(error)?,
    )
    .map_err(error)?;
    let other_pair =
        SeccompRule::new(vec![family_is_not(libc::AF_UNIX).map_err(error)?]).map_err(error)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut refuse = |number: i64, rule: Option<&SeccompRule>| {
        let rule: Vec<SeccompRule> = rule.into_iter().cloned().collect();
        rules.insert(number, rule.clone());
        if arch == TargetArch::x86_64 {
            // The x32 ABI reaches the same calls with this bit set.
            rules.insert(number | 0x4000_0000, rule);
        }
    };
    refuse(libc::SYS_socket, Some(&other_socket));
    refuse(libc::SYS_socketpair, Some(&other_pair));
    refuse(libc::SYS_io_uring_setup, None);
    refuse(libc::SYS_io_uring_enter, None);
    refuse(libc::SYS_io_uring_register, None);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(error)?;
    let program: BpfProgram = filter.try_into().map_err(error)?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in &program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    Ok(bytes)
}

fn target_arch() -> Result<TargetArch, SandboxError> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(TargetArch::aarch64)
    } else if cfg!(target_arch = "riscv64") {
        Ok(TargetArch::riscv64)
    } else {
        Err(SandboxError::Seccomp(
            "no seccomp filter for this architecture".to_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles_to_whole_instructions() {
        let bytes = super::program().unwrap();
        assert!(!bytes.is_empty());
        assert_eq!(bytes.len() % 8, 0);
        assert!(bytes.len() / 8 < 4096, "within the kernel's limit");
    }
}
