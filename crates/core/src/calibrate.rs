//! Calibrating the expected clock to a user's own measurements.
//!
//! Each observation is a scenario and one measured quantity of its step: the step time, its
//! tokens per second (decode: output tokens; prefill: prompt tokens), the time per output token
//! (a decode step), the time to first token (a prefill step), or one operator's kernel time (a
//! profiler's per-kernel row: the ledger row's time ÷ its instances, i.e. one layer's kernel). The three constants of a
//! [`Profile`] (memory-bound scale, compute-bound scale, seconds per kernel) are fitted by
//! [`crate::fit::fit`] — robust least squares in log space — so that the ledger's step under the
//! profile matches the measurements. Three constants with a physical meaning, never one per row.

use crate::clock::Profile;
use crate::error::{Error, Result};
use crate::fit::{fit, Fitted, Parameter};
use crate::kinds::OpKind;
use crate::ledger::{summarise, Ledger};
use crate::limits::{self, Range};
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
    /// One operator's kernel time, seconds: its ledger row's time ÷ the row's instances (one
    /// layer's kernel, as a profiler lists it); the observation names the operator.
    OpS,
}

impl Metric {
    /// Every metric by its column name, and the factor from the column's unit to SI.
    pub const COLUMNS: [(&'static str, Metric, f64); 10] = [
        ("step_s", Metric::StepS, 1.0),
        ("step_ms", Metric::StepS, 1e-3),
        ("tokens_per_s", Metric::TokensPerS, 1.0),
        ("tpot_s", Metric::TpotS, 1.0),
        ("tpot_ms", Metric::TpotS, 1e-3),
        ("ttft_s", Metric::TtftS, 1.0),
        ("ttft_ms", Metric::TtftS, 1e-3),
        ("op_s", Metric::OpS, 1.0),
        ("op_ms", Metric::OpS, 1e-3),
        ("op_us", Metric::OpS, 1e-6),
    ];

    /// The physical range of a measurement given in the column `name` (one of [`Metric::COLUMNS`]),
    /// in the column's unit: a step, a TPOT or a TTFT between 1 µs and one hour (the range of
    /// `measure --step-ms`, [`limits::STEP_MS`], and of `--tpot-ms`, [`limits::TPOT_MS`]), a
    /// throughput in [`limits::TOKENS_PER_S`], one kernel between 1 ns and one hour. A value
    /// outside is not a measurement of a GPU step (a unit mixed up, a typo) and is refused by the
    /// column's name before anything is fitted to it. `None` for a name that is not a column.
    pub fn column_range(name: &str) -> Option<Range> {
        COLUMN_RANGES.iter().find(|r| r.name == name).copied()
    }

    /// [`Metric::column_range`] in SI units (seconds, or tokens per second).
    pub fn si_range(self) -> Range {
        Metric::column_range(self.name()).expect("every metric has an SI column")
    }

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

    /// The metric `sc`'s step predicts, in SI units (seconds, or tokens per second); `op` names
    /// the operator of an [`Metric::OpS`] row (`None`: no such row in the ledger, or no operator
    /// named).
    pub fn predict(self, sc: &Scenario, op: Option<OpKind>) -> Option<f64> {
        match self {
            Metric::StepS | Metric::TpotS | Metric::TtftS => Some(summarise(sc).step_time_s()),
            Metric::TokensPerS => Some(sc.workload.step_tokens() / summarise(sc).step_time_s()),
            Metric::OpS => {
                let ledger = Ledger::build(sc);
                let row = ledger.row(op?)?;
                Some(row.timing.time_s / row.instances as f64)
            }
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

/// A measurement column's physical range ([`Metric::column_range`]).
const fn column(name: &'static str, min: f64, max: f64, what: &'static str) -> Range {
    Range { name, min, min_open: false, max, what, given_as: "calibrate measurement column" }
}

/// Each measurement column's range, in its unit ([`Metric::column_range`]).
const COLUMN_RANGES: [Range; 10] = [
    column("step_s", 1e-6, 3600.0, "a step time in seconds, 1 µs to 1 hour"),
    column("step_ms", limits::STEP_MS.min, limits::STEP_MS.max, "a step time in milliseconds, 1 µs to 1 hour"),
    column("tokens_per_s", limits::TOKENS_PER_S.min, limits::TOKENS_PER_S.max, "a throughput in tokens per second"),
    column("tpot_s", 1e-6, 3600.0, "a time per output token in seconds, 1 µs to 1 hour"),
    column(
        "tpot_ms",
        limits::TPOT_MS.min,
        limits::TPOT_MS.max,
        "a time per output token in milliseconds, 1 µs to 1 hour",
    ),
    column("ttft_s", 1e-6, 3600.0, "a time to first token in seconds, 1 µs to 1 hour"),
    column(
        "ttft_ms",
        limits::STEP_MS.min,
        limits::STEP_MS.max,
        "a time to first token in milliseconds, 1 µs to 1 hour",
    ),
    column("op_s", 1e-9, 3600.0, "one kernel's time in seconds, 1 ns to 1 hour"),
    column("op_ms", 1e-6, 3.6e6, "one kernel's time in milliseconds, 1 ns to 1 hour"),
    column("op_us", 1e-3, 3.6e9, "one kernel's time in microseconds, 1 ns to 1 hour"),
];

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
    /// The operator of an [`Metric::OpS`] row (`None` for every other metric).
    pub op: Option<OpKind>,
    /// The value, SI units (seconds or tokens per second).
    pub measured: f64,
    /// Where the row came from, for the report (`rows.csv:3`, `run.json #1`: a CSV's line, a benchmark file's record);
    /// empty when no one asked.
    pub source: String,
}

impl Observation {
    /// What the clock predicts for this row under `sc` (this row's scenario, perhaps with
    /// another profile); checked by [`calibrate`] to exist.
    fn predict(&self, sc: &Scenario) -> f64 {
        self.metric.predict(sc, self.op).unwrap_or(f64::NAN)
    }
}

/// One row's fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationRow {
    /// Where the row came from ([`Observation::source`]).
    pub source: String,
    /// What was measured.
    pub metric: Metric,
    /// The operator of an `op_s` row (`null` for the others).
    pub op: Option<OpKind>,
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
    /// Relative standard errors of [`CONSTANTS`] (`None` when the rows do not determine it, e.g.
    /// no compute-bound operator, or above 100 %).
    pub relative_std_errors: [Option<f64>; 4],
    /// Whether the rows determine each of [`CONSTANTS`] (exactly when its
    /// error is not `None`): false when no row moves it, when the rows cannot tell it from another
    /// constant (rows that repeat one another; [`crate::fit`], "Undetermined constants"), or when
    /// its error is over 100 %. An undetermined constant's value is wherever the fit left it, not
    /// a measurement.
    pub determined: [bool; 4],
    /// Rows, in input order.
    pub rows: Vec<CalibrationRow>,
    /// Median |error| before and after.
    pub median_abs_error_before: f64,
    /// Median |error| after.
    pub median_abs_error_after: f64,
}

/// The fitted constants, in the order of [`Calibration::relative_std_errors`].
pub const CONSTANTS: [&str; 4] = ["memory_scale", "compute_scale", "kernel_s", "host_step_s"];

/// Where the fit starts `host_step_s`: 1 µs, small against any step, so that rows which do not
/// need host time leave it near its floor of 1 ns.
pub const HOST_STEP_START_S: f64 = 1e-6;

/// Fit a [`Profile`] to `observations` (module docs). Each row must run on the measured clock
/// (a profile does not adjust the roofline), and a TPOT row must be a decode step, a TTFT row a
/// prefill step; an error names the row (1-based, as in the file's data lines).
pub fn calibrate(observations: &[Observation]) -> Result<Calibration> {
    for (i, o) in observations.iter().enumerate() {
        let range = o.metric.si_range();
        if !range.contains(o.measured) {
            return Err(Error::invalid(
                format!("row {}", i + 1),
                format!("{} = {}", range.name, crate::error::compact_f64(o.measured)),
                format!("{}: a number in {}", range.what, range.interval()),
            ));
        }
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
        check_op(i, o)?;
    }
    let with = |o: &Observation, t: &[f64]| {
        let profile = Profile { memory_scale: t[0], compute_scale: t[1], kernel_s: t[2], host_step_s: t[3] };
        Scenario { profile, ..o.scenario.clone() }
    };
    // Log-space fit: kernel_s and host_step_s must stay positive, so each starts at 1 µs and may
    // fall to 1 ns.
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
        Parameter {
            name: "host_step_s".into(),
            start: HOST_STEP_START_S,
            min: 1e-9,
            max: crate::clock::profile::MAX_HOST_STEP_S,
        },
    ];
    let measured: Vec<f64> = observations.iter().map(|o| o.measured).collect();
    let predict = |t: &[f64], i: usize| {
        let o = &observations[i];
        let v = o.predict(&with(o, t));
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
    // Per-kernel rows alone do not see the host: the profile then adds no host time of its own.
    let host_moved = observations.iter().any(|o| o.metric != Metric::OpS);
    let host_step_s = if host_moved { f.values[3] } else { 0.0 };
    let profile = Profile::new(f.values[0], f.values[1], f.values[2])?.with_host_step_s(host_step_s)?;
    let rows: Vec<CalibrationRow> = observations
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let before = o.predict(&Scenario { profile: Profile::IDENTITY, ..o.scenario.clone() });
            let after = o.predict(&Scenario { profile, ..o.scenario.clone() });
            CalibrationRow {
                source: o.source.clone(),
                metric: o.metric,
                op: o.op,
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
    let relative_std_errors =
        [0, 1, 2, 3].map(|k| Some(f.relative_std_errors[k]).filter(|e| f.determined[k] && e.is_finite() && *e <= 1.0));
    Ok(Calibration {
        profile,
        relative_std_errors,
        determined: relative_std_errors.map(|e| e.is_some()),
        median_abs_error_before: median(rows.iter().map(|r| r.error_before).collect()),
        median_abs_error_after: median(rows.iter().map(|r| r.error_after).collect()),
        rows,
    })
}

/// An `op_s` row must name an operator that runs as a kernel of its own in the row's ledger
/// (one the engine fuses into its neighbour takes no time of its own: measure the kernel it
/// joins); any other row must not name one.
fn check_op(i: usize, o: &Observation) -> Result<()> {
    let row = format!("row {}", i + 1);
    match (o.metric, o.op) {
        (Metric::OpS, None) => Err(Error::invalid(row, "no op", "an `op` column naming the operator an op_s/op_ms/op_us row measures")),
        (Metric::OpS, Some(op)) => match o.metric.predict(&Scenario { profile: Profile::IDENTITY, ..o.scenario.clone() }, Some(op)) {
            None => Err(Error::invalid(row, format!("op {}", op.name()), "an operator in this scenario's ledger")),
            Some(t) if t <= 0.0 => Err(Error::invalid(
                row,
                format!("op {}", op.name()),
                "an operator in a kernel of its own: the engine fuses this one into its neighbour, so measure that kernel",
            )),
            Some(_) => Ok(()),
        },
        (_, Some(op)) => Err(Error::invalid(row, format!("op {}", op.name()), "an empty `op` for a whole-step measurement")),
        (_, None) => Ok(()),
    }
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
            let measured = metric.predict(&Scenario { profile: truth, ..sc.clone() }, None).unwrap();
            out.push(Observation { scenario: sc, metric, op: None, measured, source: String::new() });
        }
        out
    }

    /// The round trip: measurements generated from known constants, 1.5 ms of host time per step
    /// among them, are recovered within 2 %.
    #[test]
    fn measurements_from_known_constants_are_recovered_within_two_percent() {
        let truth = Profile { memory_scale: 1.15, compute_scale: 0.9, kernel_s: 3e-6, host_step_s: 1.5e-3 };
        let c = calibrate(&rows(truth)).unwrap();
        let p = c.profile;
        assert!((p.memory_scale / 1.15 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.compute_scale / 0.9 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.kernel_s / 3e-6 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.host_step_s / 1.5e-3 - 1.0).abs() < 0.02, "{p:?}");
        assert!(c.median_abs_error_after < 1e-3 && c.median_abs_error_before > 0.05, "{c:?}");
        assert_eq!(c.determined, [true; 4]);
    }

    /// Without host time in the measurements the fit leaves host_step_s at a negligible value:
    /// the other three are recovered as before.
    #[test]
    fn measurements_without_host_time_fit_none() {
        let truth = Profile { memory_scale: 1.15, compute_scale: 0.9, kernel_s: 3e-6, host_step_s: 0.0 };
        let c = calibrate(&rows(truth)).unwrap();
        let p = c.profile;
        assert!((p.memory_scale / 1.15 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.kernel_s / 3e-6 - 1.0).abs() < 0.02, "{p:?}");
        assert!(p.host_step_s < 1e-7, "{p:?}");
    }

    /// Four identical rows determine no constant: each is reported undetermined (no error
    /// estimate), never `± 0.0 %`.
    #[test]
    fn identical_rows_determine_no_constant() {
        let row = rows(Profile::IDENTITY).swap_remove(1);
        let c = calibrate(&[row.clone(), row.clone(), row.clone(), row]).unwrap();
        assert_eq!(c.determined, [false; 4], "{c:?}");
        assert_eq!(c.relative_std_errors, [None; 4]);
    }

    /// Per-kernel rows (a profiler's kernel times, one layer each): memory-bound GEMMs and norms
    /// in decode, compute-bound GEMMs in prefill, generated from known constants, recover them.
    fn kernel_rows(truth: Profile) -> Vec<Observation> {
        let mut out = Vec::new();
        for (phase, batch, ctx, op) in [
            ("decode", "1", "2048", OpKind::GateProj),
            ("decode", "8", "2048", OpKind::DownProj),
            ("decode", "1", "2048", OpKind::AttnNorm),
            ("decode", "32", "8192", OpKind::Attention),
            ("prefill", "4", "4096", OpKind::GateProj),
            ("prefill", "8", "2048", OpKind::OProj),
            ("prefill", "1", "512", OpKind::MlpNorm),
        ] {
            let sc = scenario(&[("phase", phase), ("batch", batch), ("ctx", ctx), ("gpu", "h100-sxm")]);
            let measured = Metric::OpS.predict(&Scenario { profile: truth, ..sc.clone() }, Some(op)).unwrap();
            out.push(Observation { scenario: sc, metric: Metric::OpS, op: Some(op), measured, source: String::new() });
        }
        out
    }

    #[test]
    fn per_kernel_measurements_from_known_constants_are_recovered_within_two_percent() {
        let truth = Profile { memory_scale: 1.2, compute_scale: 1.1, kernel_s: 2e-6, host_step_s: 0.0 };
        let c = calibrate(&kernel_rows(truth)).unwrap();
        let p = c.profile;
        assert!((p.memory_scale / 1.2 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.compute_scale / 1.1 - 1.0).abs() < 0.02, "{p:?}");
        assert!((p.kernel_s / 2e-6 - 1.0).abs() < 0.02, "{p:?}");
        // A kernel's time holds no host time: undetermined, and the profile adds none.
        assert_eq!(c.determined, [true, true, true, false], "{c:?}");
        assert_eq!(p.host_step_s, 0.0);
        assert_eq!(c.rows[0].op, Some(OpKind::GateProj));
        // The prediction is one layer's kernel: the ledger row ÷ its 32 instances.
        let sc = scenario(&[("gpu", "h100-sxm")]);
        let row = Ledger::build(&sc).row(OpKind::GateProj).unwrap().timing.time_s;
        assert_eq!(Metric::OpS.predict(&sc, Some(OpKind::GateProj)), Some(row / 32.0));
    }

    #[test]
    fn per_kernel_rows_must_name_an_operator_with_a_kernel_of_its_own() {
        let mut r = kernel_rows(Profile::IDENTITY);
        r[1].op = None;
        assert!(calibrate(&r).unwrap_err().to_string().contains("row 2"));
        // trtllm folds RoPE into the QKV GEMM's epilogue: it has no kernel to measure.
        let mut r = kernel_rows(Profile::IDENTITY);
        r[2].op = Some(OpKind::Rope);
        let e = calibrate(&r).unwrap_err().to_string();
        assert!(e.contains("row 3") && e.contains("fuses"), "{e}");
        // An operator the model does not have (MoE experts in a dense model).
        let mut r = kernel_rows(Profile::IDENTITY);
        r[0].op = Some(OpKind::ExpertUp);
        assert!(calibrate(&r).unwrap_err().to_string().contains("row 1"));
        // A whole-step row naming an operator.
        let mut r = rows(Profile::IDENTITY);
        r[0].op = Some(OpKind::QProj);
        assert!(calibrate(&r).unwrap_err().to_string().contains("row 1"));
    }

    /// A measurement outside its physical range (1e-308 s, 10³⁰⁸ tokens/s) is refused by its row
    /// before the fit, where it once ended in `internal error: non-finite value`; one inside it
    /// however far from the clock (an hour per step) fits, its constants at their bounds.
    #[test]
    fn measurements_outside_their_physical_range_are_refused_by_row() {
        let mut r = rows(Profile::IDENTITY);
        r[1].measured = 1e-308;
        let e = calibrate(&r).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid `row 2`: step_s = 1e-308 (a step time in seconds, 1 µs to 1 hour: a number in [1e-6, 3600])"
        );
        let mut r = rows(Profile::IDENTITY);
        r[2].measured = 1e308;
        let e = calibrate(&r).unwrap_err().to_string();
        assert!(e.starts_with("invalid `row 3`: tokens_per_s = 1e308 (a throughput in tokens per second"), "{e}");
        let mut r = rows(Profile::IDENTITY);
        for o in &mut r {
            o.measured = if o.metric == Metric::TokensPerS { 1e-3 } else { 3600.0 };
        }
        let c = calibrate(&r).unwrap();
        assert!(c.profile.memory_scale <= crate::clock::profile::SCALE_RANGE.1, "{c:?}");
        assert_eq!(Metric::column_range("op_us").unwrap().interval(), "[0.001, 3.6e9]");
        assert_eq!(Metric::column_range("tpot_ms").unwrap().interval(), limits::TPOT_MS.interval());
        assert_eq!(Metric::column_range("step_ms").unwrap().interval(), limits::STEP_MS.interval());
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
