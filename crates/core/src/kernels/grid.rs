//! One-dimensional log-space interpolation with the module's rules for the edges and for
//! unmeasured cells; nested, it is the multilinear rule of every table ([`super`]).

/// Value at `x` on the sorted axis `xs` (with `ln = xs.ln()`), where `f(i)` is the value at
/// `xs[i]` or `None` where unmeasured:
///
/// * `x` on a measured point: `f(i)` itself, exactly;
/// * between the nearest measured points `i < j` around `x`: `exp(ln f(i) + w · (ln f(j) − ln
///   f(i)))` with `w = (ln x − ln xs[i]) / (ln xs[j] − ln xs[i])`;
/// * above the last measured point `i`: `f(i) · (x / xs[i])^p` with `p = power`, or `None`
///   where the axis is not extrapolated (`power = None`);
/// * below the first measured point: its value (clamp);
/// * no measured point at all: `None`.
///
/// Cost: one binary search and, where cells are measured, two calls of `f`.
pub(crate) fn interp1d(
    xs: &[f64],
    ln: &[f64],
    x: f64,
    power: Option<f64>,
    mut f: impl FnMut(usize) -> Option<f64>,
) -> Option<f64> {
    if !(x.is_finite() && x > 0.0) {
        return None;
    }
    let pos = xs.partition_point(|&v| v <= x);
    let on_point = pos > 0 && xs[pos - 1] == x;
    if on_point {
        if let Some(v) = f(pos - 1) {
            return Some(v);
        }
    }
    let below_end = if on_point { pos - 1 } else { pos };
    let lower = (0..below_end).rev().find_map(|i| f(i).map(|v| (i, v)));
    let upper = (pos..xs.len()).find_map(|i| f(i).map(|v| (i, v)));
    match (lower, upper) {
        (Some((i, a)), Some((j, b))) => {
            let w = (x.ln() - ln[i]) / (ln[j] - ln[i]);
            // a · (b/a)^w: the log-space line, and exactly a where b = a.
            Some(a * (w * (b / a).ln()).exp())
        }
        (Some((i, a)), None) => power.map(|p| a * (x / xs[i]).powf(p)),
        (None, Some((_, b))) => Some(b),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(xs: &[f64]) -> Vec<f64> {
        xs.iter().map(|v| v.ln()).collect()
    }

    #[test]
    fn exact_between_clamp_scale() {
        let xs = [1.0, 4.0, 16.0];
        let ln = axis(&xs);
        let vals = [Some(2.0), Some(8.0), Some(32.0)];
        let f = |i: usize| vals[i];
        // On points: exact.
        for (i, &x) in xs.iter().enumerate() {
            assert_eq!(interp1d(&xs, &ln, x, Some(1.0), f), vals[i]);
        }
        // Between 1 and 4 at 2: log-midpoint, so the geometric mean √(2·8) = 4.
        let v = interp1d(&xs, &ln, 2.0, Some(1.0), f).unwrap();
        assert!((v - 4.0).abs() < 1e-12, "{v}");
        // Below: clamp. Above: 32 · (64/16)^1 = 128, or ^2 = 512; not extrapolated: None.
        assert_eq!(interp1d(&xs, &ln, 0.5, Some(1.0), f), Some(2.0));
        assert!((interp1d(&xs, &ln, 64.0, Some(1.0), f).unwrap() - 128.0).abs() < 1e-9);
        assert!((interp1d(&xs, &ln, 64.0, Some(2.0), f).unwrap() - 512.0).abs() < 1e-9);
        assert_eq!(interp1d(&xs, &ln, 64.0, None, f), None);
        // Bad queries.
        for x in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(interp1d(&xs, &ln, x, Some(1.0), f), None);
        }
    }

    #[test]
    fn unmeasured_cells_use_the_nearest_measured_ones() {
        let xs = [1.0, 4.0, 16.0, 64.0];
        let ln = axis(&xs);
        // 16 unmeasured: at 16, interpolate 4 → 64 (values 8 → 128, a straight line in log-log).
        let vals = [Some(2.0), Some(8.0), None, Some(128.0)];
        let v = interp1d(&xs, &ln, 16.0, Some(1.0), |i| vals[i]).unwrap();
        assert!((v - 32.0).abs() < 1e-9, "{v}");
        // Last two unmeasured: scale from 4 (value 8) linearly: at 32, 8 · 8 = 64.
        let vals = [Some(2.0), Some(8.0), None, None];
        let v = interp1d(&xs, &ln, 32.0, Some(1.0), |i| vals[i]).unwrap();
        assert!((v - 64.0).abs() < 1e-9, "{v}");
        // First unmeasured: clamp to the first measured.
        let vals = [None, Some(8.0), Some(32.0), Some(128.0)];
        assert_eq!(interp1d(&xs, &ln, 1.0, Some(1.0), |i| vals[i]), Some(8.0));
        // Nothing measured.
        assert_eq!(interp1d(&xs, &ln, 4.0, Some(1.0), |_| None), None);
    }
}
