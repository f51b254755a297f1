//! `llm-ledger`: the command-line front end. Parses flags, reads files, calls the core and prints
//! a report. Every user error is one line on stderr and exit code 2 (a usage error keeps clap's
//! content: the missing argument, the "did you mean" tip). Output that cannot be written (a full
//! disk), on stdout or to a file the user named, is one line and exit code 1; a closed pipe
//! (`| head`) is not an error; Ctrl-C is one line and exit code 130 ([`interrupt`]). Every error
//! line has its control characters escaped ([`llm_ledger_core::error::escape_controls`]): nothing
//! the user typed reaches the terminal raw.

/// mimalloc (the workspace's `Cargo.toml` says why, with the measurements).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;
mod commands;
mod inputs;
mod interrupt;
mod progress;

use clap::error::{ContextKind, ContextValue, ErrorKind as UsageErrorKind};
use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, Command, LedgerArgs};
use std::io::{ErrorKind, Write};
use std::process::ExitCode;

const HINT: &str = "hint: this is `llm-ledger ledger` with its defaults; try `llm-ledger ledger --batch 64 --ctx 8192`, `llm-ledger models`, `llm-ledger gpus` or `llm-ledger --help`";

fn run(cli: Cli) -> anyhow::Result<String> {
    match cli.command {
        None => {
            let out = commands::ledger::run(&LedgerArgs::default())?;
            eprintln!("{HINT}");
            Ok(out)
        }
        Some(Command::Ledger(a)) => commands::ledger::run(&a),
        Some(Command::Models(a)) => commands::list::models(&a),
        Some(Command::Gpus(a)) => commands::list::gpus(&a),
        Some(Command::Sweep(a)) => commands::sweep::run(&a, &mut std::io::stdout().lock()).map(|()| String::new()),
        Some(Command::Kv(a)) => commands::kv::kv(&a),
        Some(Command::Levers(a)) => commands::kv::levers(&a),
        Some(Command::Latency(a)) => commands::latency::latency(&a),
        Some(Command::Cost(a)) => commands::latency::cost(&a),
        Some(Command::Measure(a)) => commands::measure::measure(&a),
        Some(Command::Calibrate(a)) => commands::calibrate::calibrate(&a),
        Some(Command::Advise(a)) => commands::measure::advise(&a),
        Some(Command::Zoom(a)) => commands::zoom::run(&a),
        Some(Command::Tile(a)) => commands::tile::run(&a),
        Some(Command::Moe(a)) => commands::moe::run(&a),
        Some(Command::Serve(a)) => commands::serve::run(&a),
        Some(Command::Plan(a)) => commands::plan::plan(&a),
        Some(Command::Simulate(a)) => commands::simulate::run(&a),
    }
}

/// A clap usage error as one line: the error line, the arguments it names and its tip, without the
/// usage block and the "For more information" line; it points at the subcommand's help.
fn usage_error_line(rendered: &str, subcommand: Option<&str>) -> String {
    let mut line = String::new();
    for l in rendered.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if l.starts_with("Usage: ") || l.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(l);
    }
    if line.is_empty() {
        line.push_str("error: invalid arguments");
    }
    match subcommand {
        Some(sub) => format!("{line} (see `llm-ledger {sub} --help`)"),
        None => format!("{line} (see `llm-ledger --help`)"),
    }
}

/// An unknown `--flag` as one line, by the rule every "did you mean" follows
/// (`llm_ledger_core::error::suggestions`): when another command takes the flag, which ones
/// (`plan --tp`: `--tp` is a flag of `ledger`, `sweep`, …); else the command's own flags closest
/// to it. `None` for anything else (a short flag, a stray value): clap's message stands.
fn unknown_flag_line(arg: &str, subcommand: Option<&str>) -> Option<String> {
    let flag = arg.split('=').next()?;
    let name = flag.strip_prefix("--").filter(|n| !n.is_empty())?;
    let cmd = cli::command();
    let this = match subcommand {
        Some(sub) => cmd.find_subcommand(sub)?.clone(),
        None => cmd.clone(),
    };
    let longs = |c: &clap::Command| -> Vec<String> {
        c.get_arguments().filter(|a| !a.is_hide_set()).filter_map(|a| a.get_long().map(str::to_string)).collect()
    };
    let takers: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| Some(s.get_name()) != subcommand && longs(s).iter().any(|l| l == name))
        .map(|s| format!("`{}`", s.get_name()))
        .collect();
    let here = subcommand.map_or("`llm-ledger` without a command".to_string(), |s| format!("`{s}`"));
    let tip = if !takers.is_empty() {
        format!("{here} does not take it: `--{name}` is a flag of {}", takers.join(", "))
    } else {
        // The built command's flags include `--help` and the global `--wide` and `--width`.
        let own = longs(&this);
        let close = llm_ledger_core::error::suggestions(name, &own);
        match close.first() {
            Some(best) => format!("tip: a similar argument exists: '--{best}'"),
            None => format!("{here} has no such flag"),
        }
    };
    let see = subcommand.map_or("`llm-ledger --help`".to_string(), |s| format!("`llm-ledger {s} --help`"));
    Some(format!("error: unexpected argument '{flag}' found; {tip} (see {see})"))
}

/// The width tables are fitted to: `--width`, else (unless `--wide`) the terminal's when stdout is
/// one ($COLUMNS first); `None` means every column.
fn table_width(cli: &Cli) -> Option<usize> {
    if cli.wide {
        llm_ledger_report::render::show_wide_columns(true);
        return None;
    }
    if let Some(w) = cli.width {
        return Some(w.max(1));
    }
    let terminal = llm_ledger_report::render::terminal_width()?;
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|c| *c > 0);
    Some(columns.unwrap_or(terminal))
}

/// An error as the user reads it: a core error about a scenario input names the flag as typed
/// (`--tpot-ms`, not `tpot_ms`), and so does a message naming inputs
/// ([`llm_ledger_core::Error::Input`]) wherever it is in the chain; errors in a file (with
/// context) keep the file's key names.
fn user_message(e: &anyhow::Error) -> String {
    // `prompt + output` names two flags.
    let flags = |field: &str| -> String {
        let parts: Option<Vec<String>> = field.split(" + ").map(cli::flag_of).collect();
        parts.map(|p| p.join(" + ")).unwrap_or_else(|| field.to_string())
    };
    let Some(core) = e.downcast_ref::<llm_ledger_core::Error>().filter(|_| e.chain().count() == 1) else {
        // As `{e:#}` writes the chain, each message that names inputs spelled as flags.
        let layers: Vec<String> = e
            .chain()
            .map(|c| match c.downcast_ref::<llm_ledger_core::Error>() {
                Some(input @ llm_ledger_core::Error::Input { .. }) => input.clone().map_field(flags).to_string(),
                _ => c.to_string(),
            })
            .collect();
        return layers.join(": ");
    };
    match core {
        llm_ledger_core::Error::NoPlan(refused) => llm_ledger_report::plan::refusal_message(refused, &flags),
        llm_ledger_core::Error::NoServingPlan(refused) => {
            llm_ledger_report::plan_serving::refusal_message(refused, &flags)
        }
        _ => {
            let message = core.clone().map_field(flags).to_string();
            // A long list of names is counted, not printed: the command that lists them.
            let listed_by = match core.field() {
                Some("model") => "`llm-ledger models`",
                Some("gpu") => "`llm-ledger gpus`",
                _ => return message,
            };
            match core.accepted() {
                Some(names) if names.len() > llm_ledger_core::error::LISTED_NAMES => {
                    format!("{message}; {listed_by} lists them")
                }
                _ => message,
            }
        }
    }
}

/// The output could not be written (stdout to a full disk, a closed terminal): exit code 1, where a
/// user error is 2. Renders as one line, `cannot write output: No space left on device`.
#[derive(Debug)]
pub struct OutputError(pub std::io::Error);

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let msg = self.0.to_string();
        let msg = match self.0.raw_os_error() {
            Some(code) => msg.strip_suffix(&format!(" (os error {code})")).map(str::to_string).unwrap_or(msg),
            None => msg,
        };
        write!(f, "cannot write output: {msg}")
    }
}

impl std::error::Error for OutputError {}

/// Exit code of an [`OutputError`].
const OUTPUT_FAILED: u8 = 1;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() != Some("serve") {
        interrupt::install();
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = match args.len() {
        // The program's name alone: nothing to parse.
        0 | 1 => Ok(Cli::bare()),
        _ => cli::command_for(&args).try_get_matches_from(&args).and_then(|m| Cli::from_arg_matches(&m)),
    };
    let cli = match parsed {
        Ok(cli) => cli,
        // Help and version go to stdout as clap prints them; a usage error is one line and code 2.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let sub = std::env::args().nth(1).filter(|s| Cli::command().find_subcommand(s).is_some());
            let unknown = match (e.kind(), e.get(ContextKind::InvalidArg)) {
                (UsageErrorKind::UnknownArgument, Some(ContextValue::String(arg))) => {
                    unknown_flag_line(arg, sub.as_deref())
                }
                _ => None,
            };
            let line = unknown.unwrap_or_else(|| usage_error_line(&e.render().to_string(), sub.as_deref()));
            eprintln!("{}", llm_ledger_core::error::escape_controls(&line));
            return ExitCode::from(2);
        }
    };
    // Tables fit the terminal; pipes and files get every column. The explorer renders for browsers.
    if !matches!(cli.command, Some(Command::Serve(_))) {
        if let Some(w) = table_width(&cli) {
            llm_ledger_report::render::fit_tables_to(w);
        }
    }
    let written = run(cli).map(|out| {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush())
    });
    match written {
        Ok(Ok(())) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is not an error: the reader has what it wanted.
        Ok(Err(e)) if e.kind() == ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {}", OutputError(e));
            ExitCode::from(OUTPUT_FAILED)
        }
        Err(e)
            if e.chain()
                .any(|c| c.downcast_ref::<llm_ledger_core::Error>() == Some(&llm_ledger_core::Error::Cancelled)) =>
        {
            eprintln!("{}", interrupt::MESSAGE);
            ExitCode::from(interrupt::EXIT_INTERRUPTED)
        }
        Err(e) => {
            let msg = user_message(&e);
            let line = msg.split_whitespace().collect::<Vec<_>>().join(" ");
            eprintln!("error: {}", llm_ledger_core::error::escape_controls(&line));
            let unwritable = e.is::<OutputError>() || e.is::<llm_ledger_files::output::WriteFailed>();
            ExitCode::from(if unwritable { OUTPUT_FAILED } else { 2 })
        }
    }
}
