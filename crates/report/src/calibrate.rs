//! The `calibrate` report: the fitted profile with its uncertainty, and each row's error before and
//! after.
//!
//! JSON keys (stable): `file` (the measurement files, joined by `, `), `profile` (`memory_scale`,
//! `compute_scale`, `kernel_s`, `host_step_s`), `relative_std_errors` (the same four, as
//! fractions; `null` when the rows do not determine one: no row moves it, the rows cannot tell it
//! from another, or its error is over 100 %), `determined` (the same four: `false` where the error
//! is `null`), `median_abs_error_before`, `median_abs_error_after`, `rows[]` (`source`, `metric`,
//! `op` for a per-kernel row, `measured`, `predicted_before`, `predicted_after`, `error_before`,
//! `error_after`, `weight`), `written` (the profile file, if one was written). CSV: the rows. The
//! table shows a `source` column when the rows come from more than one file or from a benchmark's
//! JSON.

use crate::human;
use crate::render::{HumanTable, Report};
use llm_ledger_core::calibrate::{Calibration, CalibrationRow, Metric, CONSTANTS};
use serde::Serialize;

/// The `calibrate` report.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrateReport {
    /// The measurement files, joined by `, `.
    pub file: String,
    /// The fit.
    #[serde(flatten)]
    pub calibration: Calibration,
    /// The profile file written, if any.
    pub written: Option<String>,
    /// Whether the table shows each row's source (rows from several files, or from a benchmark's
    /// JSON, whose row order alone does not say which measurement a row is).
    #[serde(skip)]
    pub show_sources: bool,
}

impl CalibrateReport {
    /// The profile as a file `--profile` reads, with the fit recorded under `[fit]` and a
    /// comment on each constant the rows do not determine.
    pub fn profile_toml(&self) -> String {
        let c = &self.calibration;
        let p = c.profile;
        let e = |k: usize| match c.relative_std_errors[k] {
            Some(v) if c.determined[k] => format!("{v:.4}"),
            _ => "\"undetermined\"".to_string(),
        };
        let notes: String = CONSTANTS
            .iter()
            .enumerate()
            .filter(|(k, _)| !c.determined[*k])
            .map(|(_, name)| {
                format!(
                    "# {name}: undetermined by these rows (its value is where the fit left it, not a measurement)\n"
                )
            })
            .collect();
        let errors: String =
            CONSTANTS.iter().enumerate().map(|(k, name)| format!("relative_std_error_{name} = {}\n", e(k))).collect();
        format!(
            "# llm-ledger calibration profile, fitted by `llm-ledger calibrate {}`.\n\
             # t' = t × memory_scale (memory-bound) or × compute_scale (compute-bound), + kernel_s per kernel;\n\
             # each step waits host_step_s more on the host.\n\
             {notes}memory_scale = {:.6}\ncompute_scale = {:.6}\nkernel_s = {:.6e}\nhost_step_s = {:.6e}\n\n[fit]\nrows = {}\n\
             {errors}median_abs_error_before = {:.4}\nmedian_abs_error_after = {:.4}\n",
            self.file.replace(", ", " "),
            p.memory_scale,
            p.compute_scale,
            p.kernel_s,
            p.host_step_s,
            c.rows.len(),
            c.median_abs_error_before,
            c.median_abs_error_after,
        )
    }
}

/// A measured or predicted value in its unit.
fn value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::TokensPerS => format!("{} tok/s", human::sig3(v)),
        _ => human::seconds(v),
    }
}

/// `± x %`, or `undetermined by these rows`.
fn uncertainty(determined: bool, v: Option<f64>) -> String {
    match v {
        Some(v) if determined => format!("± {}", human::percent(v)),
        _ => "undetermined by these rows".into(),
    }
}

impl Report for CalibrateReport {
    type CsvRow = CalibrationRow;

    fn csv_rows(&self) -> Vec<CalibrationRow> {
        self.calibration.rows.clone()
    }

    fn human(&self) -> HumanTable {
        let c = &self.calibration;
        let p = c.profile;
        let signed = |e: f64| format!("{:+.1} %", e * 100.0);
        let rows = c
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut row = vec![(i + 1).to_string()];
                if self.show_sources {
                    row.push(r.source.clone());
                }
                row.extend([
                    match r.op {
                        Some(op) => format!("{} {}", r.metric.name(), op.name()),
                        None => r.metric.name().to_string(),
                    },
                    value(r.metric, r.measured),
                    value(r.metric, r.predicted_before),
                    signed(r.error_before),
                    value(r.metric, r.predicted_after),
                    signed(r.error_after),
                    format!("{:.2}", r.weight),
                ]);
                row
            })
            .collect();
        let mut footer = vec![
            format!("memory_scale  {:.4}  ({})", p.memory_scale, uncertainty(c.determined[0], c.relative_std_errors[0])),
            format!("compute_scale {:.4}  ({})", p.compute_scale, uncertainty(c.determined[1], c.relative_std_errors[1])),
            format!(
                "kernel_s      {}  ({})",
                human::seconds(p.kernel_s),
                uncertainty(c.determined[2], c.relative_std_errors[2])
            ),
            format!(
                "host_step_s   {}  ({})",
                human::seconds(p.host_step_s),
                uncertainty(c.determined[3], c.relative_std_errors[3])
            ),
            format!(
                "median |error| {} before, {} after; {} constants fitted on {} rows (Huber-weighted least squares in log space)",
                human::percent(c.median_abs_error_before),
                human::percent(c.median_abs_error_after),
                CONSTANTS.len(),
                c.rows.len()
            ),
        ];
        footer.push(match &self.written {
            Some(f) => format!("profile written to {f}: use it with --profile {f}"),
            None => "write the profile with --out FILE, then use it with --profile FILE".into(),
        });
        let mut header = vec!["row"];
        if self.show_sources {
            header.push("source");
        }
        header.extend(["metric", "measured", "before", "error", "after", "error", "weight"]);
        let shift = usize::from(self.show_sources);
        HumanTable {
            title: vec![format!("calibration of the expected clock to {}", self.file)],
            header: header.into_iter().map(String::from).collect(),
            rows,
            right_aligned: [0, 2, 3, 4, 5, 6, 7].into_iter().map(|k| if k == 0 { 0 } else { k + shift }).collect(),
            footer,
            // The source goes first when the table must narrow: the row number still says which.
            priority: if self.show_sources { [0, 3, 1, 1, 1, 1, 1, 1, 1].to_vec() } else { vec![] },
        }
    }
}
