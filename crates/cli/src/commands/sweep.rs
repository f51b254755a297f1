//! `llm-ledger sweep`: rows are formatted on the threads of the core's parallel chunks and
//! written in order as the chunks come out, so a sweep of any length runs in bounded memory and
//! is not bound by one formatting thread. A progress bar appears on stderr only when
//! the sweep is projected to take more than a second, stderr is a terminal and stdout is not
//! (the rows are going to a file or a pipe); it never appears when stderr is a pipe.
//!
//! With `--plot`, the points are also kept (at most [`MAX_PLOT_POINTS`]) and drawn as the batch
//! curve once the sweep is done.

use crate::cli::SweepArgs;
use crate::inputs;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use llm_ledger_core::sweep::grid_points;
use llm_ledger_core::Error;
use llm_ledger_report::plot::PlotSize;
use llm_ledger_report::sweep::{SweepView, Variant};
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

/// The scenario flags of each series: the cartesian product of the comma-separated values of
/// `--gpu` (names, not file paths), `--weights` and `--kv`; and those three axes with their
/// numbers of values (for the cap on points, [`grid_points`]).
fn series(a: &crate::cli::ScenarioArgs) -> (Vec<crate::cli::ScenarioArgs>, [(&'static str, u64); 3]) {
    let split = |v: &Option<String>, allow: bool| -> Vec<Option<String>> {
        match v {
            Some(s) if allow && s.contains(',') => s.split(',').map(|x| Some(x.trim().to_string())).collect(),
            other => vec![other.clone()],
        }
    };
    let gpu_is_path = a.gpu.as_deref().is_some_and(inputs::looks_like_path);
    let (gpus, formats, kvs) = (split(&a.gpu, !gpu_is_path), split(&a.weights, true), split(&a.kv, true));
    let axes = [("gpu", gpus.len() as u64), ("weights", formats.len() as u64), ("kv", kvs.len() as u64)];
    let mut out = Vec::new();
    for gpu in &gpus {
        for weights in &formats {
            for kv in &kvs {
                out.push(crate::cli::ScenarioArgs {
                    gpu: gpu.clone(),
                    weights: weights.clone(),
                    kv: kv.clone(),
                    ..a.clone()
                });
            }
        }
    }
    (out, axes)
}

/// Run the sweep, writing to `out`.
pub fn run(args: &SweepArgs, out: &mut dyn Write) -> Result<()> {
    let format: Format = args.output.format.0;
    // `--gpu`, `--weights` and `--kv` may list several values: one series per combination.
    let (series_args, series_axes) = series(&args.base());
    let read: Vec<_> = series_args.iter().flat_map(inputs::input_files).collect();
    inputs::check_outputs(&[("--plot", "plot", args.plot.as_ref())], &read)?;
    let mut plans = Vec::with_capacity(series_args.len());
    let req = args.request();
    for (i, sa) in series_args.iter().enumerate() {
        let plan = req.plan(inputs::scenario(sa)?)?;
        if i == 0 {
            // Every series has the same batch and ctx axes: cap the whole grid before the rest.
            let axes: Vec<(&str, u64)> = series_axes.iter().chain(&plan.sweep.axes()).copied().collect();
            grid_points(&axes)?;
        }
        plans.push(plan);
    }
    let variants: Vec<Variant> = plans.iter().map(|p| Variant::of(&p.base)).collect();
    if variants.len() > 1 && args.plot.is_some() {
        return Err(Error::invalid(
            "plot",
            format!("{} series", variants.len()),
            "one GPU, weight and KV precision for a plot",
        )
        .into());
    }
    let mut head = plans[0].head.clone();
    head.point_count = plans.iter().map(|p| p.head.point_count).sum();
    if variants.len() > 1 {
        head.variants = variants.clone();
        // Every point fits when every series' largest point does: the first that does not speaks.
        if let Some(p) = plans.iter().find(|p| !p.head.fit.fits) {
            head.fit = p.head.fit.clone();
        }
    }
    let plan = &plans[0];
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
    let head = &head;
    let view = SweepView::compare(format, &variants);
    let mut w = BufWriter::new(out);
    let mut write = |s: String| match w.write_all(s.as_bytes()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
        Ok(()) => Ok(true),
    };
    if !write(view.head(head)).map_err(crate::OutputError)? {
        return Ok(());
    }
    let mut progress = Progress::new(head.point_count);
    let (mut done, mut past_wall) = (0u64, 0u64);
    let mut kept = Vec::new();
    let mut failed = None;
    let mut stopped = false;
    for (plan, variant) in plans.iter().zip(&variants) {
        if stopped {
            break;
        }
        // Rows are formatted on the threads that evaluate the points, written here in order.
        let offset = done;
        let view = &view;
        plan.sweep.run_mapped(
            |i, p| view.point_of(Some(variant), p, offset + i),
            |p, line| match line
                .map_err(anyhow::Error::from)
                .and_then(|line| write(line).map_err(|e| crate::OutputError(e).into()))
            {
                Ok(true) => {
                    done += 1;
                    past_wall += u64::from(!p.fits);
                    if args.plot.is_some() {
                        kept.push(*p);
                    }
                    progress.tick(done);
                    ControlFlow::Continue(())
                }
                Ok(false) => {
                    stopped = true;
                    ControlFlow::Break(())
                }
                Err(e) => {
                    failed = Some(e);
                    stopped = true;
                    ControlFlow::Break(())
                }
            },
        );
    }
    progress.finish();
    if let Some(e) = failed {
        return Err(e);
    }
    if done == head.point_count {
        write(view.tail(head, done, past_wall)).map_err(crate::OutputError)?;
    }
    match w.flush() {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => return Err(crate::OutputError(e).into()),
        _ => {}
    }
    if let Some(path) = &args.plot {
        inputs::write_svg(path, &plan.batch_curve(&kept)?.svg(PlotSize::default())?)?;
    }
    Ok(())
}
