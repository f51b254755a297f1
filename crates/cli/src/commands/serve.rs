//! `llm-ledger serve`: the explorer on a local port.

use crate::cli::ServeArgs;
use crate::inputs;
use anyhow::Result;
use llm_ledger_web::{serve, AppState, ServeOptions};

/// Serve until Ctrl-C; prints the URL on stderr and nothing on stdout.
pub fn run(args: &ServeArgs) -> Result<String> {
    let catalog = inputs::catalog(args.gpu_file.as_deref(), args.preset_file.as_deref())?;
    serve(ServeOptions { bind: args.bind, port: args.port, open: args.open }, AppState::new(catalog))?;
    Ok(String::new())
}
