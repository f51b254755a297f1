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

/// `ln t` of a positive, finite `t`; `None` otherwise.
pub(crate) fn positive_ln(x: f64) -> Option<f64> {
    (x.is_finite() && x > 0.0).then(|| x.ln())
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
        assert_eq!(positive_ln(0.0), None);
        assert_eq!(positive_ln(f64::NAN), None);
        assert_eq!(positive_ln(f64::INFINITY), None);
        assert_eq!(positive_ln(-1.0), None);
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
