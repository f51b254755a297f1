//! Ctrl-C. A command that runs simulations (`simulate`, `plan --rate`) hands the simulator
//! [`flag`]: Ctrl-C sets it, the runs stop at their next check (every 1,024 steps), and the
//! command ends with one line and exit code [`EXIT_INTERRUPTED`]. Any other command, and a second
//! Ctrl-C, ends the process at once the same way. `serve` keeps its own handler (a graceful
//! shutdown), so this one is not installed for it.

use std::sync::atomic::{AtomicBool, Ordering};

/// Exit code after Ctrl-C: 128 + SIGINT, as shells report a process ended by it.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The line printed after Ctrl-C.
pub const MESSAGE: &str = "error: interrupted (Ctrl-C)";

static CANCEL: AtomicBool = AtomicBool::new(false);
static WATCHED: AtomicBool = AtomicBool::new(false);

/// Install the handler (once, first thing in `main`).
pub fn install() {
    // A failure (another handler already installed) leaves the default: Ctrl-C ends the process.
    let _ = ctrlc::set_handler(|| {
        if CANCEL.swap(true, Ordering::SeqCst) || !WATCHED.load(Ordering::SeqCst) {
            eprintln!("{MESSAGE}");
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
}

/// The cancellation flag Ctrl-C sets, for work that checks it (from now on, Ctrl-C waits for
/// that work to stop instead of ending the process).
pub fn flag() -> &'static AtomicBool {
    WATCHED.store(true, Ordering::SeqCst);
    &CANCEL
}
