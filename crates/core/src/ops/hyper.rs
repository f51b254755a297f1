//! Hyper-connections (DeepSeek-V4's manifold-constrained hyper-connections, `hc_mult = n`): the
//! residual stream is `n` streams of `H`; before each block they are mixed into its input, after
//! it the block's output is mixed back into them (vLLM `DeepseekV4DecoderLayer`: `hc_pre`,
//! `hc_post`; the mixing weights are `mix = (2 + n)·n` functions of the normalised streams), and
//! after the last layer they collapse into one (`hc_head`).
//!
//! Per token and site, with `S = n·H` the streams' width:
//!
//! * **pre**: RMS-normalise the streams (`4·S`), project them to the `mix` weights (`2·S·mix`,
//!   fp32 weights), the Sinkhorn normalisation of the `n × n` combination (`3·(n² + 2n)` per
//!   iteration, [`SINKHORN_ITERATIONS`]), and the weighted sum into the block's input (`2·S`);
//!   the streams read and the input written;
//! * **post**: each stream the combination of the others plus its share of the block's output
//!   (`2·n·S + 2·S`); the streams and the output read, the streams written;
//! * **head**: the collapse `n·S` weights read once, `2·n·S` FLOPs; the streams read, one `H`
//!   written.

use super::{Op, OpBuilder, OpKind};
use crate::conventions::RMSNORM_FLOPS_PER_ELEMENT;
use crate::cost::Cost;
use crate::operator::{HyperPart, HyperShape};
use crate::precision::MathFormat;

/// Sinkhorn iterations of the combination matrix (`hc_sinkhorn_iters`, 20 in every DeepSeek-V4
/// config).
pub(super) const SINKHORN_ITERATIONS: f64 = 20.0;

/// Bytes of a hyper-connection weight (fp32 in the checkpoint).
const MIX_WEIGHT_BYTES: f64 = 4.0;

impl OpBuilder<'_> {
    /// The mixing of `n` streams into a block's input (module docs).
    pub(super) fn hyper_pre(&self, kind: OpKind, n: u64) -> Op {
        let (t, h, nf) = (self.tokens, self.hidden as f64, n as f64);
        let width = nf * h;
        let mix = (2.0 + nf) * nf;
        let sinkhorn = 3.0 * (nf * nf + 2.0 * nf) * SINKHORN_ITERATIONS;
        let cost = Cost {
            flops: t * (RMSNORM_FLOPS_PER_ELEMENT * width + 2.0 * width * mix + sinkhorn + 2.0 * width),
            weight_bytes: mix * width * MIX_WEIGHT_BYTES,
            activation_bytes: t * (width + h) * self.a,
            activation_written_bytes: t * h * self.a,
            ..Cost::ZERO
        };
        self.hyper_site(kind, cost, HyperPart::Pre, n)
    }

    /// A site's mixing operator, with its shape for the measured kernels.
    fn hyper_site(&self, kind: OpKind, cost: Cost, part: HyperPart, streams: u64) -> Op {
        let hyper = HyperShape { part, streams, hidden: self.hidden, tokens: self.tokens };
        Op { hyper: Some(hyper), ..Op::plain(kind, cost, MathFormat::Vector) }
    }

    /// The mixing of a block's output back into `n` streams (module docs).
    pub(super) fn hyper_post(&self, kind: OpKind, n: u64) -> Op {
        let (t, h, nf) = (self.tokens, self.hidden as f64, n as f64);
        let width = nf * h;
        let cost = Cost {
            flops: t * (2.0 * nf * width + 2.0 * width),
            activation_bytes: t * (2.0 * width + h) * self.a,
            activation_written_bytes: t * width * self.a,
            ..Cost::ZERO
        };
        self.hyper_site(kind, cost, HyperPart::Post, n)
    }

    /// The collapse of `n` streams into one before the final norm (module docs).
    pub(super) fn hyper_head(&self, n: u64) -> Op {
        let (t, h, nf) = (self.tokens, self.hidden as f64, n as f64);
        let width = nf * h;
        let cost = Cost {
            flops: t * 2.0 * nf * width,
            weight_bytes: nf * width * MIX_WEIGHT_BYTES,
            activation_bytes: t * (width + h) * self.a,
            activation_written_bytes: t * h * self.a,
            ..Cost::ZERO
        };
        Op::plain(OpKind::HcHead, cost, MathFormat::Vector)
    }
}
