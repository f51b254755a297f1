//! Recurrent mixers' operators: Gated DeltaNet, Kimi Delta Attention and Mamba-2 (`in_proj`,
//! KDA's gate expansions, the short convolution, the scan over the state, the gated norm,
//! `out_proj`).
//!
//! A step's sequences split in two: decodes (one new token each) run the recurrent update on
//! their state; prompt chunks run the chunked algorithm (queries, keys and values of `C` tokens
//! at a time against the state, FLA's `chunk_gated_delta_rule` and `chunk_kda` with `C` = 64,
//! Mamba-2's SSD with its `chunk_size`). Each part is an operator of its own (engines launch a
//! decode kernel and a prefill kernel), in the same row.
//!
//! Per token, with `h_k, d_k` the query/key heads and width, `h_v, d_v` the value heads and width
//! (Mamba-2: `G` groups of state size `N`, `h` heads of `P`), `C` the chunk:
//!
//! | part | FLOPs | HBM bytes beyond the inputs and output |
//! |---|---|---|
//! | delta-rule decode | `h_v·(7·d_k·d_v + 2·d_v)`: decay `d_k·d_v`, `Sᵀk` `2·d_k·d_v`, `β(v − Sᵀk)` `2·d_v`, `S += k·δᵀ` `2·d_k·d_v`, `o = Sᵀq` `2·d_k·d_v` (Yang et al. 2024, eq. 5; FLA `fused_recurrent`) | the state read and written back, per sequence |
//! | delta-rule chunk | `h_v·(6·C·d_k + 4·C·d_v + 6·d_k·d_v + ⅔·C²)` (FLA `chunk_scaled_dot_kkt`, `solve_tril`, `recompute_w_u`, `chunk_fwd_h`, `chunk_fwd_o`) | the kernels' intermediates `h_v·(6·d_k + 6·d_v + C + 2·d_k·d_v/C)·a` (A, w, u, v_new and the per-chunk states `h`), and the state read and written once per sequence |
//! | Mamba-2 decode | `h·(5·P·N + 2·P)`: `h ← e^{ΔA}·h + Δ·x·Bᵀ` `3·P·N`, `y = h·C` `2·P·N`, `+ D·x` (Dao & Gu 2024 §7, `selective_state_update`) | the state, per sequence |
//! | Mamba-2 chunk | `2·G·C·N + h·(2·C·P + 4·P·N)` (Dao & Gu 2024 §6 and Listing 1: `C·Bᵀ`, the masked product with x, the chunk states and their read-out) | fp32 chunk states `h·16·P·N/C` (written and read twice) and `C·Bᵀ` `G·8·C` |
//!
//! plus the gates (`8` FLOPs a value, [`RECURRENT_GATE_FLOPS`]) and the L2 norms of the delta
//! rules' q and k (`4` a value). The decode part runs on the vector units in fp32; the chunked
//! part on the tensor cores at the activations' format.

use super::{Op, OpBuilder, OpKind};
use crate::conventions::{
    GATED_NORM_FLOPS_PER_ELEMENT, RECURRENT_GATE_FLOPS, RMSNORM_FLOPS_PER_ELEMENT, SILU_FLOPS_PER_ELEMENT,
};
use crate::cost::Cost;
use crate::model::{Reach, Recurrence, RecurrentMixer};
use crate::operator::{RecurrentPart, RecurrentShape};
use crate::precision::MathFormat;

/// What one step asks of a recurrent layer: its decodes and its prompt chunks.
#[derive(Debug, Clone, Copy)]
struct ScanWork {
    /// Sequences decoding one token.
    decodes: f64,
    /// Tokens of prompt chunks.
    prompt_tokens: f64,
    /// Sequences with a prompt chunk.
    prompt_sequences: f64,
}

impl OpBuilder<'_> {
    /// Every operator of a recurrent mixer, in order.
    pub(super) fn recurrent(&self, m: &RecurrentMixer, f: &mut impl FnMut(Op)) {
        let (t, h) = (self.tokens, self.hidden);
        let w = self.sc.weights.attention;
        f(self.gemm(OpKind::InProj, self.dense(t, m.in_proj_width(), h, w).with_bias(m.proj_bias)));
        for (rank, width) in m.gate_expansions() {
            f(self.gemm(OpKind::GateBProj, self.dense(t, width, rank, w)));
        }
        self.recurrent_core(m, f);
        if !self.seed {
            let params = match m.rule {
                Recurrence::GatedDelta | Recurrence::KimiDelta => m.value_head_dim,
                Recurrence::Mamba2 => m.value_dim(),
            };
            f(self.elementwise(
                OpKind::GatedNorm,
                t * m.value_dim() as f64,
                GATED_NORM_FLOPS_PER_ELEMENT,
                3.0,
                params as f64 * w.unquantised().bytes(),
            ));
        }
        f(self.gemm(OpKind::OutProj, self.dense(t, h, m.value_dim(), w).with_bias(m.proj_bias)));
    }

    /// The operators of a recurrent mixer whose cost depends on the step's split into decodes
    /// and prompt chunks (the convolution's and the scan's state traffic): emitted again for each
    /// step's chunks ([`super::reads_context`]).
    pub(super) fn recurrent_core(&self, m: &RecurrentMixer, f: &mut impl FnMut(Op)) {
        let g = self.sc.workload.attention_geometry(Reach::All);
        let work = ScanWork {
            decodes: g.decode_sequences,
            prompt_tokens: g.queries - g.decode_sequences,
            prompt_sequences: g.sequences - g.decode_sequences,
        };
        // Each kernel with the layer it belongs to, for the measured linear-attention kernels.
        let shape = |part| RecurrentShape {
            rule: m.rule,
            part,
            key_heads: m.key_heads as f64,
            value_heads: m.value_heads as f64,
            key_head_dim: m.key_head_dim,
            value_head_dim: m.value_head_dim,
            state_element_bytes: m.state.bytes(),
            decodes: work.decodes,
            prompt_sequences: work.prompt_sequences,
            prompt_tokens: work.prompt_tokens,
        };
        let mut emit = |op: Op, part| f(Op { recurrent: Some(shape(part)), ..op });
        if !self.seed {
            emit(self.short_conv(m, work), RecurrentPart::Conv);
        }
        let kind = match m.rule {
            Recurrence::GatedDelta | Recurrence::KimiDelta => OpKind::DeltaRule,
            Recurrence::Mamba2 => OpKind::SsmScan,
        };
        if work.decodes > 0.0 {
            emit(self.scan_decode(kind, m, work.decodes), RecurrentPart::Decode);
        }
        if work.prompt_tokens > 0.0 {
            emit(self.scan_chunks(kind, m, work), RecurrentPart::Chunks);
        }
    }

    /// The depthwise causal convolution of `K` taps over q, k and v (Mamba-2: x, B and C) and the
    /// SiLU after it: `2·K + 4` FLOPs per channel and token (`+1` with a bias); the channels read
    /// and written; its taps; and the last `K − 1` inputs of every sequence read and written back
    /// (vLLM's `causal_conv1d_update` / `causal_conv1d_fn` with `conv_states`), at the
    /// activations' format.
    fn short_conv(&self, m: &RecurrentMixer, work: ScanWork) -> Op {
        let channels = m.conv_channels() as f64;
        let k = m.conv_kernel as f64;
        let per = 2.0 * k + SILU_FLOPS_PER_ELEMENT + if m.conv_bias { 1.0 } else { 0.0 };
        let taps = channels * (k + if m.conv_bias { 1.0 } else { 0.0 });
        let mut op = self.elementwise(
            OpKind::ShortConv,
            self.tokens * channels,
            per,
            2.0,
            taps * self.sc.weights.attention.unquantised().bytes(),
        );
        let state = (work.decodes + work.prompt_sequences) * m.conv_state_elements() as f64 * self.a;
        op.cost.state_read_bytes = state;
        op.cost.state_write_bytes = state;
        op
    }

    /// FLOPs of the gates and norms that come with each token: the L2 norms of the delta rules'
    /// q and k (`2·h_k·d_k` values at 4), and the decay and β (Gated DeltaNet: per value head;
    /// KDA: a decay per key channel; Mamba-2: Δ and `exp(ΔA)` per head) at
    /// [`RECURRENT_GATE_FLOPS`].
    fn gate_flops_per_token(m: &RecurrentMixer) -> f64 {
        let (kd, hv) = (m.key_dim() as f64, m.value_heads as f64);
        match m.rule {
            Recurrence::GatedDelta => 2.0 * kd * RMSNORM_FLOPS_PER_ELEMENT + 2.0 * hv * RECURRENT_GATE_FLOPS,
            Recurrence::KimiDelta => 2.0 * kd * RMSNORM_FLOPS_PER_ELEMENT + (kd + hv) * RECURRENT_GATE_FLOPS,
            Recurrence::Mamba2 => hv * RECURRENT_GATE_FLOPS,
        }
    }

    /// The recurrent update of `decodes` sequences, one token each (module table): the state
    /// read and written back per sequence at its precision, the inputs (`2·h_k·d_k + h_v·d_v`
    /// and the gates) read and the output `h_v·d_v` written; fp32 on the vector units.
    fn scan_decode(&self, kind: OpKind, m: &RecurrentMixer, decodes: f64) -> Op {
        let (dk, dv, hv) = (m.key_head_dim as f64, m.value_head_dim as f64, m.value_heads as f64);
        let core = match m.rule {
            Recurrence::GatedDelta | Recurrence::KimiDelta => hv * (7.0 * dk * dv + 2.0 * dv),
            Recurrence::Mamba2 => hv * (5.0 * dk * dv + 2.0 * dv),
        };
        let state = decodes * m.state_elements() as f64 * m.state.bytes();
        let inputs = decodes * (m.conv_channels() + 2 * m.value_heads) as f64 * self.a;
        let output = decodes * m.value_dim() as f64 * self.a;
        let cost = Cost {
            flops: decodes * (core + Self::gate_flops_per_token(m)),
            state_read_bytes: state,
            state_write_bytes: state,
            activation_bytes: inputs + output,
            activation_written_bytes: output,
            ..Cost::ZERO
        };
        Op::plain(kind, cost, MathFormat::Vector)
    }

    /// The chunked algorithm over the prompt tokens of a step (module table), on the tensor cores:
    /// its intermediates through HBM, and each sequence's state read once and written once.
    fn scan_chunks(&self, kind: OpKind, m: &RecurrentMixer, work: ScanWork) -> Op {
        let (dk, dv) = (m.key_head_dim as f64, m.value_head_dim as f64);
        let (hk, hv, c) = (m.key_heads as f64, m.value_heads as f64, m.chunk as f64);
        let a = self.a;
        let (core, intermediates) = match m.rule {
            Recurrence::GatedDelta | Recurrence::KimiDelta => {
                let flops = hv * (6.0 * c * dk + 4.0 * c * dv + 6.0 * dk * dv + 2.0 / 3.0 * c * c);
                // KDA's decay is a vector per key channel: its cumulative sums in fp32, written and read.
                let decay = if m.rule == Recurrence::KimiDelta { hv * dk * 8.0 } else { 0.0 };
                (flops, hv * (6.0 * dk + 6.0 * dv + c + 2.0 * dk * dv / c) * a + decay)
            }
            Recurrence::Mamba2 => {
                let flops = 2.0 * hk * c * dk + hv * (2.0 * c * dv + 4.0 * dv * dk);
                // Inputs x, B, C and Δ read, y written; fp32 chunk states written and read twice;
                // C·Bᵀ per group in fp32, written and read.
                let io = (m.conv_channels() + m.value_heads + m.value_dim()) as f64 * a;
                (flops, io + hv * 16.0 * dv * dk / c + hk * 8.0 * c)
            }
        };
        let t = work.prompt_tokens;
        let state = work.prompt_sequences * m.state_elements() as f64 * m.state.bytes();
        let output = t * m.value_dim() as f64 * a;
        let cost = Cost {
            flops: t * (core + Self::gate_flops_per_token(m)),
            state_read_bytes: state,
            state_write_bytes: state,
            activation_bytes: t * intermediates,
            activation_written_bytes: output,
            ..Cost::ZERO
        };
        Op::plain(kind, cost, self.math(self.act.native_math()))
    }
}
