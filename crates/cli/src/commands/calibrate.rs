//! `llm-ledger calibrate FILE...`: fit the expected clock's profile to measurements: CSVs of
//! scenario rows (read by [`llm_ledger_app::calibrate::csv_rows`]), and the benchmark outputs
//! users already have (`llm_ledger_files::benchmarks`).

use crate::cli::{CalibrateArgs, ScenarioArgs};
use crate::inputs::{catalog, check_outputs, input_files, read_text};
use anyhow::{bail, Context, Result};
use llm_ledger_app::calibrate;
use llm_ledger_core::calibrate::{Metric, Observation};
use llm_ledger_core::scenario::Loaded;
use llm_ledger_core::{Catalog, ScenarioRequest};
use llm_ledger_files::benchmarks::{self, Format, Run, StatedModel};
use llm_ledger_files::FileInputs;
use llm_ledger_report::{Format as OutputFormat, Report};
use std::path::{Path, PathBuf};

/// Read the measurements, fit, report (and write the profile with `--out`).
pub fn calibrate(args: &CalibrateArgs) -> Result<String> {
    let format: OutputFormat = args.output.format.0;
    let flags: ScenarioArgs = args.setup.scenario().with_parallel(&args.parallel);
    if args.setup.profile.is_some() {
        bail!("invalid `--profile`: calibrate fits a profile and reads none (its `before` is the plain clock)");
    }
    let mut read: Vec<PathBuf> = args.files.iter().map(PathBuf::from).collect();
    read.extend(input_files(&flags));
    check_outputs(&[("--out", "the profile", args.out.as_ref())], &read)?;
    let given = args.format_in.as_deref().map(Format::parse).transpose()?;
    let batch = calibrate::batch(args.batch.as_deref())?;
    let catalog = catalog(args.setup.gpu_file.as_deref(), args.setup.preset_file.as_deref())?;
    let mut texts = Vec::new();
    for file in &args.files {
        let text = read_text(Path::new(file), "measurements")?;
        let format = match given {
            Some(f) => f,
            None => Format::detect(file, &text)?,
        };
        texts.push((file, text, format));
    }
    let benchmark_files: Vec<&str> =
        texts.iter().filter(|(.., f)| *f != Format::Csv).map(|(file, ..)| file.as_str()).collect();
    let flags_given = flags.request() != ScenarioRequest::default() || batch.is_some();
    if benchmark_files.is_empty() && flags_given {
        bail!(
            "invalid scenario flags: they describe the runs of benchmark files (vLLM, genai-perf, trtllm-bench JSON); a CSV states each row's scenario in its columns"
        );
    }
    if let Some(file) = benchmark_files.first().filter(|_| args.setup.gpu.is_none()) {
        bail!("invalid `--gpu`: missing; `{file}` is a benchmark file, which does not state the GPU it ran on (give --gpu NAME)");
    }
    let mut observations = Vec::new();
    for (file, text, format) in &texts {
        match format {
            Format::Csv => observations.extend(calibrate::csv_rows(file, text, &catalog)?),
            json => {
                let runs = benchmarks::runs(file, text, *json)?;
                for run in &runs {
                    observations.extend(run_rows(file, run, &flags, batch, &catalog)?);
                }
            }
        }
    }
    let show_sources = args.files.len() > 1 || !benchmark_files.is_empty();
    let mut report = calibrate::run(&observations, &args.files.join(", "), show_sources)?;
    if let Some(out) = &args.out {
        calibrate::check_writable(&report)?;
        llm_ledger_files::output::write(Path::new(out), "the profile", report.profile_toml().as_bytes())?;
        report.written = Some(out.clone());
    }
    Ok(report.render(format)?)
}

/// The observations of one benchmark run: each measurement on the step it describes
/// (`llm_ledger_files::benchmarks`, "What a run becomes"), the flags winning over what the file
/// states. The file's model is taken only as a preset of `catalog` or a Hub repo id
/// ([`benchmarks::stated_model`]), never as a path.
fn run_rows(
    file: &str,
    run: &Run,
    flags: &ScenarioArgs,
    batch: Option<u64>,
    catalog: &Catalog,
) -> Result<Vec<Observation>> {
    let at = format!("`{file}` record {}", run.record);
    let mut base = flags.request();
    let model_from_file = base.model.is_none() && run.model.is_some();
    if base.model.is_none() {
        match benchmarks::stated_model(file, run, catalog, flags.revision.as_deref())? {
            Some(StatedModel::Preset(spec)) => base.model_file = Some(Loaded(spec)),
            Some(StatedModel::Hub(id)) => base.model = Some(id),
            None => {}
        }
    }
    base.engine = base.engine.or(run.engine.map(str::to_string));
    base.tp = base.tp.or(run.tp.filter(|n| *n > 1).map(|n| n.to_string()));
    base.pp = base.pp.or(run.pp.filter(|n| *n > 1).map(|n| n.to_string()));
    base.ep = base.ep.or(run.ep.filter(|n| *n > 1).map(|n| n.to_string()));
    let files = FileInputs {
        revision: flags.revision.clone(),
        gpu_file: flags.gpu_file.clone(),
        preset_file: flags.preset_file.clone(),
        ..FileInputs::default()
    };
    let mut out = Vec::new();
    for (metric, measured, _field) in &run.measured {
        let (phase, b, ctx) = match metric {
            Metric::TtftS => ("prefill", 1, run.prefill_ctx()),
            _ => {
                let Some((b, ctx)) = run.decode_shape(batch) else {
                    bail!(
                        "invalid {at}: missing field `{}` (a serving run's decode batch is its concurrency: give --batch N for a run that did not cap it)",
                        run.concurrency_field
                    );
                };
                ("decode", b, ctx)
            }
        };
        let req = ScenarioRequest {
            phase: Some(phase.into()),
            batch: Some(b.to_string()),
            ctx: Some(ctx.to_string()),
            ..base.clone()
        };
        let scenario =
            llm_ledger_files::scenario(req, &files).with_context(|| match (&run.model, model_from_file) {
                (Some((m, f)), true) => {
                    format!("in {at}: `{f}` = {m:?} (give --model NAME to name the model as llm-ledger knows it)")
                }
                _ => format!("in {at}"),
            })?;
        out.push(Observation {
            scenario,
            metric: *metric,
            op: None,
            measured: *measured,
            source: format!("{} #{}", calibrate::short_name(file), run.record),
        });
    }
    Ok(out)
}
