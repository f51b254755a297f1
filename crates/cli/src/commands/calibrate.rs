//! `llm-ledger calibrate FILE...`: fit the expected clock's profile to measurements: CSVs of
//! scenario rows, and the benchmark outputs users already have (`llm_ledger_files::benchmarks`).

use crate::cli::{CalibrateArgs, ScenarioArgs};
use crate::inputs::{catalog, check_outputs, input_files, read_text};
use anyhow::{bail, Context, Result};
use llm_ledger_core::calibrate::{calibrate as fit, Metric, Observation, CONSTANTS};
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::scenario::{parse_u64, scenario_inputs};
use llm_ledger_core::{Catalog, ScenarioRequest};
use llm_ledger_files::benchmarks::{self, Format, Run};
use llm_ledger_files::FileInputs;
use llm_ledger_report::calibrate::CalibrateReport;
use llm_ledger_report::{Format as OutputFormat, Report};
use std::path::{Path, PathBuf};

/// The column naming the operator of a per-kernel row (`op_s`, `op_ms`, `op_us`).
pub const OP_COLUMN: &str = "op";

/// Most measurement rows in one file.
pub const MAX_ROWS: usize = 10_000;

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
    let batch = args.batch.as_deref().map(|b| parse_u64("--batch", b)).transpose()?;
    if batch == Some(0) {
        bail!("invalid `--batch`: 0 (a run's concurrency: a whole number ≥ 1)");
    }
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
            Format::Csv => observations.extend(csv_rows(file, text, &catalog)?),
            json => {
                let runs = benchmarks::runs(file, text, *json)?;
                for run in &runs {
                    observations.extend(run_rows(file, run, &flags, batch)?);
                }
            }
        }
    }
    let label = args.files.join(", ");
    if observations.len() < CONSTANTS.len() {
        bail!(
            "invalid `{label}`: {} measurement rows (at least {}, one per constant fitted)",
            observations.len(),
            CONSTANTS.len()
        );
    }
    let calibration = fit(&observations).with_context(|| format!("in `{label}`"))?;
    let show_sources = args.files.len() > 1 || !benchmark_files.is_empty();
    let mut report = CalibrateReport { file: label, calibration, written: None, show_sources };
    if let Some(out) = &args.out {
        llm_ledger_files::output::write(Path::new(out), "the profile", report.profile_toml().as_bytes())?;
        report.written = Some(out.clone());
    }
    Ok(report.render(format)?)
}

/// The observations of a CSV of scenario rows.
fn csv_rows(file: &str, text: &str, catalog: &Catalog) -> Result<Vec<Observation>> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).flexible(false).from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .with_context(|| format!("invalid `{file}`: not a CSV with a header line"))?
        .iter()
        .map(str::to_string)
        .collect();
    let metric_columns: Vec<usize> = (0..header.len()).filter(|&i| Metric::of_column(&header[i]).is_some()).collect();
    let metric_names: Vec<&str> = Metric::COLUMNS.iter().map(|(n, ..)| *n).collect();
    let [m] = metric_columns[..] else {
        bail!(
            "invalid `{file}`: the header needs exactly one measurement column ({}), found {}",
            metric_names.join(", "),
            metric_columns.len()
        );
    };
    let op_column = header.iter().position(|h| h == OP_COLUMN);
    for (i, h) in header.iter().enumerate() {
        if i != m && Some(i) != op_column && !scenario_inputs().iter().any(|s| s.name == h) {
            let names: Vec<&str> = scenario_inputs().iter().map(|s| s.name).collect();
            bail!(
                "unknown column `{h}` in `{file}`; accepted: a measurement ({}), `{OP_COLUMN}` (the operator of a per-kernel row) and scenario inputs ({})",
                metric_names.join(", "),
                names.join(", ")
            );
        }
    }
    let (metric, to_si) = Metric::of_column(&header[m]).expect("a measurement column");
    let mut observations = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let line = row + 2;
        let record = record.with_context(|| format!("invalid `{file}` line {line}"))?;
        if observations.len() == MAX_ROWS {
            bail!("invalid `{file}`: more than {MAX_ROWS} measurement rows");
        }
        let raw = &record[m];
        let measured =
            raw.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0).with_context(|| {
                format!("invalid `{file}` line {line}: `{}` = {raw:?} (a positive number)", header[m])
            })?;
        let op = match op_column.map(|c| &record[c]).filter(|v| !v.is_empty()) {
            Some(v) => Some(v.parse().with_context(|| format!("invalid `{file}` line {line}"))?),
            None => None,
        };
        let pairs = header
            .iter()
            .zip(record.iter())
            .enumerate()
            .filter(|(i, (_, v))| *i != m && Some(*i) != op_column && !v.is_empty());
        let req: ScenarioRequest = from_pairs(pairs.map(|(_, (k, v))| (k.as_str(), v)))
            .with_context(|| format!("invalid `{file}` line {line}"))?;
        let scenario = req.resolve(catalog).with_context(|| format!("in `{file}` line {line}"))?;
        observations.push(Observation {
            scenario,
            metric,
            op,
            measured: measured * to_si,
            source: format!("{}:{line}", short_name(file)),
        });
    }
    Ok(observations)
}

/// The observations of one benchmark run: each measurement on the step it describes
/// (`llm_ledger_files::benchmarks`, "What a run becomes"), the flags winning over what the file
/// states.
fn run_rows(file: &str, run: &Run, flags: &ScenarioArgs, batch: Option<u64>) -> Result<Vec<Observation>> {
    let at = format!("`{file}` record {}", run.record);
    let mut base = flags.request();
    let model_from_file = base.model.is_none() && run.model.is_some();
    if base.model.is_none() {
        base.model = run.model.as_ref().map(|(m, _)| m.clone());
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
            source: format!("{} #{}", short_name(file), run.record),
        });
    }
    Ok(out)
}

/// A file's name without its folders, for the table's source column.
fn short_name(file: &str) -> String {
    Path::new(file).file_name().map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned())
}
