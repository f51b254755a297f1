//! `llm-ledger sweep`: rows are written as the points come out of the core's parallel chunks,
//! so a sweep of any length runs in bounded memory. A progress bar appears on stderr only when
//! the sweep is projected to take more than a second, stderr is a terminal and stdout is not
//! (the rows are going to a file or a pipe); it never appears when stderr is a pipe.

use crate::cli::StepArgs;
use crate::inputs;
use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressStyle};
use llm_ledger_core::limits::{MAX_BATCH, MAX_CONTEXT};
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::sweep::{Axis, Sweep};
use llm_ledger_core::Phase;
use llm_ledger_report::sweep::{SweepHead, SweepView};
use llm_ledger_report::{Format, Inputs};
use std::io::{BufWriter, ErrorKind, IsTerminal, Write};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// How long to run before deciding whether the sweep deserves a bar.
const PROBE: Duration = Duration::from_millis(250);

/// Projected run time above which a bar is shown.
const LONG: Duration = Duration::from_secs(1);

/// A progress bar that decides by itself whether to appear.
struct Progress {
    total: u64,
    start: Instant,
    decided: bool,
    allowed: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let allowed = std::io::stderr().is_terminal() && !std::io::stdout().is_terminal();
        Progress { total, start: Instant::now(), decided: !allowed, allowed, bar: None }
    }

    fn tick(&mut self, done: u64) {
        if let Some(bar) = &self.bar {
            if done % 256 == 0 {
                bar.set_position(done);
            }
            return;
        }
        if self.decided || done % 256 != 0 {
            return;
        }
        let elapsed = self.start.elapsed();
        if elapsed < PROBE {
            return;
        }
        self.decided = true;
        let projected = elapsed.mul_f64(self.total as f64 / done as f64);
        if self.allowed && projected > LONG {
            let bar = ProgressBar::new(self.total);
            let style = ProgressStyle::with_template("{bar:40} {human_pos}/{human_len} points · eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_position(done);
            self.bar = Some(bar);
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Run the sweep, writing to `out`.
pub fn run(args: &StepArgs, out: &mut dyn Write) -> Result<()> {
    let format: Format = args.output.format.parse()?;
    let a = &args.scenario;
    if a.contexts.is_some() || a.histogram.is_some() {
        bail!("invalid `contexts`: a sweep varies --batch and --ctx (lists and ranges); a fixed mix of contexts is one `ledger` or `kv` step");
    }
    let base_args = crate::cli::ScenarioArgs { batch: None, ctx: None, ..a.clone() };
    let sc = inputs::scenario(&base_args)?;
    let batch_text = a.batch.as_deref().unwrap_or("1");
    let ctx_text = a.ctx.as_deref().unwrap_or("2048");
    let batch = Axis::parse("batch", batch_text, 1, MAX_BATCH)?;
    let min_ctx = if sc.workload.phase == Phase::Prefill { 1 } else { 0 };
    let ctx = Axis::parse("ctx", ctx_text, min_ctx, MAX_CONTEXT)?;
    let serving = ServingRequest { reserve: args.reserve.reserve.clone(), ..Default::default() }.resolve(&sc)?;
    let head = SweepHead {
        inputs: Inputs::of(&sc),
        batch_axis: batch_text.trim().to_string(),
        ctx_axis: ctx_text.trim().to_string(),
        point_count: batch.len() * ctx.len(),
        capacity_bytes: sc.gpu.memory_bytes,
        reserve_bytes: serving.reserve_bytes,
    };
    let sweep = Sweep::new(sc, batch, ctx, serving.reserve_bytes)?;
    let view = SweepView::new(format);
    let mut w = BufWriter::new(out);
    let mut write = |s: String| match w.write_all(s.as_bytes()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
        Ok(()) => Ok(true),
    };
    if !write(view.head(&head))? {
        return Ok(());
    }
    let mut progress = Progress::new(sweep.len());
    let (mut done, mut past_wall) = (0u64, 0u64);
    let mut failed = None;
    sweep.run(|p| match write(view.point(p, done)) {
        Ok(true) => {
            done += 1;
            past_wall += u64::from(!p.fits);
            progress.tick(done);
            ControlFlow::Continue(())
        }
        Ok(false) => ControlFlow::Break(()),
        Err(e) => {
            failed = Some(e);
            ControlFlow::Break(())
        }
    });
    progress.finish();
    if let Some(e) = failed {
        return Err(e.into());
    }
    if done == head.point_count {
        write(view.tail(&head, done, past_wall))?;
    }
    match w.flush() {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
