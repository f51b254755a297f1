//! Mixture-of-experts routing: how many distinct experts a step touches (the union problem of
//! the reference calculator) and how many tokens each expert sees.
//!
//! Let `p_i` be the probability that one token routes to expert `i` (so Σ p_i = k). Tokens route
//! independently, so expert `i` is untouched by N tokens with probability (1 − p_i)^N and, by
//! linearity of expectation, the expected number of distinct experts touched is
//!
//! ```text
//! E[touched] = Σ_i (1 − (1 − p_i)^N)
//! ```
//!
//! Uniform routing has p_i = k/E, which gives the reference calculator's E·(1 − (1 − k/E)^N). The correlation
//! between a token's k choices does not enter an expectation of a sum, so the formula is exact for
//! any routing with these marginals. Skewed routing is given as a Zipf exponent or as measured
//! per-expert loads (tokens routed to each expert, any scale).

use crate::error::{Error, Result};
use std::sync::Arc;

/// Routing distribution over experts.
#[derive(Debug, Clone, PartialEq)]
pub enum Routing {
    /// Every expert equally likely.
    Uniform,
    /// Expert i (1-based rank) has weight i^(−s).
    Zipf(f64),
    /// Measured relative loads per expert (length must equal the expert count).
    Loads(Arc<[f64]>),
}

impl Routing {
    /// Validate measured loads: finite, non-negative, not all zero.
    pub fn loads(loads: Vec<f64>) -> Result<Routing> {
        if loads.is_empty() {
            return Err(Error::invalid("expert loads", "an empty list", "one load per expert"));
        }
        let range = crate::limits::EXPERT_LOAD;
        if let Some((i, l)) = loads.iter().enumerate().find(|(_, l)| !range.contains(**l)) {
            return Err(Error::invalid(
                "expert loads",
                format!("{} for expert {i}", crate::error::compact_f64(*l)),
                range.expected(),
            ));
        }
        if loads.iter().all(|l| *l == 0.0) {
            return Err(Error::invalid("expert loads", "all zero", "at least one positive load"));
        }
        Ok(Routing::Loads(loads.into()))
    }

    /// Validate a Zipf exponent ([`crate::limits::ZIPF`]: 0 to 10; 0 is uniform).
    pub fn zipf(s: f64) -> Result<Routing> {
        let s = crate::limits::ZIPF.check("zipf", s)?;
        Ok(if s == 0.0 { Routing::Uniform } else { Routing::Zipf(s) })
    }

    /// Short description.
    pub fn describe(&self) -> String {
        match self {
            Routing::Uniform => "uniform".into(),
            Routing::Zipf(s) => format!("zipf {}", crate::error::compact_f64(*s)),
            Routing::Loads(l) => format!("measured loads ({} experts)", l.len()),
        }
    }
}

/// Per-token routing probabilities p_i with Σ p_i = k and every p_i ≤ 1.
///
/// Weights are scaled to sum to k; any expert whose share would exceed 1 is pinned at 1 (it cannot
/// be picked twice by one token) and the remainder is rescaled over the others (water-filling).
pub fn routing_probabilities(experts: u64, top_k: u64, routing: &Routing) -> Result<Vec<f64>> {
    if experts == 0 || top_k == 0 || top_k > experts {
        return Err(Error::invalid(
            "top_k",
            top_k,
            format!("{} (the number of experts)", crate::error::range_words(1, experts)),
        ));
    }
    let e = experts as usize;
    let weights: Vec<f64> = match routing {
        Routing::Uniform => vec![1.0; e],
        Routing::Zipf(s) => (1..=e).map(|i| (i as f64).powf(-s)).collect(),
        Routing::Loads(l) => {
            if l.len() != e {
                return Err(Error::invalid(
                    "expert loads",
                    format!("{} values", l.len()),
                    format!("one per expert ({e})"),
                ));
            }
            l.to_vec()
        }
    };
    let positive = weights.iter().filter(|w| **w > 0.0).count() as u64;
    if positive < top_k {
        return Err(Error::invalid(
            "expert loads",
            format!("{positive} experts with load"),
            format!("at least top_k = {top_k} experts with a positive load"),
        ));
    }
    let k = top_k as f64;
    let mut p = vec![0.0; e];
    let mut pinned = vec![false; e];
    loop {
        let free_budget = k - pinned.iter().filter(|x| **x).count() as f64;
        let free_weight: f64 = weights.iter().zip(&pinned).filter(|(_, pin)| !**pin).map(|(w, _)| w).sum();
        let mut changed = false;
        for i in 0..e {
            if pinned[i] {
                p[i] = 1.0;
                continue;
            }
            p[i] = weights[i] / free_weight * free_budget;
            if p[i] > 1.0 {
                pinned[i] = true;
                changed = true;
            }
        }
        if !changed {
            return Ok(p);
        }
    }
}

/// Expected distinct experts touched by `tokens` independently routed tokens: Σ 1 − (1 − p_i)^N.
pub fn expected_experts_touched(experts: u64, top_k: u64, tokens: f64, routing: &Routing) -> Result<f64> {
    if let Routing::Uniform = routing {
        return Ok(uniform_experts_touched(experts, top_k, tokens));
    }
    let p = routing_probabilities(experts, top_k, routing)?;
    Ok(p.iter().map(|pi| 1.0 - (1.0 - pi).powf(tokens)).sum())
}

/// The reference calculator: E·(1 − (1 − k/E)^N). Allocation-free; the ledger's hot path.
#[inline]
pub fn uniform_experts_touched(experts: u64, top_k: u64, tokens: f64) -> f64 {
    let e = experts as f64;
    e * (1.0 - (1.0 - top_k as f64 / e).powf(tokens))
}

/// The union problem at one token count.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct UnionPoint {
    /// Tokens routed in the step (decode: batch; prefill: batch × prompt).
    pub tokens: f64,
    /// Expected distinct experts touched, Σ 1 − (1 − p_i)^N.
    pub experts_touched: f64,
    /// experts_touched ÷ E.
    pub fraction_touched: f64,
    /// Mean tokens per touched expert, N·k ÷ experts_touched (the M of each expert's GEMM).
    pub tokens_per_expert: f64,
    /// Mean tokens per expert over all E experts, idle ones included: N·k ÷ E (the reference
    /// calculator's "each expert sees only about B × k / E tokens"; 0.25 at N = 1, k = 2, E = 8).
    /// Never above `tokens_per_expert`; the two meet once every expert is touched.
    pub tokens_per_expert_all_experts: f64,
    /// Expected tokens of the busiest expert, N · max p_i (N·k/E under uniform routing).
    pub busiest_expert_tokens: f64,
}

/// Experts touched, tokens per expert and the busiest expert's load for `tokens` routed tokens.
pub fn union_point(experts: u64, top_k: u64, tokens: f64, routing: &Routing) -> Result<UnionPoint> {
    let p = routing_probabilities(experts, top_k, routing)?;
    let touched = expected_experts_touched(experts, top_k, tokens, routing)?;
    let max_p = p.iter().copied().fold(0.0, f64::max);
    Ok(UnionPoint {
        tokens,
        experts_touched: touched,
        fraction_touched: touched / experts as f64,
        tokens_per_expert: if touched > 0.0 { tokens * top_k as f64 / touched } else { 0.0 },
        tokens_per_expert_all_experts: tokens * top_k as f64 / experts as f64,
        busiest_expert_tokens: tokens * max_p,
    })
}

/// Experts (E) and top-k of a model's MoE layers, `None` for a dense model. Every supported family
/// sets E and k once for all its MoE layers.
pub fn moe_shape(model: &crate::ModelSpec) -> Option<(u64, u64)> {
    model.layer_groups().find_map(|(l, _)| match &l.mlp {
        crate::model::Mlp::Moe(m) => Some((m.experts, m.top_k)),
        crate::model::Mlp::Dense(_) | crate::model::Mlp::Linear { .. } | crate::model::Mlp::None => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_decimal(x: f64) -> f64 {
        (x * 10.0).round() / 10.0
    }

    #[test]
    fn seed_expected_experts_table() {
        // The reference calculator: 8 experts top-2 → 2.0, 5.5, 7.2, 7.9 at B = 1, 4, 8, 16.
        let got: Vec<f64> =
            [1.0, 4.0, 8.0, 16.0].iter().map(|b| one_decimal(uniform_experts_touched(8, 2, *b))).collect();
        assert_eq!(got, [2.0, 5.5, 7.2, 7.9]);
        // 128 experts top-8 → 8, 51.6, 111.8, 125.9 at B = 1, 8, 32, 64.
        let got: Vec<f64> =
            [1.0, 8.0, 32.0, 64.0].iter().map(|b| one_decimal(uniform_experts_touched(128, 8, *b))).collect();
        assert_eq!(got, [8.0, 51.6, 111.8, 125.9]);
    }

    #[test]
    fn union_point_splits_the_tokens_over_the_touched_experts() {
        // Mixtral-style 8 top-2 at 4 tokens: 8·(1 − 0.75⁴) = 5.4688 experts; 8 assignments over them.
        let u = union_point(8, 2, 4.0, &Routing::Uniform).unwrap();
        assert!((u.experts_touched - 5.46875).abs() < 1e-12);
        assert!((u.tokens_per_expert - 8.0 / 5.46875).abs() < 1e-12);
        assert_eq!(u.busiest_expert_tokens, 1.0); // 4 tokens × 2/8
        assert!((u.fraction_touched - 5.46875 / 8.0).abs() < 1e-12);
        assert_eq!(u.tokens_per_expert_all_experts, 1.0); // N·k/E = 4·2/8, uniform or not
    }

    #[test]
    fn tokens_per_expert_over_all_experts_is_the_reference_calculators_b_k_over_e() {
        // "each expert sees only about B x k / E tokens": 0.25 at batch 1 with k = 2, E = 8, where
        // the tokens per touched expert are 1.00 (two experts, one token each).
        let u = union_point(8, 2, 1.0, &Routing::Uniform).unwrap();
        assert_eq!(u.tokens_per_expert_all_experts, 0.25);
        assert!((u.tokens_per_expert - 1.0).abs() < 1e-12);
        // Skew moves tokens between experts but not the total: N·k/E is unchanged; it never exceeds
        // the mean over touched experts.
        for b in [1.0, 8.0, 64.0, 4096.0] {
            let z = union_point(64, 4, b, &Routing::zipf(1.2).unwrap()).unwrap();
            assert_eq!(z.tokens_per_expert_all_experts, b * 4.0 / 64.0);
            assert!(z.tokens_per_expert_all_experts <= z.tokens_per_expert + 1e-9);
        }
    }

    #[test]
    fn skew_shrinks_the_union() {
        let u = expected_experts_touched(64, 4, 16.0, &Routing::Uniform).unwrap();
        let z = expected_experts_touched(64, 4, 16.0, &Routing::zipf(1.0).unwrap()).unwrap();
        assert!(z < u, "zipf {z} uniform {u}");
        // Loads proportional to 1 everywhere are uniform.
        let l = expected_experts_touched(64, 4, 16.0, &Routing::loads(vec![3.0; 64]).unwrap()).unwrap();
        assert!((l - u).abs() < 1e-9);
    }

    #[test]
    fn probabilities_sum_to_k_and_never_exceed_one() {
        let p = routing_probabilities(8, 4, &Routing::zipf(3.0).unwrap()).unwrap();
        assert!((p.iter().sum::<f64>() - 4.0).abs() < 1e-12);
        assert!(p.iter().all(|x| *x <= 1.0 + 1e-12));
        assert_eq!(p[0], 1.0);
    }

    #[test]
    fn bad_routing_inputs_are_refused() {
        assert!(Routing::loads(vec![]).is_err());
        assert!(Routing::loads(vec![1.0, -1.0]).is_err());
        assert!(Routing::zipf(f64::NAN).is_err());
        let e = expected_experts_touched(8, 2, 4.0, &Routing::loads(vec![1.0; 7]).unwrap()).unwrap_err();
        assert_eq!(e.to_string(), "invalid `expert loads`: 7 values (one per expert (8))");
        let e =
            expected_experts_touched(8, 2, 4.0, &Routing::loads(vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap())
                .unwrap_err();
        assert!(e.to_string().contains("at least top_k = 2"), "{e}");
    }
}
