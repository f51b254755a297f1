//! A progress line for long simulations (`simulate`, `plan --rate`): the engine steps their runs
//! have taken against the step budget, on stderr, when stderr is a terminal and the work has
//! run for a second; cleared when it ends. Nothing is drawn into a pipe or a file.

use indicatif::{ProgressBar, ProgressStyle};
use llm_ledger_core::simulate::Budget;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long work runs before the line appears.
const AFTER: Duration = Duration::from_secs(1);

/// How often the line is redrawn.
const EVERY: Duration = Duration::from_millis(200);

/// Run `work` while a thread shows how many engine steps of `budget` it has taken.
pub fn steps<R>(budget: &Budget<'_>, work: impl FnOnce() -> R) -> R {
    if !std::io::stderr().is_terminal() {
        return work();
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| watch(budget, &done));
        let out = work();
        done.store(true, Ordering::Relaxed);
        out
    })
}

/// Redraw until `done`: after [`AFTER`], the steps so far against the budget.
fn watch(budget: &Budget<'_>, done: &AtomicBool) {
    let start = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(EVERY);
        if start.elapsed() < AFTER {
            continue;
        }
        let b = bar.get_or_insert_with(|| {
            let b = ProgressBar::new(budget.max_steps());
            let style = ProgressStyle::with_template(
                "{bar:30} {human_pos} engine steps of at most {human_len} · {elapsed} (Ctrl-C stops)",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style);
            b
        });
        b.set_position(budget.used_steps());
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}
