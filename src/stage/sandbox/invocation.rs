//! How a door runs something confined: it starts the sc-sandbox binary with its own policy,
//! root, home, audit log and session, and the program after `--`. A process of its own keeps
//! the door simple (no namespaces, signals or threads of sc-sandbox's in the door's process), and
//! exit status 125 tells the door the sandbox could not be made and the program did not run.
//!
//! - sc-exec and sc-mcp: [`Invocation::command`] gives a [`Command`] to spawn as they would the
//!   program itself.
//! - sc-hook: [`Invocation::shell_command`] gives the text of `updatedInput.command`: a shell
//!   command that runs the original one, byte for byte, under sc-sandbox with `bash -c`.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::Command;

/// The sc-sandbox command line of a door.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// The sc-sandbox binary ([`Invocation::beside_current_exe`]).
    pub exe: PathBuf,
    pub policy: Option<PathBuf>,
    pub root: Option<PathBuf>,
    pub home: Option<PathBuf>,
    pub audit: Option<PathBuf>,
    pub audit_key: Option<PathBuf>,
    /// `--state`, as the door was given it.
    pub state: Option<String>,
    /// More of the gate's own files or folders to keep read-only (sc-hook's session folder).
    pub protect: Vec<PathBuf>,
    pub agent: Option<String>,
    pub crew: Option<String>,
    pub session: Option<String>,
    /// The audit events' id (the door's call id).
    pub id: Option<String>,
}

impl Invocation {
    /// `sc-sandbox` beside the running binary (the binaries are installed together).
    pub fn beside_current_exe() -> std::io::Result<PathBuf> {
        let exe = std::env::current_exe()?;
        Ok(exe.with_file_name("sc-sandbox"))
    }

    /// The whole command line: the binary, its flags, `--`, the program and its arguments.
    pub fn argv(&self, program: &OsStr, args: &[OsString]) -> Vec<OsString> {
        let mut argv = vec![self.exe.clone().into_os_string()];
        let mut flag = |name: &str, value: Option<OsString>| {
            if let Some(value) = value {
                argv.push(name.into());
                argv.push(value);
            }
        };
        let path = |p: &Option<PathBuf>| p.clone().map(PathBuf::into_os_string);
        let text = |t: &Option<String>| t.clone().map(OsString::from);
        flag("--policy", path(&self.policy));
        flag("--root", path(&self.root));
        flag("--home", path(&self.home));
        flag("--audit", path(&self.audit));
        flag("--audit-key", path(&self.audit_key));
        flag("--state", text(&self.state));
        for protected in &self.protect {
            flag("--protect", Some(protected.clone().into_os_string()));
        }
        flag("--agent", text(&self.agent));
        flag("--crew", text(&self.crew));
        flag("--session", text(&self.session));
        flag("--id", text(&self.id));
        argv.push("--".into());
        argv.push(program.to_owned());
        argv.extend(args.iter().cloned());
        argv
    }

    /// A [`Command`] that runs `program` confined.
    pub fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        let argv = self.argv(program, args);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        command
    }

    /// A shell command that runs `script` with `bash -c` under sc-sandbox. Every word is quoted
    /// in single quotes, which keep every byte as it is (newlines, `$`, `\`, quotes of the other
    /// kind); a single quote inside is written `'\''`.
    pub fn shell_command(&self, script: &str) -> String {
        let argv = self.argv(OsStr::new("bash"), &["-c".into(), script.into()]);
        argv.iter()
            .map(|word| single_quoted(word))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `word` in single quotes for a POSIX shell.
pub fn single_quoted(word: &OsStr) -> String {
    let text = String::from_utf8_lossy(word.as_bytes());
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_command_keeps_the_script_byte_for_byte() {
        let invocation = Invocation {
            exe: "/opt/sc/sc-sandbox".into(),
            policy: Some("/p/it's.json".into()),
            session: Some("s-1".into()),
            ..Invocation::default()
        };
        let script = "echo 'a' \"$HOME\" $'\\n' \\\ncat <<EOF\nx\nEOF\n";
        let line = invocation.shell_command(script);
        assert!(line.starts_with("'/opt/sc/sc-sandbox' '--policy' '/p/it'\\''s.json' '--session' 's-1' '--' 'bash' '-c' '"), "{line}");
        // The shell reads the words back exactly.
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .output()
            .unwrap();
        let words: Vec<&[u8]> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .collect();
        assert_eq!(words.last().unwrap(), &script.as_bytes());
        assert_eq!(words[2], b"/p/it's.json");
    }
}
