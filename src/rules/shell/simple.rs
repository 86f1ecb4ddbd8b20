//! One simple command, normalized: the program's basename, wrappers stripped with their
//! options, `sh -c` parsed again, `find -exec` split, `tee` and `time -o` writing files.

use brush_parser::ast;

use super::options::{
    parse_options, OptionSpec, COMMAND, DOAS, ENV, EXEC, NICE, NO_OPTIONS, STDBUF, SUDO, TEE, TIME,
    TIMEOUT, XARGS,
};
use super::text::is_assignment;
use super::words::{join, Word};
use super::{Caveat, SimpleCommand, Walker, MAX_SIMPLE_COMMANDS};

/// The shells whose `-c STRING` is parsed again.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"];

/// Directories whose programs the agent cannot have written.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

impl Walker {
    pub(super) fn simple(&mut self, simple: &ast::SimpleCommand, depth: usize) {
        let mut words = Vec::new();
        let mut assigns = false;
        let mut redirects = Vec::new();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                    assigns = true;
                    self.word(&word.value, depth);
                }
                ast::CommandPrefixOrSuffixItem::Word(word) => {
                    words.push(self.word(&word.value, depth))
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => redirects.push(redirect),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.process_substitution(subshell, depth)
                }
            }
        }
        if let Some(name) = &simple.word_or_name {
            words.push(self.word(&name.value, depth));
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            match item {
                ast::CommandPrefixOrSuffixItem::Word(word)
                | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                    words.push(self.word(&word.value, depth))
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => redirects.push(redirect),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.process_substitution(subshell, depth)
                }
            }
        }
        let mut here_input = false;
        if !redirects.is_empty() {
            let by = if words.is_empty() {
                "a command of assignments and redirections".to_owned()
            } else {
                join(&words)
            };
            for redirect in redirects {
                here_input |= self.redirect(redirect, &by, depth);
            }
        }
        let caveats = if assigns {
            vec![Caveat::SetsEnvironment]
        } else {
            vec![]
        };
        self.normalize(words, caveats, here_input, depth);
    }

    /// Pushes one simple command, with what its arguments hide.
    fn push(&mut self, words: &[Word], mut caveats: Vec<Caveat>) {
        if self.too_many {
            return;
        }
        if self.out.commands.len() == MAX_SIMPLE_COMMANDS {
            self.too_many = true;
            self.dynamic(
                join(words),
                format!("the command runs more than {MAX_SIMPLE_COMMANDS} simple commands"),
            );
            return;
        }
        for word in words.iter().skip(1) {
            if word.expanded || word.brace {
                caveats.push(Caveat::ExpandedArgument(word.text.clone()));
                break;
            }
        }
        for caveat in &self.inherited {
            if !caveats.contains(caveat) {
                caveats.push(caveat.clone());
            }
        }
        self.out.commands.push(SimpleCommand {
            words: words.iter().map(|w| w.text.clone()).collect(),
            globbed: words.iter().map(|w| w.glob).collect(),
            caveats,
        });
    }

    /// Normalizes a simple command: program basename, wrappers, shells, `find`, `xargs`, `tee`.
    pub(super) fn normalize(
        &mut self,
        mut words: Vec<Word>,
        mut caveats: Vec<Caveat>,
        here_input: bool,
        depth: usize,
    ) {
        loop {
            let Some(program) = words.first() else {
                // Only assignments (or only redirections): no program runs.
                self.push(&[], caveats);
                return;
            };
            if !program.is_fixed() {
                self.dynamic(
                    join(&words),
                    "an expansion or a glob in the program's position",
                );
                return;
            }
            let path = program.text.clone();
            let name = basename(&path).to_owned();
            if path.contains('/') && !SYSTEM_DIRS.contains(&dirname(&path)) {
                let caveat = Caveat::ProgramByPath(path.clone());
                if !caveats.contains(&caveat) {
                    caveats.push(caveat);
                }
            }
            words[0].text = name.clone();
            let wrapper = match name.as_str() {
                "eval" => {
                    self.dynamic(join(&words), "eval runs its arguments as a command");
                    if words[1..].iter().all(Word::is_fixed) && self.nest(depth, &path) {
                        let text = words[1..]
                            .iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ");
                        self.parse_and_walk(&text, depth + 1);
                    }
                    return;
                }
                "trap" => {
                    // `trap 'cmd' SIGNAL` runs cmd later: judged like eval's argument.
                    self.dynamic(
                        join(&words),
                        "trap runs its first argument as a command later",
                    );
                    if let Some(action) = words
                        .get(1)
                        .filter(|w| w.is_fixed() && !w.text.starts_with('-'))
                    {
                        if self.nest(depth, &path) {
                            let action = action.text.clone();
                            self.parse_and_walk(&action, depth + 1);
                        }
                    }
                    return;
                }
                "source" | "." => {
                    self.dynamic(join(&words), format!("{name} runs the commands of a file"));
                    return;
                }
                "let" => {
                    self.dynamic(join(&words), "let evaluates arithmetic on variables");
                    return;
                }
                "env" => Some(&ENV),
                "command" => Some(&COMMAND),
                "builtin" | "nohup" => Some(&NO_OPTIONS),
                "exec" => Some(&EXEC),
                "nice" => Some(&NICE),
                "time" => Some(&TIME),
                "stdbuf" => Some(&STDBUF),
                "timeout" => Some(&TIMEOUT),
                "sudo" => Some(&SUDO),
                "doas" => Some(&DOAS),
                "xargs" => Some(&XARGS),
                _ => None,
            };
            if let Some(spec) = wrapper {
                match self.strip(&name, &words, spec, &mut caveats) {
                    Stripped::Rest(start) if start < words.len() => {
                        words.drain(..start);
                        continue;
                    }
                    Stripped::Rest(_) if name == "xargs" => {
                        // xargs with no program runs echo.
                        words = vec![Word::literal("echo")];
                        continue;
                    }
                    Stripped::Rest(_) | Stripped::NotAWrapper => {}
                    Stripped::Dynamic(why) => {
                        self.dynamic(join(&words), why);
                        return;
                    }
                }
            }
            if here_input && SHELLS.contains(&name.as_str()) {
                self.dynamic(
                    join(&words),
                    "a here-document or here-string fed to a shell",
                );
                return;
            }
            match name.as_str() {
                shell if SHELLS.contains(&shell) => return self.shell(&words, caveats, depth),
                "find" => return self.find(&words, caveats, depth),
                "tee" => self.tee(&words),
                "cd" | "pushd" | "popd" => self.out.changes_directory = true,
                "make" | "gmake" | "bmake" => {
                    // Make reads a word with `=` as a variable, wherever it stands (before
                    // `--` too: GNU make reads `--` as the end of its options only).
                    if let Some(word) = words[1..]
                        .iter()
                        .find(|w| !w.text.starts_with('-') && w.text.contains('='))
                    {
                        caveats.push(Caveat::OverridesVariable(word.text.clone()));
                    }
                }
                _ => {}
            }
            self.push(&words, caveats);
            return;
        }
    }

    /// Strips one wrapper's options (and `env`'s and `sudo`'s assignments, and `timeout`'s
    /// duration); the index of its program.
    fn strip(
        &mut self,
        name: &str,
        words: &[Word],
        spec: &OptionSpec,
        caveats: &mut Vec<Caveat>,
    ) -> Stripped {
        let options = match parse_options(&words[1..], spec, name == "env") {
            Ok(options) => options,
            Err(why) => return Stripped::Dynamic(why.to_string()),
        };
        let mut next = options.next + 1;
        match name {
            "env" => {
                if options.has("S") || options.has("split-string") {
                    return Stripped::Dynamic(
                        "env -S splits a string into a command by its own rules".to_owned(),
                    );
                }
                if options.has("C") || options.has("chdir") {
                    self.out.changes_directory = true;
                }
            }
            "command" if options.has("v") || options.has("V") => return Stripped::NotAWrapper,
            "sudo" => {
                if [
                    "e",
                    "l",
                    "v",
                    "V",
                    "K",
                    "edit",
                    "list",
                    "validate",
                    "version",
                    "help",
                    "remove-timestamp",
                ]
                .iter()
                .any(|o| options.has(o))
                {
                    return Stripped::NotAWrapper;
                }
                if options.has("D") || options.has("chdir") {
                    self.out.changes_directory = true;
                }
                caveats.push(Caveat::RunsAsAnotherUser(name.to_owned()));
            }
            "time" => {
                let files: Vec<&str> = options.values(&["o", "output"]).collect();
                let by = if files.is_empty() {
                    String::new()
                } else {
                    join(words)
                };
                for file in files {
                    // The value keeps what the shell does to the word it came from: a glob or
                    // an expansion there (`time -o .claud?/settings.json`) names a file the
                    // text does not fix. A value from no word is treated as such.
                    let source = words
                        .iter()
                        .find(|word| word.text.as_bytes().as_ptr_range().contains(&file.as_ptr()));
                    let word = match source {
                        Some(source) => Word {
                            text: file.to_owned(),
                            ..source.clone()
                        },
                        None => Word {
                            text: file.to_owned(),
                            expanded: true,
                            ..Word::default()
                        },
                    };
                    self.write(&word, &by, &format!("-o {file}"));
                }
            }
            "timeout" => {
                // The duration.
                match words.get(next) {
                    Some(duration) if duration.is_fixed() => next += 1,
                    Some(_) => {
                        return Stripped::Dynamic(
                            "an expansion where timeout's duration is".to_owned(),
                        )
                    }
                    None => return Stripped::NotAWrapper,
                }
            }
            "xargs" => caveats.push(Caveat::ArgumentsFromInput),
            "doas" => caveats.push(Caveat::RunsAsAnotherUser(name.to_owned())),
            _ => {}
        }
        if matches!(name, "env" | "sudo") {
            while let Some(word) = words.get(next) {
                if !is_assignment(&word.text) {
                    break;
                }
                if !word.is_fixed() && !word.tilde {
                    return Stripped::Dynamic(format!(
                        "an expansion where {name} expects an assignment or its program"
                    ));
                }
                if !caveats.contains(&Caveat::SetsEnvironment) {
                    caveats.push(Caveat::SetsEnvironment);
                }
                next += 1;
            }
        }
        Stripped::Rest(next)
    }

    /// `sh -c S` and friends: the simple commands of `S`, parsed again. A shell that reads its
    /// commands from its input is dynamic; one that runs a script file is judged by its name.
    fn shell(&mut self, words: &[Word], caveats: Vec<Caveat>, depth: usize) {
        let mut command = false;
        let mut stdin = false;
        // `--rcfile F`, `--init-file F`: the shell runs F first (interactive, `-i`).
        let mut startup: Vec<Word> = Vec::new();
        let mut i = 1;
        while let Some(word) = words.get(i) {
            if !word.is_fixed() {
                if command && !word.text.starts_with('-') {
                    break;
                }
                self.dynamic(join(words), "an expansion among the shell's options");
                return;
            }
            let text = word.text.as_str();
            if text == "--" || text == "-" {
                i += 1;
                break;
            }
            if let Some(long) = text.strip_prefix("--") {
                if matches!(long, "rcfile" | "init-file") {
                    startup.extend(words.get(i + 1).cloned());
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            if (text.starts_with('-') || text.starts_with('+')) && text.len() > 1 {
                let mut values = 0;
                for c in text[1..].chars() {
                    match c {
                        'c' if text.starts_with('-') => command = true,
                        's' => stdin = true,
                        'o' | 'O' => values += 1,
                        _ => {}
                    }
                }
                i += 1 + values;
                continue;
            }
            break;
        }
        for file in startup {
            // Judged as a run of that file by the shell: `bash F`.
            self.push(&[words[0].clone(), file], caveats.clone());
        }
        if command {
            match words.get(i) {
                // GNU find puts each path it finds into the script's text too: a file named
                // `x;sh ev` would run as code (`find . -exec bash -c 'cat {}' \;`).
                Some(script)
                    if script.text.contains("{}") && caveats.contains(&Caveat::FoundPaths) =>
                {
                    self.dynamic(
                        join(words),
                        "find puts the paths it finds into the shell's script, where a file's name runs as code",
                    )
                }
                Some(script) if script.is_fixed() => {
                    if self.nest(depth, &script.text) {
                        let outer = self.inherited.clone();
                        for caveat in caveats {
                            if !self.inherited.contains(&caveat) {
                                self.inherited.push(caveat);
                            }
                        }
                        let before = self.out.other_shells.len();
                        self.parse_and_walk(&script.text.clone(), depth + 1);
                        self.inherited = outer;
                        // A POSIX shell reads bash's own syntax otherwise: what bash's reading
                        // shows is not what it runs (`sh -c "echo \$'\\' ; echo x >> f ; #'"`
                        // writes `f` under dash, where bash reads one `echo`: a review).
                        if matches!(words[0].text.as_str(), "sh" | "dash" | "ash") {
                            let parts = self.out.other_shells[before..].to_vec();
                            for part in parts {
                                self.dynamic(
                                    part.what,
                                    format!("{} ({} may be one)", part.why, words[0].text),
                                );
                            }
                        }
                    }
                }
                Some(_) => self.dynamic(join(words), "the shell's command is an expansion"),
                None => self.push(words, caveats),
            }
        } else if stdin || i >= words.len() {
            self.dynamic(join(words), "a shell reading its commands from its input");
        } else {
            self.push(words, caveats);
        }
    }

    /// `find`: each `-exec`/`-execdir`/`-ok`/`-okdir PROG … ;` is a simple command of its own;
    /// `-fprint FILE` and friends write files; `find` keeps its own words, `-delete` included.
    fn find(&mut self, words: &[Word], caveats: Vec<Caveat>, depth: usize) {
        let mut own = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let text = words[i].text.as_str();
            if matches!(text, "-exec" | "-execdir" | "-ok" | "-okdir") {
                // `-execdir` runs its program in each found file's folder: its relative paths
                // are not the call's.
                self.out.changes_directory |= matches!(text, "-execdir" | "-okdir");
                own.push(words[i].clone());
                let start = i + 1;
                let mut end = start;
                while end < words.len()
                    && words[end].text != ";"
                    && !(words[end].text == "+" && end > start && words[end - 1].text == "{}")
                {
                    end += 1;
                }
                if end > start && self.nest(depth, &join(&words[start..end])) {
                    let mut caveats = caveats.clone();
                    if words[start..end]
                        .iter()
                        .any(|word| word.text.contains("{}"))
                    {
                        caveats.push(Caveat::FoundPaths);
                    }
                    self.normalize(words[start..end].to_vec(), caveats, false, depth + 1);
                }
                if let Some(terminator) = words.get(end) {
                    own.push(terminator.clone());
                }
                i = end + 1;
                continue;
            }
            if matches!(text, "-fprint" | "-fprint0" | "-fprintf" | "-fls") {
                if let Some(file) = words.get(i + 1) {
                    let by = join(words);
                    let file = file.clone();
                    self.write(&file, &by, &format!("{text} {}", file.text));
                }
            }
            own.push(words[i].clone());
            i += 1;
        }
        self.push(&own, caveats);
    }

    /// `tee FILE…` writes its files.
    fn tee(&mut self, words: &[Word]) {
        let by = join(words);
        let files = match parse_options(&words[1..], &TEE, false) {
            Ok(options) => &words[1 + options.next..],
            Err(_) => &words[1..],
        };
        for file in files {
            if file.text != "-" || !file.is_fixed() {
                self.write(file, &by, &file.text);
            }
        }
    }
}

enum Stripped {
    /// The program starts at this index (past the end: the wrapper runs nothing).
    Rest(usize),
    /// The wrapper does something else (`command -v`, `sudo -l`): judged by its own name.
    NotAWrapper,
    Dynamic(String),
}

fn basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(at) => &trimmed[at + 1..],
        None if trimmed.is_empty() => path,
        None => trimmed,
    }
}

fn dirname(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(at) => &path[..at],
        None => "",
    }
}

#[cfg(test)]
#[path = "simple_tests.rs"]
mod tests;
