//! Streamed statistics: a quantile sketch of bounded size, time-weighted averages, and a
//! decimated time series. Memory does not grow with the number of requests or steps.
//!
//! **Quantiles** come from a log-bucketed histogram (the DDSketch of Masson, Rim and Lee, VLDB
//! 2019): a positive value `x` falls in bucket `i = ⌈ln x / ln γ⌉` with `γ = (1 + α)/(1 − α)`, and
//! a quantile is reported as the bucket's midpoint `2γ^i/(γ + 1)`, which is within a relative
//! error `α` of the exact order statistic. With [`RELATIVE_ACCURACY`] `α = 0.5 %` and values
//! between 1 ns and 10⁶ s the sketch has at most about 3,500 buckets whatever the count. Means,
//! minima and maxima are exact.

use serde::Serialize;

/// Relative accuracy of every quantile the simulator reports (`α`).
pub const RELATIVE_ACCURACY: f64 = 0.005;

/// Points kept in a time series; when full, every other point is dropped and the sampling stride
/// doubles.
pub const SERIES_POINTS: usize = 2048;

/// A streaming quantile sketch (module docs).
#[derive(Debug, Clone)]
pub struct Sketch {
    ln_gamma: f64,
    /// Index of `counts[0]`.
    offset: i64,
    counts: Vec<u64>,
    zeros: u64,
    n: u64,
    sum: f64,
    min: f64,
    max: f64,
    /// The last positive value added (as bits) and its bucket: the tokens of one step share
    /// their gap, so the same value often comes many times in a row.
    last: (u64, i64),
}

impl Default for Sketch {
    fn default() -> Self {
        let gamma = (1.0 + RELATIVE_ACCURACY) / (1.0 - RELATIVE_ACCURACY);
        Sketch {
            ln_gamma: gamma.ln(),
            offset: 0,
            counts: Vec::new(),
            zeros: 0,
            n: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            last: (f64::NAN.to_bits(), 0),
        }
    }
}

/// Mean and quantiles of a distribution, in the unit of the values (seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Quantiles {
    /// Values summarised.
    pub count: u64,
    /// Exact mean.
    pub mean: f64,
    /// Median (within [`RELATIVE_ACCURACY`]).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Exact maximum.
    pub max: f64,
}

impl Sketch {
    /// Add a value (≥ 0; non-finite values are not expected and are ignored).
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() || x < 0.0 {
            return;
        }
        self.n += 1;
        self.sum += x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        if x < 1e-12 {
            self.zeros += 1;
            return;
        }
        let i = if x.to_bits() == self.last.0 {
            self.last.1
        } else {
            let i = (x.ln() / self.ln_gamma).ceil() as i64;
            self.last = (x.to_bits(), i);
            i
        };
        if self.counts.is_empty() {
            self.offset = i;
            self.counts.push(0);
        } else if i < self.offset {
            let grow = (self.offset - i) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.offset = i;
        } else if i >= self.offset + self.counts.len() as i64 {
            self.counts.resize((i - self.offset + 1) as usize, 0);
        }
        self.counts[(i - self.offset) as usize] += 1;
    }

    /// Values added.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Exact mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }

    /// The `q`-quantile (`0 ≤ q ≤ 1`): the value of rank `⌊q·(n − 1)⌋` (0-based), within the
    /// sketch's relative accuracy and clamped to the exact minimum and maximum; 0 when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = (q.clamp(0.0, 1.0) * (self.n - 1) as f64).floor() as u64;
        if rank < self.zeros {
            return 0.0;
        }
        let mut seen = self.zeros;
        let gamma = self.ln_gamma.exp();
        for (j, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                let i = self.offset + j as i64;
                let mid = 2.0 * gamma.powi(i as i32) / (gamma + 1.0);
                return mid.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Mean, p50, p90, p99 and maximum.
    pub fn quantiles(&self) -> Quantiles {
        Quantiles {
            count: self.n,
            mean: self.mean(),
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            max: if self.n == 0 { 0.0 } else { self.max },
        }
    }

    /// The empirical CDF at the sketch's resolution: `(value, fraction ≤ value)` per non-empty
    /// bucket, ascending (for plots).
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        if self.n == 0 {
            return out;
        }
        let n = self.n as f64;
        let mut seen = self.zeros;
        if self.zeros > 0 {
            out.push((0.0, seen as f64 / n));
        }
        let gamma = self.ln_gamma.exp();
        for (j, c) in self.counts.iter().enumerate() {
            if *c == 0 {
                continue;
            }
            seen += c;
            let upper = gamma.powi((self.offset + j as i64) as i32).min(self.max);
            out.push((upper, seen as f64 / n));
        }
        out
    }
}

/// A time-weighted average and the maximum of a quantity that holds its value between updates.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeAverage {
    area: f64,
    span_s: f64,
    max: f64,
}

impl TimeAverage {
    /// The quantity held `value` for `dt_s` seconds.
    pub fn hold(&mut self, value: f64, dt_s: f64) {
        self.area += value * dt_s;
        self.span_s += dt_s;
        self.max = self.max.max(value);
    }

    /// `∫ value dt ÷ ∫ dt` (0 before any time has passed).
    pub fn mean(&self) -> f64 {
        if self.span_s > 0.0 {
            self.area / self.span_s
        } else {
            0.0
        }
    }

    /// Largest value held.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Pool `other` into this one: the average over both spans, the larger maximum.
    pub fn merge(&mut self, other: &TimeAverage) {
        self.area += other.area;
        self.span_s += other.span_s;
        self.max = self.max.max(other.max);
    }
}

/// One point of the simulator's time series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// Simulated time at the end of the step, seconds.
    pub t_s: f64,
    /// Sequences in the step.
    pub running: u64,
    /// Requests waiting to be admitted.
    pub waiting: u64,
    /// Fraction of the KV blocks in use.
    pub kv_utilisation: f64,
}

/// A time series decimated to at most [`SERIES_POINTS`] points.
#[derive(Debug, Clone, Default)]
pub struct Series {
    points: Vec<SeriesPoint>,
    stride: u64,
    seen: u64,
}

impl Series {
    /// Offer a point; every `stride`-th one is kept.
    pub fn offer(&mut self, p: SeriesPoint) {
        if self.stride == 0 {
            self.stride = 1;
        }
        if self.seen % self.stride == 0 {
            if self.points.len() == SERIES_POINTS {
                let kept: Vec<SeriesPoint> = self.points.iter().step_by(2).copied().collect();
                self.points = kept;
                self.stride *= 2;
            }
            if self.seen % self.stride == 0 {
                self.points.push(p);
            }
        }
        self.seen += 1;
    }

    /// The kept points, in time order.
    pub fn points(&self) -> &[SeriesPoint] {
        &self.points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sketch_quantiles_are_within_the_relative_accuracy() {
        let mut s = Sketch::default();
        let xs: Vec<f64> = (1..=10_000).map(|i| i as f64 * 1e-3).collect();
        for x in xs.iter().rev() {
            s.add(*x);
        }
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            let exact = xs[(q * 9999.0_f64).floor() as usize];
            let got = s.quantile(q);
            assert!((got / exact - 1.0).abs() <= RELATIVE_ACCURACY + 1e-12, "q {q}: {got} vs {exact}");
        }
        assert!((s.mean() - 5.0005).abs() < 1e-9);
        assert!(s.counts.len() < 1000, "{}", s.counts.len());
        let cdf = s.cdf();
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }

    #[test]
    fn the_series_stays_bounded_and_spans_the_run() {
        let mut s = Series::default();
        for i in 0..100_000u64 {
            s.offer(SeriesPoint { t_s: i as f64, running: i, waiting: 0, kv_utilisation: 0.0 });
        }
        assert!(s.points().len() <= SERIES_POINTS);
        assert!(s.points().len() > SERIES_POINTS / 4);
        assert_eq!(s.points()[0].t_s, 0.0);
        assert!(s.points().last().unwrap().t_s > 90_000.0);
    }
}
