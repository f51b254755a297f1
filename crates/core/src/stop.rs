//! Stopping heavy work from another thread: the one cancellation flag every long computation
//! checks — plan searches, sweeps, zoom searches and simulations ([`crate::simulate::Budget`]
//! holds one too). A front end sets it: the CLI on Ctrl-C, Python on KeyboardInterrupt, the
//! explorer at a request's deadline or when its client goes away. Work checks it between units
//! that take at most milliseconds (a plan's step evaluation, a sweep's chunk of points), so a
//! cancelled search ends, and frees what it holds, within milliseconds.
//!
//! A check is one relaxed atomic load: free beside the work between two checks.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};

/// A cancellation flag, or none (module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stop<'a> {
    flag: Option<&'a AtomicBool>,
}

impl<'a> Stop<'a> {
    /// Work nothing stops (the core's own callers and tests).
    pub const NEVER: Stop<'static> = Stop { flag: None };

    /// Work that stops when `flag` becomes true.
    pub fn on(flag: &'a AtomicBool) -> Stop<'a> {
        Stop { flag: Some(flag) }
    }

    /// [`Stop::on`] a flag if there is one.
    pub fn maybe(flag: Option<&'a AtomicBool>) -> Stop<'a> {
        Stop { flag }
    }

    /// The flag, if any (to hand to work that takes one).
    pub fn flag(&self) -> Option<&'a AtomicBool> {
        self.flag
    }

    /// Whether the work has been asked to stop.
    pub fn stopped(&self) -> bool {
        self.flag.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// [`Error::Cancelled`] once the work has been asked to stop.
    pub fn check(&self) -> Result<()> {
        if self.stopped() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_flag_stops_the_work_and_none_never_does() {
        let flag = AtomicBool::new(false);
        let stop = Stop::on(&flag);
        assert!(stop.check().is_ok());
        flag.store(true, Ordering::Relaxed);
        assert!(matches!(stop.check(), Err(Error::Cancelled)));
        assert!(Stop::NEVER.check().is_ok() && !Stop::maybe(None).stopped());
    }
}
