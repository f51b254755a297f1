//! The step clock: a serving step's time from the ledger, memoised where the batch allows.

use super::*;

/// Decode steps remembered by a [`StepClock`] before its memo is cleared.
pub const DECODE_MEMO_ENTRIES: usize = 1 << 20;

/// The time of a serving step: the ledger's step time of that step's batch of chunks.
///
/// Every step goes through the ledger ([`summarise`]'s operators and timings), so whatever clock
/// the scenario carries times it. What does not change is not timed again:
///
/// * In a step of `B` sequences and `T` new tokens (decodes and prompt chunks), every operator
///   but attention's core (the attention kernel and the softmax inside it, or unfused
///   attention's three kernels) and MLA's expanded up-projection ([`crate::ops::reads_context`]) is a
///   function of `B` and `T` alone: the step's tokens, the
///   experts they touch, the logits, the collectives ([`crate::workload::Workload::with_chunks`]:
///   only attention reads the chunks). The clock keeps, per `(B, T)`, the step's operators
///   ([`StepParts`]), and for new chunks builds and times only those that read the context and
///   sums the step in the ledger's order, so the time is the ledger's to the last bit (a test
///   checks steps of every kind of model, engine and layout against it).
/// * On a model whose every attention layer reads its whole context (no window, chunk, top-k or
///   pooled entries), a step of `B` decodes at contexts `k₁ … k_B` has attention pairs and K/V
///   reads `Σ (kᵢ + 1)` (a recurrent layer's work does not depend on them), so its time is a
///   function of `(B, Σ kᵢ)` and is memoised on that key too.
#[derive(Debug, Clone)]
pub struct StepClock {
    pub(super) sc: Scenario,
    pub(super) decode_memo: Option<FxHashMap<(u64, u64), f64>>,
    /// Per step of `B` sequences and `T` new tokens: its operators as the ledger sums them.
    pub(super) parts: FxHashMap<(u64, u64), StepParts>,
    pub(super) host_s: f64,
}

impl StepClock {
    /// A clock on the scenario's model, GPU, precisions, layout and efficiencies.
    pub fn new(sc: &Scenario) -> StepClock {
        // Windows, chunks, top-k and pooled entries make a step's cost other than a function of
        // its summed contexts.
        let windowed = sc.model.layers().iter().any(|l| l.attention.reach().is_bounded());
        let host_s = crate::parallel::pipeline::kernel_timer(sc).host_step_s();
        StepClock {
            sc: sc.clone(),
            decode_memo: (!windowed).then(FxHashMap::default),
            parts: FxHashMap::default(),
            host_s,
        }
    }

    /// The host time each step's time includes, seconds (the ledger's `host` row,
    /// [`crate::roofline::TimeModel::host_step_s`]).
    pub fn host_s(&self) -> f64 {
        self.host_s
    }

    /// Seconds for one step of `chunks` (non-empty).
    pub fn step_s(&mut self, chunks: &[Chunk]) -> f64 {
        let decodes = chunks.iter().all(|c| c.new_tokens == 1);
        let key = match &self.decode_memo {
            Some(_) if decodes => Some((chunks.len() as u64, chunks.iter().map(|c| c.cached_tokens).sum::<u64>())),
            _ => None,
        };
        if let (Some(k), Some(memo)) = (key, &self.decode_memo) {
            if let Some(t) = memo.get(&k) {
                return *t;
            }
        }
        let t = self.parts_step_s(chunks);
        if let (Some(k), Some(memo)) = (key, &mut self.decode_memo) {
            if memo.len() >= DECODE_MEMO_ENTRIES {
                memo.clear();
            }
            memo.insert(k, t);
        }
        t
    }

    /// A step from the operators kept for its sequences and new tokens, the context-reading ones
    /// built and timed for these chunks (the type's docs).
    pub(super) fn parts_step_s(&mut self, chunks: &[Chunk]) -> f64 {
        let key = (chunks.len() as u64, chunks.iter().map(|c| c.new_tokens).sum::<u64>());
        let w = self.sc.workload.with_chunks(chunks.into());
        let base = std::mem::replace(&mut self.sc.workload, w);
        let kept = self.parts.get_mut(&key).and_then(|p| p.summarise_each(&self.sc, |_, _, _| {}));
        let t = match kept {
            Some(s) => s.step_time_s(),
            None => match StepParts::new(&self.sc, |_, _, _| {}) {
                Some((parts, s)) => {
                    if self.parts.len() >= DECODE_MEMO_ENTRIES {
                        self.parts.clear();
                    }
                    self.parts.insert(key, parts);
                    s.step_time_s()
                }
                None => summarise(&self.sc).step_time_s(),
            },
        };
        self.sc.workload = base;
        t
    }

    /// The ledger's step time of `chunks`, never memoised.
    pub fn ledger_step_s(&mut self, chunks: &[Chunk]) -> f64 {
        let w = self.sc.workload.with_chunks(chunks.into());
        let base = std::mem::replace(&mut self.sc.workload, w);
        let t = summarise(&self.sc).step_time_s();
        self.sc.workload = base;
        t
    }
}
