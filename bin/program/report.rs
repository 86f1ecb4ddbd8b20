//! `sc-report`: summarises audit logs for people and CI, and verifies their hash chain.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use skeleton_crew::audit::chain::{self, Chain, Link};
use skeleton_crew::audit::verify;
use skeleton_crew::audit::DEFAULT_AUDIT_PATH;
use skeleton_crew::cli::{self, GenerateArgs};
use skeleton_crew::error::UsageError;
use skeleton_crew::exit::{self, Completion};
use skeleton_crew::stage::report::{self, ChainStatus, FailOn, Filter, Summariser};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
    Markdown,
    Html,
}

/// Summarise what the crew did and what it was stopped from doing.
///
/// Reads one or more audit logs and prints counts per decision, holds approved / declined /
/// never answered, the vetoes (a deny or a declined hold) with agent, tool and reasons (text and
/// markdown list the first 1,000 and say how many more; json lists every one), and a per-agent
/// breakdown. Memory stays flat however long the logs are. A torn or malformed log line is
/// reported, not fatal. `--verify` walks each log's hash chain instead (with --format html, as
/// well: the page shows each chain verified or broken).
/// Exit status: 0 done; 1 a log could not be read, a chain is broken, or --fail-on matched;
/// 2 usage error.
#[derive(Parser)]
#[command(name = "sc-report", version)]
struct Args {
    /// Output format: text for people, json for programs, markdown for a CI job summary, html for
    /// one self-contained page (charts included; loads nothing, runs no script).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Write to FILE instead of stdout: whole or not at all (written beside it, then renamed).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Exit 1 when any of these occurred (comma-separated), naming them on stderr.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "KINDS")]
    fail_on: Vec<FailOn>,
    /// Count only calls by this agent.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Count only events at or after TIME (RFC 3339, e.g. 2026-11-30T16:00:00Z, or a date).
    #[arg(long, value_name = "TIME", value_parser = report::parse_time)]
    since: Option<std::time::SystemTime>,
    /// Count only events before TIME.
    #[arg(long, value_name = "TIME", value_parser = report::parse_time)]
    until: Option<std::time::SystemTime>,
    /// Walk each log's hash chain: "N events, chain intact, head H", or where it breaks and how.
    #[arg(long, conflicts_with = "head")]
    verify: bool,
    /// With --verify: the head stored earlier must still be in the chain (catches a cut tail).
    #[arg(long, value_name = "HEAD", requires = "verify", value_parser = parse_link)]
    expect_head: Option<Link>,
    /// Print the current head of each log's chain, to store elsewhere.
    #[arg(long)]
    head: bool,
    /// Add a section on the questions put to a person, per agent and tool: holds, questions
    /// asked through any channel (the answers file included; not the holds a grant settled),
    /// asks per active hour, median and 90th-percentile time to answer, the share answered in
    /// under 2 s, answers by channel, approval rate, and the most repeated held calls and values.
    #[arg(long, conflicts_with_all = ["verify", "head"])]
    questions: bool,
    /// Instead of the summary: for each repeated hold, the narrowest remembered approval (a
    /// `call` or `value` grant with an expiry) that would have removed the repeats, never for a
    /// deny, a budget or a neverRemember tool, each replayed over every hold of the logs, with
    /// the ids of the past calls whose verdict it changes. Text, or --format json. Needs the
    /// gate's policy: --policy FILE.
    #[arg(long, requires = "policy", conflicts_with_all = ["verify", "head", "questions"])]
    suggest: bool,
    /// The gate's policy file, for --suggest (its neverRemember and grantTtl, and the
    /// decision's grant step the suggestions are replayed through).
    #[arg(long, value_name = "FILE", requires = "suggest")]
    policy: Option<PathBuf>,
    /// Key file of a keyed chain (for --verify and --head); also read from SC_AUDIT_KEY_FILE.
    #[arg(long, value_name = "FILE")]
    audit_key: Option<PathBuf>,
    /// Audit logs to read, in order.
    #[arg(value_name = "LOG", default_value = DEFAULT_AUDIT_PATH)]
    logs: Vec<PathBuf>,
    #[command(flatten)]
    generate: GenerateArgs,
}

fn parse_link(text: &str) -> Result<Link, String> {
    Link::parse(text).ok_or_else(|| "a head is 64 hex digits (from sc-report --head)".to_owned())
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(status) = cli::answer_generate::<Args>("sc-report", &args.generate) {
        return status;
    }
    exit::finish("sc-report", run(args))
}

fn open(path: &PathBuf) -> anyhow::Result<File> {
    File::open(path).with_context(|| format!("cannot open the audit log {}", path.display()))
}

/// Where the report goes: stdout, or a file written beside its final name and renamed over it
/// once whole (so a failed report never leaves a partial or an emptied file).
enum Sink {
    Stdout,
    File {
        file: BufWriter<File>,
        temporary: Temporary,
        path: PathBuf,
    },
}

/// The temporary file of a report, removed when dropped unless it was put in place: a report
/// that fails, even by a panic, leaves nothing behind.
struct Temporary(Option<PathBuf>);

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Sink {
    /// The sink for `--output` (stdout without it). A file that is one of the logs read is
    /// refused: the report would replace the evidence it reports on.
    fn open(output: Option<&Path>, logs: &[PathBuf]) -> anyhow::Result<Sink> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let Some(path) = output else {
            return Ok(Sink::Stdout);
        };
        let name = path
            .file_name()
            .with_context(|| format!("--output {} names no file", path.display()))?;
        // The same file, by any name (a symlink to a log is followed).
        if let Ok(target) = std::fs::metadata(path) {
            for log in logs {
                let same = std::fs::metadata(log)
                    .is_ok_and(|log| log.dev() == target.dev() && log.ino() == target.ino());
                if same {
                    anyhow::bail!(
                        "--output {} is the log {} that the report reads: refusing to replace it",
                        path.display(),
                        log.display()
                    );
                }
            }
        }
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(name);
        temporary_name.push(format!(".{}.tmp", std::process::id()));
        let temporary = path.with_file_name(temporary_name);
        // 0600, as the audit logs are: the page carries the vetoed calls' arguments.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .with_context(|| format!("cannot write {}", temporary.display()))?;
        Ok(Sink::File {
            file: BufWriter::with_capacity(64 * 1024, file),
            temporary: Temporary(Some(temporary)),
            path: path.to_owned(),
        })
    }

    /// Writes the report with `write`, then puts the file in place.
    fn write(self, write: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> anyhow::Result<()> {
        match self {
            Sink::Stdout => {
                let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
                write(&mut out)?;
                out.flush()?;
                Ok(())
            }
            Sink::File {
                mut file,
                mut temporary,
                path,
            } => write(&mut file)
                .and_then(|()| file.flush().map_err(Into::into))
                .and_then(|()| {
                    let file = file.into_inner().map_err(|err| err.into_error())?;
                    file.sync_all()?;
                    let written = temporary.0.as_ref().expect("the file is not yet in place");
                    std::fs::rename(written, &path)?;
                    temporary.0 = None;
                    Ok(())
                })
                .with_context(|| format!("cannot write {}", path.display())),
        }
    }
}

fn run(args: Args) -> anyhow::Result<Completion> {
    let format = if args.json { Format::Json } else { args.format };
    if args.head || (args.verify && format != Format::Html) {
        return check_chains(&args, format == Format::Json && !args.head);
    }
    if args.suggest {
        return suggest(&args, format);
    }
    // The page shows each chain: walked first, so that a log that cannot be read stops the
    // report before anything is written.
    let mut chains = Vec::new();
    let mut broken = 0;
    let mut verified = Vec::new();
    if args.verify {
        for (_, result, file) in walk_chains_keeping_files(&args)? {
            verified.push(file);
            chains.push(match result {
                Ok(intact) => ChainStatus::Verified {
                    events: intact.events,
                    head: intact.head.to_string(),
                },
                Err(chain_break) => {
                    broken += 1;
                    ChainStatus::Broken(chain_break.to_string())
                }
            });
        }
    }
    let filter = Filter {
        agent: args.agent.clone(),
        since: args.since,
        until: args.until,
    };
    let mut summariser = Summariser::with_filter(filter);
    if format == Format::Html {
        summariser = summariser.with_page_details();
    }
    if format == Format::Json {
        // The JSON report lists every veto and problem: they wait in a temporary file, not in
        // memory.
        summariser = summariser.keeping_everything()?;
    }
    // A verified log is counted from the file that was verified.
    let mut verified = verified.into_iter();
    for path in &args.logs {
        let log = match verified.next() {
            Some(file) => file,
            None => open(path)?,
        };
        summariser.read_log(&path.display().to_string(), log)?;
    }
    let mut summary = summariser.finish()?;
    if args.questions {
        // A second pass over the logs, as flat in memory as the first.
        let mut counter = report::QuestionCounter::new(summary.filter.clone());
        for path in &args.logs {
            counter.read_log(&path.display().to_string(), open(path)?)?;
        }
        summary.questions = Some(counter.finish());
    }
    let sink = Sink::open(args.output.as_deref(), &args.logs)?;
    let colour = args.output.is_none()
        && io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    sink.write(|out| {
        match format {
            Format::Text => out.write_all(report::render_text_with(&summary, colour).as_bytes())?,
            Format::Json => report::write_json(&summary, out)?,
            Format::Markdown => out.write_all(report::render_markdown(&summary).as_bytes())?,
            Format::Html => report::write_html(&summary, &chains, out)?,
        }
        Ok(())
    })?;
    let mut failed_checks = 0;
    if broken > 0 {
        let _ = writeln!(
            io::stderr(),
            "sc-report: the hash chain of {broken} log(s) is broken (the page says where)"
        );
        failed_checks += broken;
    }
    let failures = report::failures(&summary, &args.fail_on);
    if !failures.is_empty() {
        let _ = writeln!(
            io::stderr(),
            "sc-report: failing on {}",
            failures.join(", ")
        );
        failed_checks += 1;
    }
    Ok(Completion {
        unreadable_inputs: 0,
        failed_checks,
    })
}

/// `--suggest`: two passes over the logs (the repeats and their answers, then every hold replayed
/// with each suggested grant).
fn suggest(args: &Args, format: Format) -> anyhow::Result<Completion> {
    use skeleton_crew::rules::policy::Policy;
    if matches!(format, Format::Markdown | Format::Html) {
        return Err(UsageError("--suggest writes text or json".into()).into());
    }
    let path = args.policy.as_deref().expect("clap requires --policy");
    let policy = Policy::load(path)?;
    let filter = Filter {
        agent: args.agent.clone(),
        since: args.since,
        until: args.until,
    };
    let mut suggester = report::Suggester::new(&policy, filter.clone());
    for log in &args.logs {
        suggester.read_log(&log.display().to_string(), open(log)?)?;
    }
    let mut replay = report::Replay::new(&policy, filter, suggester.finish());
    for log in &args.logs {
        replay.read_log(&log.display().to_string(), open(log)?)?;
    }
    let suggestions = replay.finish();
    Sink::open(args.output.as_deref(), &args.logs)?.write(|out| {
        if format == Format::Json {
            serde_json::to_writer_pretty(&mut *out, &report::suggestions_json(&suggestions))?;
            out.write_all(b"\n")?;
        } else {
            out.write_all(report::suggestions_text(&suggestions).as_bytes())?;
        }
        Ok(())
    })?;
    Ok(Completion {
        unreadable_inputs: 0,
        failed_checks: 0,
    })
}

type ChainResult = Result<verify::Intact, verify::ChainBreak>;

/// Walks each log's hash chain (`--verify`, `--head`).
fn walk_chains(args: &Args) -> anyhow::Result<Vec<(&PathBuf, ChainResult)>> {
    Ok(walk_chains_keeping_files(args)?
        .into_iter()
        .map(|(path, result, _)| (path, result))
        .collect())
}

/// [`walk_chains`], with each log's file as it was verified (read from its start), so that a page
/// that says a chain is verified counts that same file, not whatever its path names by then.
fn walk_chains_keeping_files(args: &Args) -> anyhow::Result<Vec<(&PathBuf, ChainResult, File)>> {
    let chain = Chain::from_key_option(args.audit_key.as_deref())?;
    if args.expect_head.is_some() && args.logs.len() != 1 {
        return Err(UsageError("--expect-head checks one log; name exactly one".into()).into());
    }
    let mut results = Vec::new();
    for path in &args.logs {
        // A regular file only: a device or a FIFO reads as an empty log, never intact.
        let (result, file) = verify::verify_opened(path, &chain, args.expect_head)?;
        if let Err(chain_break) = &result {
            if !chain.is_keyed() && chain_break.line == 1 && first_line_carries_mac(path)? {
                return Err(UsageError(format!(
                    "the audit log {} is keyed (its lines carry a `mac`): pass --audit-key FILE \
                     (or set SC_AUDIT_KEY_FILE) to verify it",
                    path.display()
                ))
                .into());
            }
        }
        results.push((path, result, file));
    }
    Ok(results)
}

/// Whether the log's first line ends with a `mac`, as a keyed chain's lines do (a first line
/// longer than an event may be is not read, and counts as not).
fn first_line_carries_mac(path: &Path) -> anyhow::Result<bool> {
    use std::io::{BufRead, BufReader, Read};
    const LONGEST: u64 = 16 << 20;
    let mut line = Vec::new();
    BufReader::new(skeleton_crew::audit::file::open_to_verify(path)?.take(LONGEST))
        .read_until(b'\n', &mut line)
        .with_context(|| format!("cannot read the audit log {}", path.display()))?;
    if line.pop() != Some(b'\n') {
        return Ok(false);
    }
    Ok(chain::carries_mac(&line))
}

/// `--verify` (as text, or as JSON with `json`) and `--head`.
fn check_chains(args: &Args, json: bool) -> anyhow::Result<Completion> {
    let results = walk_chains(args)?;
    let mut broken = 0;
    Sink::open(args.output.as_deref(), &args.logs)?.write(|out| {
        if json {
            broken = results.iter().filter(|(_, result)| result.is_err()).count();
            serde_json::to_writer_pretty(&mut *out, &chains_json(&results))?;
            out.write_all(b"\n")?;
        } else {
            print_chains(args, &results, out, &mut broken)?;
        }
        Ok(())
    })?;
    Ok(Completion {
        unreadable_inputs: 0,
        failed_checks: broken,
    })
}

fn print_chains(
    args: &Args,
    results: &[(&PathBuf, ChainResult)],
    out: &mut dyn Write,
    broken: &mut usize,
) -> io::Result<()> {
    for (path, result) in results {
        let name = path.display();
        match (result, args.head) {
            (Ok(intact), true) if args.logs.len() == 1 => writeln!(out, "{}", intact.head)?,
            (Ok(intact), true) => writeln!(out, "{}  {name}", intact.head)?,
            (Ok(intact), false) => {
                let found = intact
                    .expected_head_at
                    .map(|line| format!("; expected head found at line {line}"))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{name}: {} events, chain intact, head {}{found}",
                    intact.events, intact.head
                )?
            }
            (Err(chain_break), _) => {
                *broken += 1;
                writeln!(out, "{name}: {chain_break}")?
            }
        }
    }
    Ok(())
}

/// `--verify --json`: each log's chain, intact (its events and head, and where the expected head
/// was found) or broken (the line, how, and in words).
fn chains_json(results: &[(&PathBuf, ChainResult)]) -> serde_json::Value {
    use serde_json::json;
    let chains: Vec<serde_json::Value> = results
        .iter()
        .map(|(path, result)| match result {
            Ok(intact) => json!({
                "log": path.display().to_string(),
                "intact": true,
                "events": intact.events,
                "head": intact.head.to_string(),
                "expectedHeadAt": intact.expected_head_at,
            }),
            Err(chain_break) => json!({
                "log": path.display().to_string(),
                "intact": false,
                "line": chain_break.line,
                "break": chain_break.kind.as_str(),
                "detail": chain_break.detail,
            }),
        })
        .collect();
    json!({ "chains": chains })
}
