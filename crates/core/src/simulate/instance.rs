//! One serving instance: its requests, its wait queue, its running batch, its paged KV cache
//! and its scheduler.

use super::*;

/// A request in the system.
#[derive(Debug, Clone)]
pub(super) struct Req {
    pub(super) arrival_s: f64,
    pub(super) prompt: u64,
    pub(super) output: u64,
    pub(super) hit: u64,
    /// Tokens in the KV cache when it is next admitted, without computing them: its prefix-cache
    /// hit, or the prompt whose cache was moved to it from a prefill instance.
    pub(super) present: u64,
    /// Its cache came over the link (its prefix hits were counted where it was prefilled).
    pub(super) transferred: bool,
    /// Tokens in the KV cache (computed, or found in the prefix cache).
    pub(super) cached: u64,
    /// Output tokens generated.
    pub(super) generated: u64,
    pub(super) first_token_s: f64,
    pub(super) last_token_s: f64,
    /// When its tokens last reached the client: the end of the step that produced them, or of
    /// the multi-step run they were produced in ([`SimConfig::scheduler_steps`]).
    pub(super) streamed_s: f64,
    pub(super) blocks: u64,
    /// Scheduled in the step being built.
    pub(super) in_step: bool,
    /// Its cache is in host memory (swapped out by a preemption).
    pub(super) swapped: bool,
    /// Counted in the summary's statistics (arrived after the warm-up).
    pub(super) measured: bool,
    /// The shared sequences its prompt starts with (with the prefix cache on; boxed, so that
    /// requests without one stay small to move).
    pub(super) prefix: Option<Box<PromptPrefix>>,
    /// Blocks it uses from the prefix cache (the rest of its cache is its own, `blocks`).
    pub(super) shared: u64,
    /// It pins its prefix's ids in the cache.
    pub(super) pinned: bool,
}

impl Req {
    /// Tokens to prefill before the next token: the prompt and every token generated so far.
    pub(super) fn prefill_target(&self) -> u64 {
        self.prompt + self.generated
    }
    pub(super) fn in_prefill(&self) -> bool {
        self.cached < self.prefill_target()
    }
    /// Its next step decodes one token: it has a first token and only the last token's KV to
    /// compute (a sequence recomputing after a preemption is in prefill until then).
    pub(super) fn decoding(&self) -> bool {
        self.generated > 0 && self.cached + 1 == self.prefill_target()
    }
}

/// What an instance does with a request once its first token is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Keeps it and decodes it (aggregated serving, and the decode pool).
    Keep,
    /// Hands it to the decode pool over the link (the prefill pool).
    HandOff,
}

/// One serving instance: its queue, its running batch, its paged KV cache and the step in flight.
/// Every instance of every deployment runs the same scheduler ([`Instance::schedule`]).
pub(super) struct Instance<'a> {
    pub(super) cfg: &'a SimConfig,
    pub(super) role: Role,
    /// Its layout's [`Pool`] (index in the engine's pools).
    pub(super) pool: usize,
    pub(super) waiting: VecDeque<Req>,
    pub(super) running: Vec<Req>,
    pub(super) total_blocks: u64,
    pub(super) free_blocks: u64,
    /// Blocks each running sequence holds for its recurrent state, however long it is
    /// ([`crate::memory::state_tokens_per_sequence`]).
    pub(super) state_blocks: u64,
    /// End of the step in flight (none: idle).
    pub(super) busy_until_s: Option<f64>,
    /// The step in flight: (index in `running`, new tokens).
    pub(super) plan: Vec<(usize, u64)>,
    pub(super) step_start_s: f64,
    pub(super) step_record: StepRecord,
    pub(super) batch: TimeAverage,
    pub(super) queue: TimeAverage,
    pub(super) kv: TimeAverage,
    pub(super) preemptions: u64,
    pub(super) recomputed: u64,
    pub(super) hit_tokens: u64,
    /// Cached tokens of each sequence swapped out, and in, while building the step.
    pub(super) swap_out: Vec<u64>,
    pub(super) swap_in: Vec<u64>,
    /// SGLang's reservation ratio ([`Admission::Sglang`]).
    pub(super) new_token_ratio: f64,
    /// Steps left of a multi-step scheduling ([`SimConfig::scheduler_steps`]).
    pub(super) multi_left: u64,
    /// The prefix cache ([`SimConfig::prefix_cache`]).
    pub(super) cache: prefix::PrefixCache,
    /// Prompt tokens looked up in the prefix cache at admissions.
    pub(super) looked_up_tokens: u64,
    /// Most sequences running at once (admitted: in prefill or decoding), after any step's
    /// admissions.
    pub(super) peak_running: u64,
}

impl<'a> Instance<'a> {
    pub(super) fn new(
        cfg: &'a SimConfig,
        role: Role,
        pool: usize,
        total_blocks: u64,
        state_blocks: u64,
    ) -> Instance<'a> {
        Instance {
            cfg,
            role,
            pool,
            waiting: VecDeque::new(),
            running: Vec::new(),
            total_blocks,
            free_blocks: total_blocks,
            state_blocks,
            busy_until_s: None,
            plan: Vec::new(),
            step_start_s: 0.0,
            step_record: StepRecord {
                step: 0,
                start_s: 0.0,
                time_s: 0.0,
                decodes: 0,
                prefills: 0,
                tokens: 0,
                waiting: 0,
                kv_blocks_used: 0,
                preemptions: 0,
            },
            batch: TimeAverage::default(),
            queue: TimeAverage::default(),
            kv: TimeAverage::default(),
            preemptions: 0,
            recomputed: 0,
            hit_tokens: 0,
            swap_out: Vec::new(),
            swap_in: Vec::new(),
            new_token_ratio: match cfg.admission {
                Admission::Sglang { init, .. } => init,
                Admission::MaxUtilization | Admission::GuaranteedNoEvict | Admission::Watermark { .. } => 0.0,
            },
            multi_left: 0,
            cache: prefix::PrefixCache::default(),
            looked_up_tokens: 0,
            peak_running: 0,
        }
    }

    /// Blocks an allocation can have: the free ones and the prefix cache's evictable ones.
    pub(super) fn available(&self) -> u64 {
        self.free_blocks + self.cache.evictable
    }

    /// Take `n` blocks (at most [`Instance::available`]), evicting from the prefix cache what
    /// the free ones lack.
    pub(super) fn take(&mut self, n: u64) {
        if n > self.free_blocks {
            self.free_blocks += self.cache.evict(n - self.free_blocks);
        }
        self.free_blocks -= n;
    }

    /// `r` leaves the running batch: its own blocks are freed, its prefix unpinned.
    pub(super) fn release(&mut self, r: &mut Req) {
        self.free_blocks += r.blocks;
        r.blocks = 0;
        if r.pinned {
            let p = *r.prefix.as_deref().expect("a pinned request has a prefix");
            self.cache.unpin(&p, r.prompt, self.cfg.block_tokens);
            r.pinned = false;
        }
        r.shared = 0;
    }

    /// Blocks `r` lacks to hold `tokens` cached positions.
    pub(super) fn blocks_short(&self, r: &Req, tokens: u64) -> u64 {
        self.blocks_for(tokens).saturating_sub(r.blocks + r.shared)
    }

    pub(super) fn has_work(&self) -> bool {
        !(self.running.is_empty() && self.waiting.is_empty())
    }

    /// Requests held (waiting or running).
    pub(super) fn load(&self) -> usize {
        self.running.len() + self.waiting.len()
    }

    pub(super) fn used_blocks(&self) -> u64 {
        self.total_blocks - self.free_blocks
    }

    /// Blocks a sequence holding `tokens` cached positions takes: its KV's, and its state's.
    pub(super) fn blocks_for(&self, tokens: u64) -> u64 {
        tokens.div_ceil(self.cfg.block_tokens) + self.state_blocks
    }

    /// Preempt running request `j` (by recompute or swap, [`Preemption`]): free its blocks, send
    /// it to the front of the queue; plan indices above `j` shift down.
    pub(super) fn preempt(&mut self, j: usize, plan: &mut [(usize, u64)]) {
        let mut r = self.running.remove(j);
        self.release(&mut r);
        self.preemptions += 1;
        match self.cfg.preemption {
            Preemption::Recompute => {
                self.recomputed += r.cached - r.hit;
                r.present = r.hit;
                r.transferred = false;
            }
            Preemption::Swap => {
                self.swap_out.push(r.cached);
                r.present = r.cached;
                r.swapped = true;
            }
        }
        if let Admission::Sglang { init, .. } = self.cfg.admission {
            self.new_token_ratio = init;
        }
        r.blocks = 0;
        r.cached = 0;
        r.in_step = false;
        self.waiting.push_front(r);
        for (i, _) in plan.iter_mut() {
            if *i > j {
                *i -= 1;
            }
        }
    }

    /// Reserve blocks for running request `*i` to hold `tokens`, preempting the most recently
    /// admitted request not in the step while none is free. False when only `*i` itself is left
    /// to preempt.
    pub(super) fn reserve(&mut self, plan: &mut [(usize, u64)], i: &mut usize, tokens: u64) -> bool {
        loop {
            let need = self.blocks_short(&self.running[*i], tokens);
            if need <= self.available() {
                self.take(need);
                self.running[*i].blocks += need;
                return true;
            }
            let Some(v) = (0..self.running.len()).rev().find(|&j| j != *i && !self.running[j].in_step) else {
                return false;
            };
            self.preempt(v, plan);
            if v < *i {
                *i -= 1;
            }
        }
    }

    /// New tokens of a decoding sequence's step: 1, or with speculation the last token and as
    /// many drafts as its output has left, up to the depth.
    pub(super) fn decode_tokens(&self, r: &Req) -> u64 {
        match &self.cfg.speculation {
            None => 1,
            Some(s) => 1 + s.depth.min(r.output - r.generated - 1),
        }
    }

    /// SGLang's reservation for `r`'s future decodes, tokens: `ratio · min(output left, clip)`
    /// (0 under the other policies).
    pub(super) fn sglang_reservation(&self, r: &Req) -> f64 {
        match self.cfg.admission {
            Admission::Sglang { .. } => {
                self.new_token_ratio * (r.output - r.generated).min(policy::SGLANG_CLIP_TOKENS) as f64
            }
            Admission::MaxUtilization | Admission::GuaranteedNoEvict | Admission::Watermark { .. } => 0.0,
        }
    }

    /// SGLang's reservations of every running sequence, tokens.
    pub(super) fn sglang_reserved_tokens(&self) -> f64 {
        match self.cfg.admission {
            Admission::Sglang { .. } => self.running.iter().map(|r| self.sglang_reservation(r)).sum(),
            Admission::MaxUtilization | Admission::GuaranteedNoEvict | Admission::Watermark { .. } => 0.0,
        }
    }

    /// The step of a multi-step scheduling after its first: the sequences of the first that
    /// are still running, one token each (their blocks were reserved by [`Instance::reserve_ahead`]).
    pub(super) fn continue_steps(&mut self, plan: &mut Vec<(usize, u64)>) {
        plan.clear();
        plan.extend(self.running.iter().enumerate().filter(|(_, r)| r.in_step).map(|(i, _)| (i, 1)));
    }

    /// After a scheduling whose step only decodes: reserve blocks for `steps` tokens of each of
    /// its sequences, if free, so that they decode `steps` steps without scheduling. Whether
    /// they were.
    pub(super) fn reserve_ahead(&mut self, plan: &[(usize, u64)], steps: u64) -> bool {
        let mut need = 0;
        for &(i, _) in plan {
            let r = &self.running[i];
            need += self.blocks_short(r, r.cached + steps);
        }
        if need > self.available() {
            return false;
        }
        for &(i, _) in plan {
            let more = self.blocks_short(&self.running[i], self.running[i].cached + steps);
            self.running[i].blocks += more;
        }
        self.take(need);
        true
    }

    /// Build the step's plan: (index in `running`, new tokens).
    pub(super) fn schedule(&mut self, plan: &mut Vec<(usize, u64)>) {
        plan.clear();
        for r in self.running.iter_mut() {
            r.in_step = false;
        }
        let mut budget = self.cfg.max_batched_tokens;
        for pass in self.cfg.schedule.passes() {
            if let Pass::RunningDecodes | Pass::RunningPrefills = pass {
                // Running decodes or running prefills, in admission order.
                let mut i = 0;
                while i < self.running.len() && (plan.len() as u64) < self.cfg.max_seqs && budget > 0 {
                    let r = &self.running[i];
                    let decoding = r.decoding();
                    if r.in_step || decoding != (pass == Pass::RunningDecodes) {
                        i += 1;
                        continue;
                    }
                    let n = if decoding {
                        self.decode_tokens(r)
                    } else {
                        (r.prefill_target() - r.cached).min(self.cfg.chunk_tokens).min(budget)
                    };
                    let tokens = r.cached + n;
                    let mut at = i;
                    if self.reserve(plan, &mut at, tokens) {
                        self.running[at].in_step = true;
                        plan.push((at, n));
                        budget -= n;
                        i = at + 1;
                    } else {
                        // Nothing left to preempt but itself: it yields its blocks and waits.
                        self.preempt(at, plan);
                        i = at;
                    }
                }
            } else {
                // Admissions, first come first served, while the admission policy lets the next in.
                let mut reserved_tokens = self.sglang_reserved_tokens();
                while (plan.len() as u64) < self.cfg.max_seqs
                    && budget > 0
                    && (self.running.len() as u64) < self.cfg.max_seqs
                {
                    let Some(r) = self.waiting.front() else { break };
                    let block = self.cfg.block_tokens;
                    // The prefix cache's blocks of its prompt, pinned while it is considered.
                    let cached_prefix = r.prefix.as_deref().copied().filter(|_| !r.swapped && !r.transferred);
                    let shared = cached_prefix.map_or(0, |p| self.cache.lookup(&p, r.prompt, block));
                    let start = if cached_prefix.is_some() { shared * block } else { r.present };
                    let (prompt, target, most) = (r.prompt, r.prefill_target(), r.prompt + r.output - 1);
                    if let Some(p) = &cached_prefix {
                        self.cache.pin(p, prompt, block);
                    }
                    let r = self.waiting.front().expect("front exists");
                    let n = (target - start).min(self.cfg.chunk_tokens).min(budget);
                    let own = |tokens: u64| self.blocks_for(tokens) - shared;
                    let first = own(start + n);
                    let idle = self.running.is_empty();
                    let (need, room) = match self.cfg.admission {
                        Admission::MaxUtilization | Admission::Sglang { .. } => (first, self.available()),
                        Admission::GuaranteedNoEvict => {
                            let most = if self.role == Role::HandOff { prompt } else { most };
                            (own(most).max(first), self.available())
                        }
                        Admission::Watermark { fraction } => {
                            let keep = if idle { 0 } else { (fraction * self.total_blocks as f64) as u64 };
                            (own(target).max(first), self.available().saturating_sub(keep))
                        }
                    };
                    let mut admit = need <= room;
                    let future = self.sglang_reservation(r);
                    if let (true, Admission::Sglang { .. }) = (admit, self.cfg.admission) {
                        let free_tokens = (self.available() * block) as f64;
                        let want = (target - start) as f64 + future;
                        admit = idle || want <= free_tokens - reserved_tokens;
                    }
                    if !admit {
                        if let Some(p) = &cached_prefix {
                            self.cache.unpin(p, prompt, block);
                        }
                        break;
                    }
                    reserved_tokens += future;
                    let mut r = self.waiting.pop_front().expect("front exists");
                    r.cached = start;
                    if r.swapped {
                        self.swap_in.push(start);
                        r.swapped = false;
                    } else if !r.transferred {
                        self.hit_tokens += start;
                    }
                    if cached_prefix.is_some() {
                        r.hit = start;
                        r.shared = shared;
                        r.pinned = true;
                        self.looked_up_tokens += prompt;
                    }
                    r.blocks = need;
                    r.in_step = true;
                    self.take(need);
                    self.running.push(r);
                    plan.push((self.running.len() - 1, n));
                    budget -= n;
                }
            }
        }
    }
}
