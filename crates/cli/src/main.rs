//! `llm-ledger`: the command-line front end. Parses flags, reads files, calls the core and prints
//! a report. Every user error is one line on stderr and exit code 2.

mod cli;
mod commands;
mod inputs;

use clap::Parser;
use cli::{Cli, Command, LedgerArgs};
use std::io::Write;
use std::process::ExitCode;

const HINT: &str = "hint: this is `llm-ledger ledger` with its defaults; try `llm-ledger ledger --batch 64 --ctx 8192`, `llm-ledger models`, `llm-ledger gpus` or `llm-ledger --help`";

fn run(cli: Cli) -> anyhow::Result<String> {
    match cli.command {
        None => {
            let out = commands::ledger::run(&LedgerArgs { format: "table".into(), ..Default::default() })?;
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
        Some(Command::Advise(a)) => commands::measure::advise(&a),
        Some(Command::Zoom(a)) => commands::zoom::run(&a),
        Some(Command::Tile(a)) => commands::tile::run(&a),
        Some(Command::Moe(a)) => commands::moe::run(&a),
        Some(Command::Serve(a)) => commands::serve::run(&a),
        Some(Command::Plan(a)) => commands::plan::plan(&a),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout as clap prints them; a usage error is one line and code 2.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("error: invalid arguments");
            eprintln!("{first} (see `llm-ledger --help`)");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(out) => {
            // A closed pipe (`| head`) is not an error.
            let _ = std::io::stdout().lock().write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let msg = format!("{e:#}");
            eprintln!("error: {}", msg.split_whitespace().collect::<Vec<_>>().join(" "));
            ExitCode::from(2)
        }
    }
}
