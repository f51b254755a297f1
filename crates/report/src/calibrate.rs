//! The `calibrate` report: the fitted profile with its uncertainty, and each row's error before and
//! after.
//!
//! JSON keys (stable): `file`, `profile` (`memory_scale`, `compute_scale`, `kernel_s`),
//! `relative_std_errors` (the same three, as fractions; `null` when the rows do not determine one:
//! no row moves it, the rows cannot tell it from another, or its error is over 100 %),
//! `determined` (the same three: `false` where the error is `null`),
//! `median_abs_error_before`, `median_abs_error_after`, `rows[]` (`metric`, `op` for a per-kernel row, `measured`,
//! `predicted_before`, `predicted_after`, `error_before`, `error_after`, `weight`), `written`
//! (the profile file, if one was written). CSV: the rows.

use crate::human;
use crate::render::{HumanTable, Report};
use llm_ledger_core::calibrate::{Calibration, CalibrationRow, Metric};
use serde::Serialize;

/// The `calibrate` report.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrateReport {
    /// The measurements file.
    pub file: String,
    /// The fit.
    #[serde(flatten)]
    pub calibration: Calibration,
    /// The profile file written, if any.
    pub written: Option<String>,
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
        format!(
            "# llm-ledger calibration profile, fitted by `llm-ledger calibrate {}`.\n\
             # t' = t × memory_scale (memory-bound) or × compute_scale (compute-bound), + kernel_s per kernel.\n\
             {notes}memory_scale = {:.6}\ncompute_scale = {:.6}\nkernel_s = {:.6e}\n\n[fit]\nrows = {}\n\
             relative_std_error_memory_scale = {}\nrelative_std_error_compute_scale = {}\nrelative_std_error_kernel_s = {}\n\
             median_abs_error_before = {:.4}\nmedian_abs_error_after = {:.4}\n",
            self.file,
            p.memory_scale,
            p.compute_scale,
            p.kernel_s,
            c.rows.len(),
            e(0),
            e(1),
            e(2),
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

/// The fitted constants, in the order of [`Calibration::relative_std_errors`].
const CONSTANTS: [&str; 3] = ["memory_scale", "compute_scale", "kernel_s"];

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
                vec![
                    (i + 1).to_string(),
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
                ]
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
                "median |error| {} before, {} after; 3 constants fitted on {} rows (Huber-weighted least squares in log space)",
                human::percent(c.median_abs_error_before),
                human::percent(c.median_abs_error_after),
                c.rows.len()
            ),
        ];
        footer.push(match &self.written {
            Some(f) => format!("profile written to {f}: use it with --profile {f}"),
            None => "write the profile with --out FILE, then use it with --profile FILE".into(),
        });
        HumanTable {
            title: vec![format!("calibration of the expected clock to {}", self.file)],
            header: ["row", "metric", "measured", "before", "error", "after", "error", "weight"]
                .map(String::from)
                .to_vec(),
            rows,
            right_aligned: vec![0, 2, 3, 4, 5, 6, 7],
            footer,
            priority: vec![],
        }
    }
}
