//! Fitting a few positive constants to measurements: robust least squares in log space, the
//! Engine of `llm-ledger calibrate`.
//!
//! **Model.** Measurements `yᵢ > 0` and a prediction `fᵢ(θ) > 0` from `p` positive constants `θ`
//! (a launch cost, an achievable fraction …). The fit works in logs: parameters `φ = ln θ` (so
//! every constant stays positive and a relative step is the same size at any scale) and residuals
//! `rᵢ = ln fᵢ(θ) − ln yᵢ` (a relative error, the same weight for a 10 µs kernel and a 10 s step).
//!
//! **Estimator.** Minimise `Σ ρ(rᵢ / s)` with Huber's ρ (quadratic within `k·s`, linear beyond,
//! `k = 1.345`: 95 % efficiency under Gaussian noise; Huber 1964, *Robust estimation of a location
//! parameter*), by iteratively reweighted Levenberg–Marquardt: weights `wᵢ = min(1, k·s/|rᵢ|)`, the
//! scale `s = 1.4826 · median|rᵢ|` (the MAD, re-estimated each round, floored so exact data does
//! not divide by zero). The Jacobian `∂rᵢ/∂φⱼ` is taken by central differences (step 10⁻⁵ in `φ`),
//! so a model needs no derivatives. Outliers (a mis-recorded row) pull the fit linearly, not
//! quadratically.
//!
//! **Uncertainty.** The covariance of `φ` is `σ̂² (JᵀWJ)⁻¹` with `σ̂² = Σwᵢrᵢ² / (n − p)` at the
//! optimum; a constant's relative standard error is `√Cⱼⱼ` (a log-space standard error is a
//! relative one). With `n ≤ p` the uncertainty is unknown (reported as infinite).
//!
//! **Undetermined constants.** When the rows cannot tell some constants apart — a column of
//! zeros (no compute-bound row for a compute scale), rows that repeat one another, or columns in
//! proportion — `JᵀWJ` is singular and a constant along its null space has no finite error: any
//! value along it fits the rows equally well. The null space comes from the eigenvectors of the
//! correlation form `D^{-1/2} JᵀWJ D^{-1/2}` (`D` its diagonal; cyclic Jacobi, Golub and Van Loan,
//! *Matrix Computations*, §8.5) with eigenvalues below [`RANK_TOLERANCE`] of the largest; a
//! constant is determined when its axis is orthogonal to that null space, and then its variance
//! is `σ̂²·Σₖ vₖⱼ²/λₖ / Dⱼⱼ` over the other eigenpairs (the pseudo-inverse, which is the inverse
//! when nothing is singular). Undetermined constants are reported with an infinite error and
//! [`Fitted::determined`] false.

use crate::error::{Error, Result};
use serde::Serialize;

/// Huber's tuning constant.
pub const HUBER_K: f64 = 1.345;

/// Most constants one fit may have.
pub const MAX_PARAMETERS: usize = 16;

/// Eigenvalues of the correlation form below this fraction of the largest span the null space
/// (a correlation above `1 − 10⁻⁹` between two constants' effects is taken as exact: the
/// central-difference Jacobian is good to about `10⁻¹⁰`).
pub const RANK_TOLERANCE: f64 = 1e-9;

/// One constant to fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parameter {
    /// Its name (`launch_s`).
    pub name: String,
    /// Starting value (> 0).
    pub start: f64,
    /// Smallest allowed value (> 0).
    pub min: f64,
    /// Largest allowed value.
    pub max: f64,
}

/// The fitted constants.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fitted {
    /// Names, in the order given.
    pub names: Vec<String>,
    /// Fitted values.
    pub values: Vec<f64>,
    /// Relative standard error of each value (`0.02` = ±2 %); infinite when unknown.
    pub relative_std_errors: Vec<f64>,
    /// Whether the rows determine each value (module docs); an undetermined one is wherever the
    /// descent left it, and its error is infinite.
    pub determined: Vec<bool>,
    /// Log residual of each measurement at the fit, `ln(predicted / measured)`.
    pub log_residuals: Vec<f64>,
    /// Huber weight of each measurement at the fit (1 = inlier).
    pub weights: Vec<f64>,
    /// Iterations taken.
    pub iterations: usize,
}

impl Fitted {
    /// The value of the constant `name`.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.names.iter().position(|n| n == name).map(|i| self.values[i])
    }
}

/// Fit `params` so that `predict(θ, i)` matches `measured[i]` (module docs). `predict` must
/// return a positive finite time for every row; a row it cannot predict is an error naming it.
pub fn fit(params: &[Parameter], measured: &[f64], predict: impl Fn(&[f64], usize) -> f64) -> Result<Fitted> {
    if params.is_empty() || params.len() > MAX_PARAMETERS {
        return Err(Error::invalid(
            "parameters",
            params.len(),
            format!("{} constants to fit", crate::error::range_words(1, MAX_PARAMETERS)),
        ));
    }
    for p in params {
        if !(p.min > 0.0 && p.min <= p.start && p.start <= p.max && p.max.is_finite()) {
            return Err(Error::invalid(&p.name, p.start, "0 < min ≤ start ≤ max < ∞"));
        }
    }
    if measured.len() < params.len() {
        return Err(Error::invalid(
            "measurements",
            measured.len(),
            format!("at least as many rows as constants to fit ({})", params.len()),
        ));
    }
    if let Some(i) = measured.iter().position(|y| !(y.is_finite() && *y > 0.0)) {
        return Err(Error::invalid(format!("row {}", i + 1), measured[i], "a positive finite measurement"));
    }
    let (lo, hi): (Vec<f64>, Vec<f64>) = params.iter().map(|p| (p.min.ln(), p.max.ln())).unzip();
    let clamp = |phi: &mut [f64]| phi.iter_mut().enumerate().for_each(|(j, v)| *v = v.clamp(lo[j], hi[j]));
    let residuals = |phi: &[f64]| -> Result<Vec<f64>> {
        let theta: Vec<f64> = phi.iter().map(|v| v.exp()).collect();
        (0..measured.len())
            .map(|i| {
                let f = predict(&theta, i);
                if f.is_finite() && f > 0.0 {
                    Ok(f.ln() - measured[i].ln())
                } else {
                    Err(Error::invalid(
                        format!("row {}", i + 1),
                        f,
                        "a row the time model can predict (a positive time)",
                    ))
                }
            })
            .collect()
    };
    let mut phi: Vec<f64> = params.iter().map(|p| p.start.ln()).collect();
    let mut r = residuals(&phi)?;
    let mut lambda = 1e-3;
    let mut iterations = 0;
    let mut w = huber_weights(&r);
    for it in 0..200 {
        iterations = it + 1;
        w = huber_weights(&r);
        let j = jacobian(&phi, &residuals, &lo, &hi)?;
        let (jtj, jtr) = normal_equations(&j, &r, &w);
        let cost = weighted_cost(&r, &w);
        let mut improved = false;
        // A constant at a bound that the descent direction pushes further out is held there for
        // this step (a projected step), so the others still move to their optimum.
        let held: Vec<bool> = (0..phi.len())
            .map(|k| (phi[k] <= lo[k] + 1e-12 && jtr[k] > 0.0) || (phi[k] >= hi[k] - 1e-12 && jtr[k] < 0.0))
            .collect();
        for _ in 0..30 {
            let mut a = jtj.clone();
            let mut rhs: Vec<f64> = jtr.iter().map(|v| -v).collect();
            for k in 0..a.len() {
                if held[k] {
                    a[k].iter_mut().for_each(|v| *v = 0.0);
                    a.iter_mut().for_each(|row| row[k] = 0.0);
                    a[k][k] = 1.0;
                    rhs[k] = 0.0;
                } else {
                    a[k][k] += lambda * jtj[k][k].max(1e-12);
                }
            }
            let Some(step) = solve(a, rhs) else {
                lambda *= 10.0;
                continue;
            };
            let mut next: Vec<f64> = phi.iter().zip(&step).map(|(a, b)| a + b).collect();
            clamp(&mut next);
            let rn = residuals(&next)?;
            if weighted_cost(&rn, &w) < cost {
                let moved = next.iter().zip(&phi).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                phi = next;
                r = rn;
                lambda = (lambda / 10.0).max(1e-12);
                improved = moved > 1e-10;
                break;
            }
            lambda *= 10.0;
        }
        if !improved {
            break;
        }
    }
    let j = jacobian(&phi, &residuals, &lo, &hi)?;
    let (jtj, _) = normal_equations(&j, &r, &w);
    let (n, p) = (measured.len(), params.len());
    let sigma2 = weighted_cost(&r, &w) * 2.0 / (n.saturating_sub(p).max(1)) as f64;
    let variances = identified_variances(&jtj);
    let determined: Vec<bool> = variances.iter().map(Option::is_some).collect();
    let known = n > determined.iter().filter(|d| **d).count();
    let relative_std_errors = variances
        .iter()
        .map(|v| match v {
            Some(v) if known => (sigma2 * v).max(0.0).sqrt(),
            _ => f64::INFINITY,
        })
        .collect();
    Ok(Fitted {
        names: params.iter().map(|p| p.name.clone()).collect(),
        // `exp(ln max)` can land an ulp past `max`: a constant is reported inside its bounds.
        values: phi.iter().zip(params).map(|(v, p)| v.exp().clamp(p.min, p.max)).collect(),
        relative_std_errors,
        determined,
        log_residuals: r,
        weights: w,
        iterations,
    })
}

/// For each constant, the diagonal of the pseudo-inverse of `a` (`JᵀWJ`) when the constant is
/// determined, `None` when it is not (module docs, "Undetermined constants").
fn identified_variances(a: &[Vec<f64>]) -> Vec<Option<f64>> {
    let p = a.len();
    let biggest = (0..p).map(|k| a[k][k]).fold(0.0, f64::max);
    // A zero column moves nothing: undetermined, and left out of the correlation form.
    let live: Vec<usize> = (0..p).filter(|&k| biggest > 0.0 && a[k][k] > 1e-12 * biggest).collect();
    let scale: Vec<f64> = live.iter().map(|&k| a[k][k].sqrt()).collect();
    let corr: Vec<Vec<f64>> = live
        .iter()
        .enumerate()
        .map(|(i, &r)| live.iter().enumerate().map(|(j, &c)| a[r][c] / (scale[i] * scale[j])).collect())
        .collect();
    let (values, vectors) = symmetric_eigen(corr);
    let top = values.iter().copied().fold(0.0, f64::max);
    let null = |k: usize| values[k] <= RANK_TOLERANCE * top;
    let mut out = vec![None; p];
    for (i, &k) in live.iter().enumerate() {
        // Its axis' share in the null space: 0 when the rows determine it.
        let in_null: f64 = (0..live.len()).filter(|&e| null(e)).map(|e| vectors[i][e].powi(2)).sum();
        if in_null < 1e-6 {
            let v: f64 = (0..live.len()).filter(|&e| !null(e)).map(|e| vectors[i][e].powi(2) / values[e]).sum();
            out[k] = Some(v / a[k][k]);
        }
    }
    out
}

/// Eigenvalues and eigenvectors (columns: `vectors[row][k]` is component `row` of the `k`-th) of
/// a small symmetric matrix, by cyclic Jacobi rotations until the off-diagonal part is below
/// 10⁻¹⁵ of the whole.
fn symmetric_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect()).collect();
    let norm: f64 = a.iter().flatten().map(|x| x * x).sum::<f64>().sqrt();
    for _ in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum::<f64>()
            .sqrt();
        if off <= 1e-15 * norm {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let (c, s) = (1.0 / (t * t + 1.0).sqrt(), t / (t * t + 1.0).sqrt());
                for row in a.iter_mut() {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (top, bottom) = a.split_at_mut(q);
                for (apk, aqk) in top[p].iter_mut().zip(bottom[0].iter_mut()) {
                    let (x, y) = (*apk, *aqk);
                    *apk = c * x - s * y;
                    *aqk = s * x + c * y;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i][i]).collect(), v)
}

/// Huber weights `min(1, k·s/|r|)` with `s = 1.4826 · median|r|`, floored at 10⁻⁶ (exact data).
fn huber_weights(r: &[f64]) -> Vec<f64> {
    let mut abs: Vec<f64> = r.iter().map(|v| v.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = abs[abs.len() / 2];
    let s = (1.4826 * median).max(1e-6);
    r.iter().map(|v| if v.abs() <= HUBER_K * s { 1.0 } else { HUBER_K * s / v.abs() }).collect()
}

/// `½ Σ wᵢ rᵢ²` (the weights held fixed within a reweighting round).
fn weighted_cost(r: &[f64], w: &[f64]) -> f64 {
    0.5 * r.iter().zip(w).map(|(r, w)| w * r * r).sum::<f64>()
}

/// Central-difference Jacobian, one column per parameter, stepping inside the bounds.
fn jacobian(
    phi: &[f64],
    residuals: &impl Fn(&[f64]) -> Result<Vec<f64>>,
    lo: &[f64],
    hi: &[f64],
) -> Result<Vec<Vec<f64>>> {
    const H: f64 = 1e-5;
    let mut cols = Vec::with_capacity(phi.len());
    for k in 0..phi.len() {
        let (mut up, mut down) = (phi.to_vec(), phi.to_vec());
        up[k] = (phi[k] + H).min(hi[k]);
        down[k] = (phi[k] - H).max(lo[k]);
        let width = up[k] - down[k];
        let (ru, rd) = (residuals(&up)?, residuals(&down)?);
        cols.push(ru.iter().zip(&rd).map(|(a, b)| if width > 0.0 { (a - b) / width } else { 0.0 }).collect());
    }
    Ok(cols)
}

/// `JᵀWJ` and `JᵀWr`, with `J` given by columns.
fn normal_equations(j: &[Vec<f64>], r: &[f64], w: &[f64]) -> (Vec<Vec<f64>>, Vec<f64>) {
    let p = j.len();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).zip(w).map(|((a, b), w)| a * b * w).sum::<f64>();
    let jtj = (0..p).map(|a| (0..p).map(|b| dot(&j[a], &j[b])).collect()).collect();
    let jtr = (0..p).map(|a| dot(&j[a], r)).collect();
    (jtj, jtr)
}

/// Solve `A x = b` by Gaussian elimination with partial pivoting; `None` when singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for c in 0..n {
        let pivot = (c..n).max_by(|x, y| a[*x][c].abs().total_cmp(&a[*y][c].abs()))?;
        if a[pivot][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, pivot);
        b.swap(c, pivot);
        let (top, below) = a.split_at_mut(c + 1);
        let pivot_row = &top[c];
        for (offset, row) in below.iter_mut().enumerate() {
            let f = row[c] / pivot_row[c];
            row.iter_mut().zip(pivot_row).skip(c).for_each(|(v, p)| *v -= f * p);
            b[c + 1 + offset] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for c in (0..n).rev() {
        let s: f64 = (c + 1..n).map(|k| a[c][k] * x[k]).sum();
        x[c] = (b[c] - s) / a[c][c];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, start: f64) -> Parameter {
        Parameter { name: name.into(), start, min: start / 1e3, max: start * 1e3 }
    }

    /// `t = launch · kernels + bytes / bandwidth`: a launch cost and an achieved bandwidth, the shape
    /// of the decode clock. Rows from known constants (5 µs, 2.9 TB/s) are recovered exactly.
    fn rows() -> Vec<(f64, f64)> {
        (0..24).map(|i| (10.0 + 40.0 * (i % 6) as f64, 1e6 * 4f64.powi(i / 3))).collect()
    }

    fn model(rows: &[(f64, f64)]) -> impl Fn(&[f64], usize) -> f64 + '_ {
        move |t: &[f64], i: usize| t[0] * rows[i].0 + rows[i].1 / t[1]
    }

    #[test]
    fn exact_data_recovers_the_constants() {
        let rows = rows();
        let truth = [5e-6, 2.9e12];
        let y: Vec<f64> = (0..rows.len()).map(|i| model(&rows)(&truth, i)).collect();
        let f = fit(&[param("launch_s", 1e-5), param("bandwidth", 1e12)], &y, model(&rows)).unwrap();
        assert!((f.values[0] / truth[0] - 1.0).abs() < 1e-6, "{:?}", f.values);
        assert!((f.values[1] / truth[1] - 1.0).abs() < 1e-6, "{:?}", f.values);
        assert!(f.log_residuals.iter().all(|r| r.abs() < 1e-8));
        assert_eq!(f.value("bandwidth"), Some(f.values[1]));
    }

    #[test]
    fn an_outlier_moves_the_fit_little_and_gets_a_small_weight() {
        let rows = rows();
        let truth = [5e-6, 2.9e12];
        let mut y: Vec<f64> = (0..rows.len()).map(|i| model(&rows)(&truth, i)).collect();
        // ±1 % deterministic noise, and one row recorded 3× too slow.
        for (i, v) in y.iter_mut().enumerate() {
            *v *= 1.0 + 0.01 * ((i * 7 % 5) as f64 - 2.0) / 2.0;
        }
        y[5] *= 3.0;
        let f = fit(&[param("launch_s", 1e-5), param("bandwidth", 1e12)], &y, model(&rows)).unwrap();
        assert!((f.values[0] / truth[0] - 1.0).abs() < 0.03, "{:?}", f.values);
        assert!((f.values[1] / truth[1] - 1.0).abs() < 0.03, "{:?}", f.values);
        assert!(f.weights[5] < 0.1, "{:?}", f.weights);
        assert!(f.relative_std_errors.iter().all(|e| e.is_finite() && *e < 0.05), "{:?}", f.relative_std_errors);
    }

    /// Measurements 10¹⁰ times the prediction drive a scale to its bound; the value reported is
    /// the bound itself, never `exp(ln max)` an ulp past it (which the profile's own check refused
    /// as `invalid `memory_scale`: 10.000000000000002`).
    #[test]
    fn a_constant_pinned_at_its_bound_is_reported_inside_it() {
        let p = [Parameter { name: "scale".into(), start: 1.0, min: 0.1, max: 10.0 }];
        let f = fit(&p, &[1e10, 1e10], |t, _| t[0]).unwrap();
        assert_eq!(f.values, [10.0]);
        let f = fit(&p, &[1e-10, 1e-10], |t, _| t[0]).unwrap();
        assert!((0.1..=0.1 * (1.0 + 1e-12)).contains(&f.values[0]), "{:?}", f.values);
    }

    #[test]
    fn bad_inputs_are_errors_naming_what() {
        let p = [param("a", 1.0)];
        assert!(fit(&p, &[], |_, _| 1.0).unwrap_err().to_string().contains("measurements"));
        assert!(fit(&p, &[1.0, -2.0], |_, _| 1.0).unwrap_err().to_string().contains("row 2"));
        assert!(fit(&p, &[1.0, 2.0], |_, i| if i == 1 { f64::NAN } else { 1.0 })
            .unwrap_err()
            .to_string()
            .contains("row 2"));
        let bad = Parameter { name: "b".into(), start: 0.0, min: 0.0, max: 1.0 };
        assert!(fit(&[bad], &[1.0], |_, _| 1.0).unwrap_err().to_string().contains("`b`"));
    }

    #[test]
    fn linear_algebra_matches_hand_values() {
        // [[2, 1], [1, 3]] x = [3, 5] → x = (4/5, 7/5).
        let x = solve(vec![vec![2.0, 1.0], vec![1.0, 3.0]], vec![3.0, 5.0]).unwrap();
        assert!((x[0] - 0.8).abs() < 1e-12 && (x[1] - 1.4).abs() < 1e-12);
        assert!(solve(vec![vec![1.0, 2.0], vec![2.0, 4.0]], vec![1.0, 2.0]).is_none());
        // [[2, 1], [1, 2]]: eigenvalues 1 and 3, eigenvectors (1, −1)/√2 and (1, 1)/√2.
        let (values, vectors) = symmetric_eigen(vec![vec![2.0, 1.0], vec![1.0, 2.0]]);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[0] - 1.0).abs() < 1e-12 && (sorted[1] - 3.0).abs() < 1e-12, "{values:?}");
        let k = values.iter().position(|v| (v - 3.0).abs() < 1e-9).unwrap();
        assert!((vectors[0][k].abs() - 0.5f64.sqrt()).abs() < 1e-12 && vectors[0][k] * vectors[1][k] > 0.0);
        // The pseudo-inverse's diagonal is the inverse's when nothing is singular:
        // [[2, 1], [1, 3]]⁻¹ = [[0.6, −0.2], [−0.2, 0.4]].
        let v = identified_variances(&[vec![2.0, 1.0], vec![1.0, 3.0]]);
        assert!((v[0].unwrap() - 0.6).abs() < 1e-12 && (v[1].unwrap() - 0.4).abs() < 1e-12, "{v:?}");
        // A singular pair is undetermined; a third constant apart from it is not.
        let v = identified_variances(&[vec![1.0, 2.0, 0.0], vec![2.0, 4.0, 0.0], vec![0.0, 0.0, 5.0]]);
        assert_eq!(v[..2], [None, None]);
        assert!((v[2].unwrap() - 0.2).abs() < 1e-12, "{v:?}");
    }

    /// Rows that repeat one another cannot tell two constants apart: both are undetermined,
    /// never `± 0 %`.
    #[test]
    fn identical_rows_leave_the_constants_undetermined() {
        let rows = vec![(10.0, 1e6); 3];
        let y: Vec<f64> = (0..3).map(|i| model(&rows)(&[5e-6, 2.9e12], i)).collect();
        let f = fit(&[param("launch_s", 1e-5), param("bandwidth", 1e12)], &y, model(&rows)).unwrap();
        assert_eq!(f.determined, [false, false]);
        assert!(f.relative_std_errors.iter().all(|e| e.is_infinite()), "{:?}", f.relative_std_errors);
        // The same rows with the launch cost known: the bandwidth alone is determined.
        let g = fit(&[param("bandwidth", 1e12)], &y, |t, i| 5e-6 * rows[i].0 + rows[i].1 / t[0]).unwrap();
        assert_eq!(g.determined, [true]);
        assert!(g.relative_std_errors[0].is_finite());
    }
}
