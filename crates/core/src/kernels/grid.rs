//! One-dimensional interpolation in log space with the module's rules for the edges and for
//! unmeasured cells; nested, it is the multilinear rule of every table ([`super`]).
//!
//! Values are carried as `L = ln(latency in ns)` (the stored code ÷ 2048, since a code decodes to
//! `0.001 · exp(code / 2048)` µs): interpolation is then linear arithmetic, one `exp` per lookup,
//! and a measured point passes through untouched, so it decodes bit for bit.

/// Where a query value falls on a sorted axis.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    /// `ln x`.
    pub ln_x: f64,
    /// Number of axis values `≤ x`.
    pub pos: usize,
    /// `x` is an axis value (`xs[pos − 1]`).
    pub on_point: bool,
}

impl Probe {
    /// Locate `x` (positive and finite: callers check) on `xs` (sorted ascending): one binary
    /// search.
    pub(super) fn new(xs: &[f64], x: f64) -> Probe {
        let pos = xs.partition_point(|&v| v <= x);
        Probe { ln_x: x.ln(), pos, on_point: pos > 0 && xs[pos - 1] == x }
    }
}

/// Log value at the probe `p` on an axis with logs `ln`, where `f(i)` is the log value
/// (`ln t`) at the axis's `i`-th point or `None` where unmeasured:
///
/// * on a measured point: `f(i)` itself, exactly;
/// * between the nearest measured points `i < j` around `x`: `f(i) + w · (f(j) − f(i))` with
///   `w = (ln x − ln xs[i]) / (ln xs[j] − ln xs[i])`, i.e. `t = tᵢ^(1−w) · tⱼ^w`;
/// * above the last measured point `i`: `f(i) + p · (ln x − ln xs[i])`, i.e.
///   `t = tᵢ · (x / xs[i])^p` with `p = power`, or `None` where the axis is not extrapolated;
/// * below the first measured point: its value (clamp);
/// * no measured point at all: `None`.
///
/// With every cell measured, `f` is called at most twice.
pub(crate) fn interp_ln(
    ln: &[f64],
    p: &Probe,
    power: Option<f64>,
    mut f: impl FnMut(usize) -> Option<f64>,
) -> Option<f64> {
    if p.on_point {
        if let Some(v) = f(p.pos - 1) {
            return Some(v);
        }
    }
    let below_end = if p.on_point { p.pos - 1 } else { p.pos };
    let lower = (0..below_end).rev().find_map(|i| f(i).map(|v| (i, v)));
    let upper = (p.pos..ln.len()).find_map(|i| f(i).map(|v| (i, v)));
    match (lower, upper) {
        (Some((i, a)), Some((j, b))) => {
            let w = (p.ln_x - ln[i]) / (ln[j] - ln[i]);
            Some(a + w * (b - a))
        }
        (Some((i, a)), None) => power.map(|pow| a + pow * (p.ln_x - ln[i])),
        (None, Some((_, b))) => Some(b),
        (None, None) => None,
    }
}

/// [`interp_ln`] resolved in advance for one probe, assuming the points it reads are measured:
/// which points it reads and how it weighs them. [`Step::eval`] then returns what `interp_ln`
/// returns wherever those points are measured, bit for bit (the same operations in the same
/// order), and `None` where one of them is not (the caller then takes `interp_ln`'s own path,
/// which looks further along the axis).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step {
    /// On a point `i`: `f(i)`.
    At(usize),
    /// Between points `i < j`: `f(i) + w · (f(j) − f(i))`.
    Between(usize, usize, f64),
    /// Above the last point `i`: `f(i) + d`, `d = power · (ln x − ln xs[i])`.
    Above(usize, f64),
    /// Below the first point `j`: `f(j)` (clamp).
    Below(usize),
}

impl Step {
    /// The step of probe `p` on an axis with logs `ln` and extrapolation `power`; `None` where
    /// `interp_ln` gives no value with every point measured (an empty axis, or above the last
    /// point of an axis that is not extrapolated).
    pub(crate) fn new(ln: &[f64], p: &Probe, power: Option<f64>) -> Option<Step> {
        if p.on_point {
            return Some(Step::At(p.pos - 1));
        }
        match (p.pos.checked_sub(1), p.pos < ln.len()) {
            (Some(i), true) => Some(Step::Between(i, p.pos, (p.ln_x - ln[i]) / (ln[p.pos] - ln[i]))),
            (Some(i), false) => power.map(|pow| Step::Above(i, pow * (p.ln_x - ln[i]))),
            (None, true) => Some(Step::Below(0)),
            (None, false) => None,
        }
    }

    /// The points the step reads, in the order it reads them (one or two).
    pub(crate) fn points(self) -> (usize, Option<usize>) {
        match self {
            Step::At(i) | Step::Above(i, _) | Step::Below(i) => (i, None),
            Step::Between(i, j, _) => (i, Some(j)),
        }
    }

    /// The interpolated value from `f` (`ln t` at a point, `None` where unmeasured); `None` if
    /// a point it reads is unmeasured.
    #[inline]
    pub(crate) fn eval(self, mut f: impl FnMut(usize) -> Option<f64>) -> Option<f64> {
        match self {
            Step::At(i) | Step::Below(i) => f(i),
            Step::Between(i, j, w) => {
                let a = f(i)?;
                let b = f(j)?;
                Some(a + w * (b - a))
            }
            Step::Above(i, d) => Some(f(i)? + d),
        }
    }
}

/// Whether `x` is positive and finite (a NaN is neither).
pub(crate) fn positive(x: f64) -> bool {
    x > 0.0 && x < f64::INFINITY
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interpolate plain values `vals` (not logs) on `xs` at `x`.
    fn at(xs: &[f64], vals: &[Option<f64>], x: f64, power: Option<f64>) -> Option<f64> {
        let ln: Vec<f64> = xs.iter().map(|v| v.ln()).collect();
        interp_ln(&ln, &Probe::new(xs, x), power, |i| vals[i].map(f64::ln)).map(f64::exp)
    }

    #[test]
    fn exact_between_clamp_scale() {
        let xs = [1.0, 4.0, 16.0];
        let vals = [Some(2.0), Some(8.0), Some(32.0)];
        // On points: exact (the log passes through; exp(ln v) is v to the last bit or so).
        for (i, &x) in xs.iter().enumerate() {
            let v = at(&xs, &vals, x, Some(1.0)).unwrap();
            assert!((v - vals[i].unwrap()).abs() < 1e-12);
        }
        // Between 1 and 4 at 2: log-midpoint, so the geometric mean √(2·8) = 4.
        let v = at(&xs, &vals, 2.0, Some(1.0)).unwrap();
        assert!((v - 4.0).abs() < 1e-12, "{v}");
        // Below: clamp. Above: 32 · (64/16)^1 = 128, or ^2 = 512; not extrapolated: None.
        assert!((at(&xs, &vals, 0.5, Some(1.0)).unwrap() - 2.0).abs() < 1e-12);
        assert!((at(&xs, &vals, 64.0, Some(1.0)).unwrap() - 128.0).abs() < 1e-9);
        assert!((at(&xs, &vals, 64.0, Some(2.0)).unwrap() - 512.0).abs() < 1e-9);
        assert_eq!(at(&xs, &vals, 64.0, None), None);
        // A point passes through untouched.
        let ln = [0.0, 4f64.ln()];
        assert_eq!(interp_ln(&ln, &Probe::new(&[1.0, 4.0], 4.0), None, |i| Some([0.1, 0.3][i])), Some(0.3));
        assert!(positive(1e-300) && positive(1e300));
        assert!(!positive(0.0) && !positive(f64::NAN) && !positive(f64::INFINITY) && !positive(-1.0));
    }

    #[test]
    fn a_resolved_step_gives_what_interp_ln_gives_where_its_points_are_measured() {
        let xs = [1.0, 4.0, 16.0, 64.0];
        let ln: Vec<f64> = xs.iter().map(|v: &f64| v.ln()).collect();
        let vals = [0.3, 1.7, 2.2, 5.9];
        for x in [0.5, 1.0, 2.0, 3.999, 4.0, 10.0, 16.0, 64.0, 100.0, 1e6] {
            for power in [Some(1.0), Some(2.0), None] {
                let p = Probe::new(&xs, x);
                let want = interp_ln(&ln, &p, power, |i| Some(vals[i]));
                let got = Step::new(&ln, &p, power).and_then(|s| s.eval(|i| Some(vals[i])));
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "x {x} power {power:?}");
                // A point it reads unmeasured: no value (interp_ln looks further instead).
                if let Some(s) = Step::new(&ln, &p, power) {
                    let (i, j) = s.points();
                    assert_eq!(s.eval(|k| (k != i).then_some(vals[k])), None);
                    if let Some(j) = j {
                        assert_eq!(s.eval(|k| (k != j).then_some(vals[k])), None);
                    }
                }
            }
        }
        assert_eq!(Step::new(&[], &Probe::new(&[], 3.0), Some(1.0)), None);
    }

    #[test]
    fn unmeasured_cells_use_the_nearest_measured_ones() {
        let xs = [1.0, 4.0, 16.0, 64.0];
        // 16 unmeasured: at 16, interpolate 4 → 64 (values 8 → 128, a straight line in log-log).
        let v = at(&xs, &[Some(2.0), Some(8.0), None, Some(128.0)], 16.0, Some(1.0)).unwrap();
        assert!((v - 32.0).abs() < 1e-9, "{v}");
        // Last two unmeasured: scale from 4 (value 8) linearly: at 32, 8 · 8 = 64.
        let v = at(&xs, &[Some(2.0), Some(8.0), None, None], 32.0, Some(1.0)).unwrap();
        assert!((v - 64.0).abs() < 1e-9, "{v}");
        // First unmeasured: clamp to the first measured.
        let v = at(&xs, &[None, Some(8.0), Some(32.0), Some(128.0)], 1.0, Some(1.0)).unwrap();
        assert!((v - 8.0).abs() < 1e-12);
        // Nothing measured.
        assert_eq!(at(&xs, &[None; 4], 4.0, Some(1.0)), None);
    }
}
