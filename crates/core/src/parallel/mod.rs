//! Beyond one GPU: tensor (TP), pipeline (PP), expert (EP) and data (DP) parallel deployments.
//!
//! A **replica** is `tp × pp × ep` GPUs serving one batch; `dp` replicas serve independent
//! batches side by side. Ranks are placed TP fastest, then EP, then PP, so a TP group is `tp`
//! consecutive GPUs, an EP group spans `tp·ep` and a pipeline stage holds `tp·ep` GPUs.
//!
//! * **Tensor parallel** (Megatron-LM, Shoeybi et al. 2019): q/k/v, gate/up are column-parallel
//!   (each GPU holds `1/tp` of the output columns), o/down row-parallel (`1/tp` of the input
//!   rows, partial sums reduced by an all-reduce). Heads split `nh/tp` per GPU; when `tp`
//!   exceeds the KV heads each GPU holds one KV head, replicated `tp/kv` times (vLLM's
//!   `QKVParallelLinear`), so K/V weights and the KV cache per GPU are `1/min(tp, kv)` of the
//!   model's, not `1/tp`. MLA's latent KV is shared by all heads: every TP rank holds and reads
//!   all of it (its q_a/kv_a projections are replicated too). The embedding and the LM head are
//!   vocab-parallel. Two all-reduces of `T × hidden` activations per layer (after o_proj and
//!   after the MLP), one after the embedding, and a gather of the logits (the reference calculator: "adds two
//!   all-reduces of B x d activations per layer").
//! * **Pipeline parallel**: layers split into contiguous stages (see [`stage_layer_counts`]),
//!   activations (`T × hidden`) sent between stages, `M` micro-batches (default `min(pp, batch)`).
//!   Timing in [`pipeline`].
//! * **Expert parallel** (DeepSeek-V3, SGLang "DP attention"): the `ep` groups of `tp` GPUs
//!   run attention and the dense parts data-parallel, each on `1/ep` of the batch (the batch is
//!   assumed to divide evenly; a fractional share otherwise), and hold `E/ep` routed experts
//!   each (contiguous blocks: group `r` holds experts `r·E/ep … (r+1)·E/ep − 1`), TP-sharded
//!   inside the group. Tokens reach their experts by an all-to-all dispatch and come back by an
//!   all-to-all combine. The step waits for the busiest group: the one whose experts get the
//!   largest expected share of the routing ([`crate::moe::routing_probabilities`]). So GPUs per
//!   replica = `tp·pp·ep`; vLLM's "TP 8 with expert parallel" (attention TP-sharded and experts
//!   spread over the same 8 GPUs) is not this layout.
//! * **Data parallel**: `dp` replicas; per-GPU and per-replica numbers do not change, the
//!   deployment's totals do.
//!
//! **Communication.** A collective over `N` GPUs sends, per GPU and per direction:
//!
//! | operator | link bytes per GPU | latency |
//! |---|---|---|
//! | ring all-reduce of `S` bytes | `2·(N−1)/N · S` | `α₀ + 2·(N−1)·α` |
//! | all-gather of `S` bytes in all | `(N−1)/N · S` | `α₀ + (N−1)·α` |
//! | all-to-all | the busiest GPU's share from other groups | `α₀ + (N−1)·α` |
//! | pipeline send of `S` bytes | `S` | `α₀ + α` |
//!
//! and takes `link bytes ÷ (per-direction link bandwidth × link efficiency) + latency`. `α` is
//! the link's per-hop latency from the GPU catalogue and `α₀ =` [`COLLECTIVE_BASE_LATENCY_S`]:
//! both are NCCL's own cost model (`src/graph/tuning.cc`: `baseLat` and `hwLat` for the ring
//! algorithm and the LL protocol, the one NCCL picks for small messages). At batch 1 a
//! message is a few kB, so the latency dominates: an all-reduce over 8 NVLink GPUs costs
//! `6.6 + 14 × 0.6 = 15 µs` whatever the link's bandwidth. Communication is not overlapped with
//! compute, and its own HBM traffic is not counted. The link a group uses is the fastest whose
//! domain holds the group (an NVLink domain, the GPUs of one server on PCIe, else the network);
//! `--interconnect pcie` ignores NVLink.

pub mod pipeline;

pub use crate::layout::*;
pub use crate::memory::parallel::{footprint, stage_kv_bytes, stage_weight_bytes};
pub use crate::ops::{expert_share, ExpertShare, OpShard};
pub use pipeline::{for_each_gpu_op, for_each_gpu_site, op_timing, GpuOp, PipelineTiming, Site};
