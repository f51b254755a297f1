//! Calibrating the expected clock to a user's own measurements (issue 13, item 5).
//!
//! Each observation is a scenario and one measured quantity of its step: the step time, its
//! tokens per second (decode: output tokens; prefill: prompt tokens), the time per output token
//! (a decode step) or the time to first token (a prefill step). The three constants of a
//! [`Profile`] (memory-bound scale, compute-bound scale, seconds per kernel) are fitted by
//! [`crate::fit::fit`] — robust least squares in log space — so that the ledger's step under the
//! profile matches the measurements. Three constants with a physical meaning, never one per row.

use crate::clock::Profile;
use crate::error::{Error, Result};
use crate::fit::{fit, Fitted, Parameter};
use crate::ledger::summarise;
use crate::scenario::Scenario;
use crate::workload::Phase;
use serde::Serialize;
use std::str::FromStr;

/// What was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The step time, seconds.
    StepS,
    /// Tokens per second of the step: decode output tokens (one per sequence), prefill prompt tokens.
    TokensPerS,
    /// Time per output token, seconds (a decode step).
    TpotS,
    /// Time to first token, seconds (a prefill step).
    TtftS,
}

impl Metric {
    /// Every metric by its column name, and the factor from the column's unit to SI.
    pub const COLUMNS: [(&'static str, Metric, f64); 7] = [
        ("step_s", Metric::StepS, 1.0),
        ("step_ms", Metric::StepS, 1e-3),
        ("tokens_per_s", Metric::TokensPerS, 1.0),
        ("tpot_s", Metric::TpotS, 1.0),
        ("tpot_ms", Metric::TpotS, 1e-3),
        ("ttft_s", Metric::TtftS, 1.0),
        ("ttft_ms", Metric::TtftS, 1e-3),
    ];

    /// The metric's name in SI units (`tokens_per_s`, `tpot_s`), as in JSON.
    pub fn name(self) -> &'static str {
        Metric::COLUMNS
            .iter()
            .find(|(_, m, f)| *m == self && *f == 1.0)
            .map(|(n, ..)| *n)
            .expect("every metric has an SI column")
    }

    /// The metric of a column name, with its factor to SI.
    pub fn of_column(name: &str) -> Option<(Metric, f64)> {
        Metric::COLUMNS.iter().find(|(n, ..)| *n == name).map(|(_, m, f)| (*m, *f))
    }

    /// The metric `sc`'s step predicts, in SI units (seconds, or tokens per second).
    pub fn predict(self, sc: &Scenario) -> f64 {
        let s = summarise(sc);
        match self {
            Metric::StepS | Metric::TpotS | Metric::TtftS => s.step_time_s(),
            Metric::TokensPerS => sc.workload.step_tokens() / s.step_time_s(),
        }
    }

    /// The phase the metric needs, if any.
    fn phase(self) -> Option<Phase> {
        match self {
            Metric::TpotS => Some(Phase::Decode),
            Metric::TtftS => Some(Phase::Prefill),
            _ => None,
        }
    }
}

impl FromStr for Metric {
    type Err = Error;
    fn from_str(s: &str) -> Result<Metric> {
        Metric::of_column(s)
            .map(|(m, _)| m)
            .ok_or_else(|| Error::unknown("measurement column", s, Metric::COLUMNS.iter().map(|(n, ..)| *n)))
    }
}

/// One measured row.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The scenario measured (with the clock and engine it ran under).
    pub scenario: Scenario,
    /// What was measured.
    pub metric: Metric,
    /// The value, SI units (seconds or tokens per second).
    pub measured: f64,
}

/// One row's fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CalibrationRow {
    /// What was measured.
    pub metric: Metric,
    /// Measured, SI units.
    pub measured: f64,
    /// The clock's prediction before calibration.
    pub predicted_before: f64,
    /// The prediction under the fitted profile.
    pub predicted_after: f64,
    /// `predicted_before ÷ measured − 1`.
    pub error_before: f64,
    /// `predicted_after ÷ measured − 1`.
    pub error_after: f64,
    /// The row's robust weight in the fit (1 = inlier; small = treated as an outlier).
    pub weight: f64,
}

/// A calibration: the fitted profile, each constant's relative standard error and the rows.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The fitted profile.
    pub profile: Profile,
    /// Relative standard errors of `memory_scale`, `compute_scale`, `kernel_s` (`None` when the
    /// rows do not determine it, e.g. no compute-bound operator, or above 100 %).
    pub relative_std_errors: [Option<f64>; 3],
    /// Rows, in input order.
    pub rows: Vec<CalibrationRow>,
    /// Median |error| before and after.
    pub median_abs_error_before: f64,
    /// Median |error| after.
    pub median_abs_error_after: f64,
}

/// Fit a [`Profile`] to `observations` (module docs). Each row must run on the measured clock
/// (a profile does not adjust the roofline), and a TPOT row must be a decode step, a TTFT row a
/// prefill step; an error names the row (1-based, as in the file's data lines).
pub fn calibrate(observations: &[Observation]) -> Result<Calibration> {
    for (i, o) in observations.iter().enumerate() {
        if o.scenario.effective_clock().is_roofline() {
            return Err(Error::invalid(
                format!("row {}", i + 1),
                "time_model roofline",
                "a row on the measured clock: a profile adjusts the expected time, not the roofline",
            ));
        }
        if let Some(p) = o.metric.phase().filter(|p| *p != o.scenario.workload.phase) {
            return Err(Error::invalid(
                format!("row {}", i + 1),
                o.scenario.workload.phase,
                format!("phase {p} for this measurement"),
            ));
        }
    }
    let with = |o: &Observation, t: &[f64]| {
        let profile = Profile { memory_scale: t[0], compute_scale: t[1], kernel_s: t[2] };
        Scenario { profile, ..o.scenario.clone() }
    };
    // Log-space fit: kernel_s must stay positive, so it starts at 1 µs and may fall to 1 ns.
    let params = [
        Parameter {
            name: "memory_scale".into(),
            start: 1.0,
            min: crate::clock::profile::SCALE_RANGE.0,
            max: crate::clock::profile::SCALE_RANGE.1,
        },
        Parameter {
            name: "compute_scale".into(),
            start: 1.0,
            min: crate::clock::profile::SCALE_RANGE.0,
            max: crate::clock::profile::SCALE_RANGE.1,
        },
        Parameter { name: "kernel_s".into(), start: 1e-6, min: 1e-9, max: crate::clock::profile::MAX_KERNEL_S },
    ];
    let measured: Vec<f64> = observations.iter().map(|o| o.measured).collect();
    let predict = |t: &[f64], i: usize| {
        let o = &observations[i];
        let v = o.metric.predict(&with(o, t));
        // The fit compares times: a throughput row is compared through its inverse.
        if o.metric == Metric::TokensPerS {
            1.0 / v
        } else {
            v
        }
    };
    let as_time: Vec<f64> = observations
        .iter()
        .zip(&measured)
        .map(|(o, m)| if o.metric == Metric::TokensPerS { 1.0 / m } else { *m })
        .collect();
    let f: Fitted = fit(&params, &as_time, predict)?;
    let profile = Profile::new(f.values[0], f.values[1], f.values[2])?;
    let rows: Vec<CalibrationRow> = observations
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let before = o.metric.predict(&Scenario { profile: Profile::IDENTITY, ..o.scenario.clone() });
            let after = o.metric.predict(&Scenario { profile, ..o.scenario.clone() });
            CalibrationRow {
                metric: o.metric,
                measured: o.measured,
                predicted_before: before,
                predicted_after: after,
                error_before: before / o.measured - 1.0,
                error_after: after / o.measured - 1.0,
                weight: f.weights[i],
            }
        })
        .collect();
    let median = |e: Vec<f64>| {
        let mut a: Vec<f64> = e.iter().map(|v| v.abs()).collect();
        a.sort_by(f64::total_cmp);
        a[a.len() / 2]
    };
    Ok(Calibration {
        profile,
        relative_std_errors: [0, 1, 2].map(|k| Some(f.relative_std_errors[k]).filter(|e| e.is_finite() && *e <= 1.0)),
        median_abs_error_before: median(rows.iter().map(|r| r.error_before).collect()),
        median_abs_error_after: median(rows.iter().map(|r| r.error_after).collect()),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::scenario;

    fn rows(truth: Profile) -> Vec<Observation> {
        let mut out = Vec::new();
        for (model, phase, batch, ctx, metric) in [
            ("llama-3-8b", "decode", "1", "2048", Metric::TpotS),
            ("llama-3-8b", "decode", "64", "4096", Metric::StepS),
            ("llama-3-8b", "decode", "256", "1024", Metric::TokensPerS),
            ("llama-3-8b", "prefill", "1", "512", Metric::TtftS),
            ("llama-3-8b", "prefill", "4", "4096", Metric::TtftS),
            ("llama-3.1-70b", "decode", "8", "8192", Metric::TpotS),
            ("llama-3.1-70b", "prefill", "2", "2048", Metric::StepS),
            ("mixtral-8x7b", "decode", "32", "2048", Metric::TokensPerS),
            ("llama-3-8b", "decode", "16", "512", Metric::StepS),
        ] {
            let sc = scenario(&[("model", model), ("phase", phase), ("batch", batch), ("ctx", ctx), ("gpu", "h200")]);
            let measured = metric.predict(&Scenario { profile: truth, ..sc.clone() });
            out.push(Observation { scenario: sc, metric, measured });
        }
        out
    }

    /// The round trip: measurements generated from known constants are recovered within 2 %.
    #[test]
    fn measurements_from_known_constants_are_recovered_within_two_percent() {
        let truth = Profile { memory_scale: 1.15, compute_scale: 0.9, kernel_s: 3e-6 };
        let c = calibrate(&rows(truth)).unwrap();
        let p = c.profile;
        assert!((p.memory_scale / 1.15 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.compute_scale / 0.9 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.kernel_s / 3e-6 - 1.0).abs() < 0.02, "{p:?}");
        assert!(c.median_abs_error_after < 1e-3 && c.median_abs_error_before > 0.05, "{c:?}");
    }

    #[test]
    fn rows_the_profile_cannot_describe_are_refused_by_row() {
        let mut r = rows(Profile::IDENTITY);
        r[3].metric = Metric::TpotS;
        assert!(calibrate(&r).unwrap_err().to_string().contains("row 4"));
        let mut r = rows(Profile::IDENTITY);
        r[0].scenario = scenario(&[("time_model", "roofline")]);
        assert!(calibrate(&r).unwrap_err().to_string().contains("row 1"));
        assert!("latency".parse::<Metric>().unwrap_err().to_string().contains("step_ms"));
    }
}
