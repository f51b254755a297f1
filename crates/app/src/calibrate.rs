//! `calibrate`: the rules of its inputs that are not about reading files — a CSV of scenario rows
//! into observations ([`csv_rows`]: its header, measurement column, operator column and row
//! limit), a benchmark run's `batch`, and the fit of the observations as the report. The CLI reads
//! the files and the benchmark outputs (`llm_ledger_files::benchmarks`) and hands their text here.

use crate::{CommandError, Input};
use anyhow::{bail, Context};
use llm_ledger_core::calibrate::{calibrate as fit, Metric, Observation, CONSTANTS};
use llm_ledger_core::pairs::from_pairs;
use llm_ledger_core::scenario::{parse_u64, scenario_inputs};
use llm_ledger_core::{Catalog, Error, ScenarioRequest};
use llm_ledger_report::calibrate::CalibrateReport;
use std::path::Path;

/// The column naming the operator of a per-kernel row (`op_s`, `op_ms`, `op_us`).
pub const OP_COLUMN: &str = "op";

/// Most measurement rows in one file.
pub const MAX_ROWS: usize = 10_000;

/// `calibrate`'s inputs besides the scenario (whose flags describe the runs of benchmark files).
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::file(
            "files",
            "CSVs of scenario columns and one measurement, or vLLM, genai-perf or trtllm-bench JSON",
            "the measurements",
        ),
        Input::text(
            "format_in",
            None,
            "csv, vllm, genai-perf or trtllm-bench (default: detected)",
            "read every file as this format",
        ),
        Input::text("batch", None, "a whole number ≥ 1", "a benchmark run's concurrency where its file states none"),
    ];
    INPUTS
}

/// A benchmark run's decode batch (`batch`) where its file does not state one: a whole number ≥ 1.
pub fn batch(text: Option<&str>) -> Result<Option<u64>, Error> {
    let batch = text.map(|b| parse_u64("batch", b)).transpose()?;
    if batch == Some(0) {
        return Err(Error::invalid("batch", 0, "a run's concurrency: a whole number ≥ 1"));
    }
    Ok(batch)
}

/// The observations of `text`, a CSV of scenario rows read from `file`: a header naming scenario
/// inputs (as the flags without `--`), exactly one measurement column ([`Metric::COLUMNS`]) and
/// optionally [`OP_COLUMN`]; at most [`MAX_ROWS`] rows, each resolved against `catalog`. Errors
/// name the file and the line (about the input `files`).
pub fn csv_rows(file: &str, text: &str, catalog: &Catalog) -> Result<Vec<Observation>, CommandError> {
    csv_observations(file, text, catalog).map_err(|error| CommandError::File { field: "files", error })
}

fn csv_observations(file: &str, text: &str, catalog: &Catalog) -> anyhow::Result<Vec<Observation>> {
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

/// Fit the expected clock's constants to `observations` (at least one row per constant) from the
/// files `label` names, as the report (`show_sources`: whether its table shows each row's source).
pub fn run(observations: &[Observation], label: &str, show_sources: bool) -> Result<CalibrateReport, CommandError> {
    let file = |error: anyhow::Error| CommandError::File { field: "files", error };
    if observations.len() < CONSTANTS.len() {
        return Err(file(anyhow::anyhow!(
            "invalid `{label}`: {} measurement rows (at least {}, one per constant fitted)",
            observations.len(),
            CONSTANTS.len()
        )));
    }
    let calibration = fit(observations).with_context(|| format!("in `{label}`")).map_err(file)?;
    Ok(CalibrateReport { file: label.to_string(), calibration, written: None, show_sources })
}

/// A file's name without its folders, for the table's source column.
pub fn short_name(file: &str) -> String {
    Path::new(file).file_name().map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two decode rows of the default scenario at batches 1 and 8, with their sources.
    #[test]
    fn a_csv_becomes_one_observation_per_row_with_its_line() {
        let text = "batch,step_ms\n1,7.5\n8, 8.0\n";
        let rows = csv_rows("dir/m.csv", text, &Catalog::builtin()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].scenario.workload.contexts.batch(), 8);
        assert_eq!((rows[0].measured, rows[1].source.as_str()), (7.5e-3, "m.csv:3"));
    }

    /// Each CSV refusal names the file (and the line), about the input `files`.
    #[test]
    fn csv_refusals_name_the_file_and_line() {
        let c = Catalog::builtin();
        let e = |text: &str| {
            let e = csv_rows("m.csv", text, &c).unwrap_err();
            assert_eq!(e.field(), Some("files"));
            e.to_string()
        };
        assert!(e("batch,ctx\n1,2\n").starts_with("invalid `m.csv`: the header needs exactly one measurement column"));
        assert!(e("batch,step_ms,colour\n1,2,red\n").starts_with("unknown column `colour` in `m.csv`; accepted:"));
        assert_eq!(e("batch,step_ms\n1,-2\n"), "invalid `m.csv` line 2: `step_ms` = \"-2\" (a positive number)");
        let many = format!("step_ms\n{}", "1\n".repeat(MAX_ROWS + 1));
        assert_eq!(e(&many), format!("invalid `m.csv`: more than {MAX_ROWS} measurement rows"));
    }

    #[test]
    fn batch_is_a_whole_number_of_at_least_one_and_too_few_rows_are_refused() {
        assert_eq!(batch(Some("4")).unwrap(), Some(4));
        assert_eq!(batch(None).unwrap(), None);
        assert_eq!(
            batch(Some("0")).unwrap_err().to_string(),
            "invalid `batch`: 0 (a run's concurrency: a whole number ≥ 1)"
        );
        let e = run(&[], "m.csv", false).unwrap_err();
        assert_eq!(
            (e.field(), e.to_string()),
            (
                Some("files"),
                format!("invalid `m.csv`: 0 measurement rows (at least {}, one per constant fitted)", CONSTANTS.len())
            )
        );
    }
}
