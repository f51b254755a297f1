//! `llm-ledger sweep`: rows are written as the points come out of the core's parallel chunks,
//! so a sweep of any length runs in bounded memory. A progress bar appears on stderr only when
//! the sweep is projected to take more than a second, stderr is a terminal and stdout is not
//! (the rows are going to a file or a pipe); it never appears when stderr is a pipe.
//!
//! With `--plot`, the points are also kept (at most [`MAX_PLOT_POINTS`]) and drawn as the batch
//! curve once the sweep is done.

use crate::cli::SweepArgs;
use crate::inputs;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use llm_ledger_core::serving::ServingRequest;
use llm_ledger_core::sweep::mix_refused;
use llm_ledger_core::Error;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::sweep::{SweepPlan, SweepView};
use llm_ledger_report::Format;
use std::io::{BufWriter, ErrorKind, IsTerminal, Write};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// How long to run before deciding whether the sweep deserves a bar.
const PROBE: Duration = Duration::from_millis(250);

/// Most points `--plot` draws.
pub const MAX_PLOT_POINTS: u64 = 4096;

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
pub fn run(args: &SweepArgs, out: &mut dyn Write) -> Result<()> {
    let step = &args.step;
    let format: Format = step.output.format.parse()?;
    let a = &step.scenario;
    if a.contexts.is_some() || a.histogram.is_some() {
        return Err(mix_refused().into());
    }
    let base_args = crate::cli::ScenarioArgs { batch: None, ctx: None, ..a.clone() };
    let sc = inputs::scenario(&base_args)?;
    let serving = ServingRequest { reserve: step.reserve.reserve.clone(), ..Default::default() }.resolve(&sc)?;
    let plan = SweepPlan::new(sc, a.batch.as_deref(), a.ctx.as_deref(), serving.reserve_bytes)?;
    if args.plot.is_some() {
        // Check before running, so a sweep that cannot be drawn fails at once.
        plan.batch_curve(&[])?;
        if plan.head.point_count > MAX_PLOT_POINTS {
            return Err(Error::invalid(
                "plot",
                format!("{} batch sizes", plan.head.point_count),
                format!("at most {MAX_PLOT_POINTS} for a plot"),
            )
            .into());
        }
    }
    let head = &plan.head;
    let view = SweepView::new(format);
    let mut w = BufWriter::new(out);
    let mut write = |s: String| match w.write_all(s.as_bytes()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
        Ok(()) => Ok(true),
    };
    if !write(view.head(head))? {
        return Ok(());
    }
    let mut progress = Progress::new(plan.sweep.len());
    let (mut done, mut past_wall) = (0u64, 0u64);
    let mut kept = Vec::new();
    let mut failed = None;
    plan.sweep.run(|p| match write(view.point(p, done)) {
        Ok(true) => {
            done += 1;
            past_wall += u64::from(!p.fits);
            if args.plot.is_some() {
                kept.push(*p);
            }
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
        write(view.tail(head, done, past_wall))?;
    }
    match w.flush() {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    if let Some(path) = &args.plot {
        inputs::write_svg(path, &plan.batch_curve(&kept)?.svg(PlotSize::default())?)?;
    }
    Ok(())
}
