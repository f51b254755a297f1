//! `calibrate`: the rules of its inputs that are not about reading files — a CSV of scenario rows
//! into observations ([`csv_rows`]: its header, measurement column, operator column and row
//! limit), a benchmark run's `batch`, and the fit of the observations as the report. The CLI reads
//! the files and the benchmark outputs (`llm_ledger_files::benchmarks`) and hands their text here.

use crate::{CommandError, Input};
use anyhow::{bail, Context};
use llm_ledger_core::calibrate::{calibrate as fit, Metric, Observation, CONSTANTS};
use llm_ledger_core::error::Text;
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
    // A byte-order mark (editors on Windows write one) is not part of the first column's name.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        bail!(
            "invalid `{file}`: the file is empty; expected a CSV with a header line naming scenario inputs and one measurement column ({}), then a row per measurement",
            Metric::COLUMNS.iter().map(|(n, ..)| *n).collect::<Vec<_>>().join(", ")
        );
    }
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
        // Each measurement inside its physical range, refused by its column (`step_ms` = 1e-308)
        // before anything is fitted to it.
        let range = Metric::column_range(&header[m]).expect("a measurement column has a range");
        let measured = raw.parse::<f64>().ok().filter(|v| range.contains(*v)).with_context(|| {
            format!(
                "invalid `{file}` line {line}: `{}` = \"{}\" ({}: {})",
                header[m],
                llm_ledger_core::error::echo(raw),
                range.what,
                range.expected()
            )
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

/// Whether `report`'s profile may be written to a file (`out`): not when the rows determined
/// none of its constants, for then every value in it is wherever the fit left it and applying it
/// would move every step on no evidence. The error says what rows would determine them.
pub fn check_writable(report: &CalibrateReport) -> Result<(), CommandError> {
    let c = &report.calibration;
    if c.determined.iter().any(|d| *d) {
        return Ok(());
    }
    let message = Text::template("invalid `{out}`: ").plain(&format!(
        "no profile written: the {} rows of `{}` determine none of {} (rows of one shape, or rows that repeat one another, cannot tell a scale from a per-kernel or per-step cost); measure steps of different shapes: decode at several batches and contexts (memory_scale, kernel_s), long prefills (compute_scale), whole steps or serving runs beside per-kernel rows (host_step_s)",
        c.rows.len(),
        report.file,
        CONSTANTS.join(", ")
    ));
    Err(CommandError::Input(Error::input("out", message)))
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
        assert_eq!(
            e("batch,step_ms\n1,-2\n"),
            "invalid `m.csv` line 2: `step_ms` = \"-2\" (a step time in milliseconds, 1 µs to 1 hour: a number in [0.001, 3.6e6])"
        );
        // Physical ranges, by the column's unit: 1e-308 ms once ended in "internal error:
        // non-finite value".
        assert_eq!(
            e("batch,step_ms\n1,1e-308\n"),
            "invalid `m.csv` line 2: `step_ms` = \"1e-308\" (a step time in milliseconds, 1 µs to 1 hour: a number in [0.001, 3.6e6])"
        );
        assert_eq!(
            e("batch,tokens_per_s\n1,1e308\n"),
            "invalid `m.csv` line 2: `tokens_per_s` = \"1e308\" (a throughput in tokens per second: a number in [0.001, 1e15])"
        );
        assert!(e("batch,step_s\n1,3601\n")
            .contains("`step_s` = \"3601\" (a step time in seconds, 1 µs to 1 hour: a number in [1e-6, 3600])"));
        assert!(e("op,op_us\nq_proj,1e-4\n").contains("(one kernel's time in microseconds, 1 ns to 1 hour"));
        // A byte-order mark is not part of the header; an empty file says what it should hold.
        assert_eq!(csv_rows("m.csv", "\u{feff}batch,step_ms\n1,7.5\n", &c).unwrap().len(), 1);
        assert!(e("").starts_with("invalid `m.csv`: the file is empty; expected a CSV with a header line"));
        let many = format!("step_ms\n{}", "1\n".repeat(MAX_ROWS + 1));
        assert_eq!(e(&many), format!("invalid `m.csv`: more than {MAX_ROWS} measurement rows"));
    }

    /// Four identical rows determine no constant: the report is shown, but no profile is
    /// written from it (it moved every step 12.7 → 15.0 ms with no note); one determined constant
    /// is enough to write one.
    #[test]
    fn a_profile_that_determines_nothing_is_not_written() {
        let c = Catalog::builtin();
        let rows = csv_rows("same.csv", "batch,ctx,tpot_ms\n4,2048,8\n4,2048,8\n4,2048,8\n4,2048,8\n", &c).unwrap();
        let report = run(&rows, "same.csv", false).unwrap();
        assert_eq!(report.calibration.determined, [false; 4]);
        let e = check_writable(&report).unwrap_err();
        assert_eq!(e.field(), Some("out"));
        let message = e.to_string();
        assert!(
            message.starts_with("invalid `out`: no profile written: the 4 rows of `same.csv` determine none of memory_scale, compute_scale, kernel_s, host_step_s"),
            "{message}"
        );
        let text = "batch,ctx,step_ms\n1,2048,7.3\n8,1024,7.6\n4,8192,8.4\n16,512,7.9\n2,4096,7.9\n";
        let report = run(&csv_rows("m.csv", text, &c).unwrap(), "m.csv", false).unwrap();
        assert!(report.calibration.determined[0], "{:?}", report.calibration);
        assert!(check_writable(&report).is_ok());
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
