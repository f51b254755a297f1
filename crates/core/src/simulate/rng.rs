//! A small deterministic random-number generator and the few distributions the simulator draws
//! from.
//!
//! PCG-XSH-RR 64/32 (O'Neill, "PCG: A Family of Simple Fast Space-Efficient Statistically Good
//! Algorithms for Random Number Generation", 2014; the `pcg32` of the reference implementation):
//! a 64-bit LCG state `s ← s·6364136223846793005 + inc` with an xorshift-and-rotate output of
//! 32 bits. It is written out here, not taken from `rand`, because the simulator promises the
//! same numbers for the same seed in every release: `rand` and `rand_distr` reserve the right to
//! change their algorithms (and did between 0.7, 0.8 and 0.9), and the dozen lines below cannot.
//!
//! Distributions: exponential by inversion (`−ln U / λ`); normal by Box–Muller; gamma by
//! Marsaglia and Tsang (2000), with the `U^{1/k}` boost for shape `k < 1`.

/// PCG-XSH-RR 64/32.
#[derive(Debug, Clone)]
pub struct Pcg32 {
    state: u64,
    inc: u64,
}

const MULTIPLIER: u64 = 6_364_136_223_846_793_005;

impl Pcg32 {
    /// A generator for `seed` on stream `stream` (different streams are independent sequences).
    pub fn new(seed: u64, stream: u64) -> Pcg32 {
        let mut r = Pcg32 { state: 0, inc: (stream << 1) | 1 };
        r.next_u32();
        r.state = r.state.wrapping_add(seed);
        r.next_u32();
        r
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(MULTIPLIER).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        let hi = (self.next_u32() >> 5) as u64; // 27 bits
        let lo = (self.next_u32() >> 6) as u64; // 26 bits
        ((hi << 26) | lo) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `(0, 1]` (safe under a logarithm).
    pub fn uniform_open0(&mut self) -> f64 {
        1.0 - self.uniform()
    }

    /// Uniform integer in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        let span = (hi - lo) as f64 + 1.0;
        (lo + (self.uniform() * span) as u64).min(hi)
    }

    /// Exponential with rate `rate` (mean `1/rate`).
    pub fn exponential(&mut self, rate: f64) -> f64 {
        -self.uniform_open0().ln() / rate
    }

    /// Standard normal (Box–Muller, one of the pair).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform_open0(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Gamma with shape `k > 0` and scale `theta` (mean `k·θ`, variance `k·θ²`).
    pub fn gamma(&mut self, k: f64, theta: f64) -> f64 {
        if k < 1.0 {
            let boost = self.uniform_open0().powf(1.0 / k);
            return self.gamma(k + 1.0, theta) * boost;
        }
        let d = k - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform_open0();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v * theta;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcg32_matches_the_reference_output() {
        // pcg32_srandom_r(&rng, 42, 54) in O'Neill's pcg32-demo prints these first values.
        let mut r = Pcg32::new(42, 54);
        let got: Vec<u32> = (0..6).map(|_| r.next_u32()).collect();
        assert_eq!(got, [0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e]);
    }

    fn moments(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        (m, xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0))
    }

    #[test]
    fn distributions_have_their_moments() {
        let mut r = Pcg32::new(7, 1);
        let n = 200_000;
        let e: Vec<f64> = (0..n).map(|_| r.exponential(4.0)).collect();
        let (m, v) = moments(&e);
        assert!((m - 0.25).abs() < 0.005 && (v - 0.0625).abs() < 0.003, "{m} {v}");
        for k in [0.25, 1.0, 4.0] {
            let g: Vec<f64> = (0..n).map(|_| r.gamma(k, 2.0)).collect();
            let (m, v) = moments(&g);
            assert!((m / (2.0 * k) - 1.0).abs() < 0.02, "k {k}: mean {m}");
            assert!((v / (4.0 * k) - 1.0).abs() < 0.05, "k {k}: var {v}");
        }
        // The ends of the range `simulate` takes (cv 10⁻⁴ and 100): every draw ends, finite; at
        // shape 10⁸ with the moments (mean 1, variance 10⁻⁸).
        let k = super::super::workload::MAX_GAMMA_SHAPE;
        let g: Vec<f64> = (0..n).map(|_| r.gamma(k, 1.0 / k)).collect();
        let (m, v) = moments(&g);
        assert!((m - 1.0).abs() < 1e-5 && (v / 1e-8 - 1.0).abs() < 0.05, "k {k}: {m} {v}");
        let k = super::super::workload::MIN_GAMMA_SHAPE;
        assert!((0..n).map(|_| r.gamma(k, 1.0 / k)).all(|x| x.is_finite() && x >= 0.0));
        let z: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let (m, v) = moments(&z);
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.02, "{m} {v}");
        assert!((0..1000).all(|_| (3..=5).contains(&r.range(3, 5))));
    }
}
