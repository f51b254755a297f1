//! `llm-ledger calibrate FILE.csv`: fit the expected clock's profile to measurements.

use crate::cli::CalibrateArgs;
use crate::inputs::{catalog, check_outputs, read_text};
use anyhow::{bail, Context, Result};
use llm_ledger_core::calibrate::{calibrate as fit, Metric, Observation};
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::scenario::scenario_inputs;
use llm_ledger_core::ScenarioRequest;
use llm_ledger_report::calibrate::CalibrateReport;
use llm_ledger_report::{Format, Report};
use std::path::{Path, PathBuf};

/// The column naming the operator of a per-kernel row (`op_s`, `op_ms`, `op_us`).
pub const OP_COLUMN: &str = "op";

/// Most measurement rows in one file.
pub const MAX_ROWS: usize = 10_000;

/// Read the measurements, fit, report (and write the profile with `--out`).
pub fn calibrate(args: &CalibrateArgs) -> Result<String> {
    let format: Format = args.output.format.0;
    let read: Vec<PathBuf> = [Some(&args.file), args.gpu_file.as_ref(), args.preset_file.as_ref()]
        .into_iter()
        .flatten()
        .map(PathBuf::from)
        .collect();
    check_outputs(&[("--out", "the profile", args.out.as_ref())], &read)?;
    let text = read_text(Path::new(&args.file), "measurements")?;
    let catalog = catalog(args.gpu_file.as_deref(), args.preset_file.as_deref())?;
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).flexible(false).from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .with_context(|| format!("invalid `{}`: not a CSV with a header line", args.file))?
        .iter()
        .map(str::to_string)
        .collect();
    let metric_columns: Vec<usize> = (0..header.len()).filter(|&i| Metric::of_column(&header[i]).is_some()).collect();
    let metric_names: Vec<&str> = Metric::COLUMNS.iter().map(|(n, ..)| *n).collect();
    let [m] = metric_columns[..] else {
        bail!(
            "invalid `{}`: the header needs exactly one measurement column ({}), found {}",
            args.file,
            metric_names.join(", "),
            metric_columns.len()
        );
    };
    let op_column = header.iter().position(|h| h == OP_COLUMN);
    for (i, h) in header.iter().enumerate() {
        if i != m && Some(i) != op_column && !scenario_inputs().iter().any(|s| s.name == h) {
            let names: Vec<&str> = scenario_inputs().iter().map(|s| s.name).collect();
            bail!(
                "unknown column `{h}` in `{}`; accepted: a measurement ({}), `{OP_COLUMN}` (the operator of a per-kernel row) and scenario inputs ({})",
                args.file,
                metric_names.join(", "),
                names.join(", ")
            );
        }
    }
    let (metric, to_si) = Metric::of_column(&header[m]).expect("a measurement column");
    let mut observations = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let line = row + 2;
        let record = record.with_context(|| format!("invalid `{}` line {line}", args.file))?;
        if observations.len() == MAX_ROWS {
            bail!("invalid `{}`: more than {MAX_ROWS} measurement rows", args.file);
        }
        let raw = &record[m];
        let measured = raw.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0).with_context(|| {
            format!("invalid `{}` line {line}: `{}` = {raw:?} (a positive number)", args.file, header[m])
        })?;
        let op = match op_column.map(|c| &record[c]).filter(|v| !v.is_empty()) {
            Some(v) => Some(v.parse().with_context(|| format!("invalid `{}` line {line}", args.file))?),
            None => None,
        };
        let pairs = header
            .iter()
            .zip(record.iter())
            .enumerate()
            .filter(|(i, (_, v))| *i != m && Some(*i) != op_column && !v.is_empty());
        let req: ScenarioRequest = from_pairs(pairs.map(|(_, (k, v))| (k.as_str(), v)))
            .with_context(|| format!("invalid `{}` line {line}", args.file))?;
        let scenario = req.resolve(&catalog).with_context(|| format!("in `{}` line {line}", args.file))?;
        observations.push(Observation { scenario, metric, op, measured: measured * to_si });
    }
    if observations.len() < 3 {
        bail!("invalid `{}`: {} measurement rows (at least 3, one per constant fitted)", args.file, observations.len());
    }
    let calibration = fit(&observations).with_context(|| format!("in `{}`", args.file))?;
    let mut report = CalibrateReport { file: args.file.clone(), calibration, written: None };
    if let Some(out) = &args.out {
        llm_ledger_files::output::write(Path::new(out), "the profile", report.profile_toml().as_bytes())?;
        report.written = Some(out.clone());
    }
    Ok(report.render(format)?)
}
