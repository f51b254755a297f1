//! The run: the event loop over arrivals, steps and cache transfers of every instance of a
//! deployment, and the statistics it keeps.

use super::*;

/// A KV cache on its way from a prefill instance to the decode pool.
pub(super) struct Transfer {
    pub(super) ready_s: f64,
    pub(super) req: Req,
}

/// The next thing that happens (ties resolved in this order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Event {
    /// An open-loop arrival.
    Arrival,
    /// A KV transfer completes (index in `transfers`).
    KvArrives(usize),
    /// An instance's step ends.
    StepEnds(usize),
}

/// The instances of one layout: its scenario, the clock of its steps and its per-GPU KV bytes.
pub(super) struct Pool<'a> {
    pub(super) sc: Cow<'a, Scenario>,
    pub(super) clock: StepClock,
    pub(super) kv_bytes_memo: FxHashMap<u64, f64>,
}

impl<'a> Pool<'a> {
    pub(super) fn new(sc: Cow<'a, Scenario>) -> Pool<'a> {
        let clock = StepClock::new(&sc);
        Pool { sc, clock, kv_bytes_memo: FxHashMap::default() }
    }
}

/// The KV capacities a request must fit, tokens.
#[derive(Debug, Clone, Copy)]
pub(super) struct Capacity {
    /// Of an instance that keeps a request to its last token (aggregated, or the decode pool):
    /// its whole cache, `prompt + output − 1`.
    pub(super) whole: u64,
    /// Of a prefill instance (disaggregated): its prompt.
    pub(super) prompt: Option<u64>,
}

pub(super) struct Run<'a> {
    pub(super) cfg: &'a SimConfig,
    /// One per layout: the aggregated instances' or both pools', or the prefill pool's then the
    /// decode pool's.
    pub(super) pools: Vec<Pool<'a>>,
    /// The decode pool's (a disaggregated deployment).
    pub(super) decode_pool: usize,
    pub(super) source: Source,
    pub(super) pending: Option<Arrival>,
    pub(super) instances: Vec<Instance<'a>>,
    /// Instances that take arrivals (round robin): all of an aggregated deployment, the prefill
    /// pool of a disaggregated one. The rest are the decode pool.
    pub(super) front: usize,
    pub(super) next_front: usize,
    pub(super) link: Option<KvLink>,
    /// When each front instance's link is free again.
    pub(super) link_free_s: Vec<f64>,
    pub(super) transfers: Vec<Transfer>,
    /// Where the clock has its zero, seconds from the start (module docs, "The clock").
    pub(super) origin_s: f64,
    /// Now, on the clock.
    pub(super) now_s: f64,
    /// The last arrival, seconds from the start.
    pub(super) last_arrival_s: f64,
    pub(super) waiting_at_last_arrival: u64,
    // Statistics.
    pub(super) ttft: Sketch,
    pub(super) tpot: Sketch,
    pub(super) itl: Sketch,
    pub(super) e2e: Sketch,
    pub(super) transfer: Sketch,
    pub(super) in_system: u64,
    pub(super) in_system_avg: TimeAverage,
    pub(super) last_event_s: f64,
    pub(super) series: Series,
    pub(super) completed: u64,
    pub(super) good: u64,
    pub(super) processed: u64,
    pub(super) output_tokens: u64,
    pub(super) prompt_tokens: u64,
    pub(super) steps: u64,
    /// Steps charged to the budget so far.
    pub(super) charged: u64,
    /// The router's draws ([`Router::Random`]).
    pub(super) route_rng: rng::Pcg32,
    /// Speculation's acceptance draws.
    pub(super) spec_rng: rng::Pcg32,
    /// A draft model's clock ([`Draft::Model`]).
    pub(super) draft_clock: Option<StepClock>,
    /// Draft chunks of a speculative step (reused).
    pub(super) draft_chunks: Vec<Chunk>,
    /// Decoding sequence-steps and the tokens they gained, under speculation.
    pub(super) spec_steps: u64,
    pub(super) spec_tokens: u64,
    /// The host link that swapped caches cross ([`Preemption::Swap`]).
    pub(super) swap_link: Option<KvLink>,
    /// Completed requests counted in the summary (after the warm-up).
    pub(super) measured_completed: u64,
    /// GPU-seconds of steps on prompt and on output tokens ([`SimSummary::prompt_busy_gpu_s`]).
    pub(super) prompt_busy_gpu_s: f64,
    pub(super) output_busy_gpu_s: f64,
    /// Arrival of the first request after the warm-up, seconds from the start.
    pub(super) window_start_s: f64,
}

impl Run<'_> {
    /// Advance the in-system integral to `t_s`.
    pub(super) fn mark(&mut self, t_s: f64) {
        let dt = t_s - self.last_event_s;
        if dt > 0.0 {
            self.in_system_avg.hold(self.in_system as f64, dt);
            self.last_event_s = t_s;
        }
    }

    pub(super) fn waiting(&self) -> u64 {
        self.instances.iter().map(|i| i.waiting.len() as u64).sum()
    }

    /// The front instance the router sends the next arrival to ([`Router`]).
    pub(super) fn route(&mut self) -> usize {
        let front = &self.instances[..self.front];
        match self.cfg.router {
            Router::RoundRobin => {
                let to = self.next_front % self.front;
                self.next_front = (self.next_front + 1) % self.front;
                to
            }
            Router::Random => self.route_rng.range(0, self.front as u64 - 1) as usize,
            Router::LeastOutstanding => (0..self.front).min_by_key(|&j| front[j].load()).expect("a front instance"),
            Router::KvUsage => (0..self.front)
                .min_by(|&a, &b| {
                    let (x, y) = (&front[a], &front[b]);
                    let ux = x.used_blocks() as f64 / x.total_blocks as f64;
                    let uy = y.used_blocks() as f64 / y.total_blocks as f64;
                    ux.total_cmp(&uy).then(x.load().cmp(&y.load()))
                })
                .expect("a front instance"),
        }
    }

    /// A new request joins the queue of the front instance the router picks.
    pub(super) fn enqueue(&mut self, a: Arrival, capacity: Capacity) -> Result<()> {
        check_request(a.prompt_tokens, a.output_tokens, capacity, "prompt")?;
        if !a.absolute_s.is_finite() {
            // Only open loops draw times; a trace's are checked finite.
            let rate = self.cfg.arrivals.rate_per_s().unwrap_or(f64::NAN);
            return Err(Error::invalid(
                "rate",
                crate::error::compact_f64(rate),
                format!(
                    "a rate at which {} requests arrive within {} s, the longest time a number holds",
                    self.source.total(),
                    crate::error::compact_f64(f64::MAX)
                ),
            ));
        }
        self.mark(a.arrival_s);
        self.in_system += 1;
        let hit = ((self.cfg.prefix_hit * a.prompt_tokens as f64).floor() as u64).min(a.prompt_tokens - 1);
        let to = self.route();
        let measured = self.source.issued() > self.cfg.warmup_requests;
        if measured && self.source.issued() == self.cfg.warmup_requests + 1 {
            self.window_start_s = a.absolute_s;
        }
        self.instances[to].waiting.push_back(Req {
            arrival_s: a.arrival_s,
            prompt: a.prompt_tokens,
            output: a.output_tokens,
            hit,
            present: hit,
            transferred: false,
            cached: 0,
            generated: 0,
            first_token_s: 0.0,
            last_token_s: 0.0,
            streamed_s: 0.0,
            blocks: 0,
            in_step: false,
            swapped: false,
            measured,
            prefix: if self.cfg.prefix_cache { a.prefix.map(Box::new) } else { None },
            shared: 0,
            pinned: false,
        });
        self.last_arrival_s = a.absolute_s;
        if self.source.issued() == self.source.total() {
            self.waiting_at_last_arrival = self.waiting();
        }
        Ok(())
    }

    /// The next event and its time: arrivals first, then KV arrivals, then step ends, at a tie.
    pub(super) fn next_event(&mut self) -> Option<(f64, Event)> {
        if self.pending.is_none() {
            self.pending = self.source.next_open();
        }
        let capped = self.cfg.max_concurrency.is_some_and(|c| self.in_system >= c);
        let mut best: Option<(f64, Event)> = self.pending.filter(|_| !capped).map(|a| (a.arrival_s, Event::Arrival));
        let mut offer = |t: f64, ev: Event| {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, ev));
            }
        };
        for (k, x) in self.transfers.iter().enumerate() {
            offer(x.ready_s, Event::KvArrives(k));
        }
        for (k, inst) in self.instances.iter().enumerate() {
            if let Some(t) = inst.busy_until_s {
                offer(t, Event::StepEnds(k));
            }
        }
        best
    }

    /// Move the clock's zero to `t_s`, where a request arrives at an empty system, `absolute_s`
    /// from the start (module docs, "The clock").
    pub(super) fn rebase(&mut self, t_s: f64, absolute_s: f64) {
        self.mark(t_s);
        self.origin_s = absolute_s;
        self.now_s = 0.0;
        self.last_event_s = 0.0;
        for free in &mut self.link_free_s {
            *free -= t_s;
        }
        if let Some(a) = &mut self.pending {
            a.arrival_s -= t_s;
        }
        self.source.rebase(absolute_s, t_s);
    }

    /// Serve every request (or stop at [`MAX_STEPS`]), charging the steps to `budget`.
    pub(super) fn run(
        &mut self,
        capacity: Capacity,
        budget: &Budget,
        on_step: &mut impl FnMut(&StepRecord),
    ) -> Result<()> {
        self.serve(capacity, budget, on_step)?;
        budget.charge(self.steps - self.charged)
    }

    pub(super) fn serve(
        &mut self,
        capacity: Capacity,
        budget: &Budget,
        on_step: &mut impl FnMut(&StepRecord),
    ) -> Result<()> {
        if let Arrivals::Closed { concurrency } = self.cfg.arrivals {
            for _ in 0..concurrency {
                if let Some(a) = self.source.next_closed(0.0) {
                    self.enqueue(a, capacity)?;
                }
            }
        }
        let mut chunks: Vec<Chunk> = Vec::new();
        while self.steps < MAX_STEPS {
            if self.steps - self.charged >= budget::CHECK_STEPS {
                budget.charge(self.steps - self.charged)?;
                self.charged = self.steps;
            }
            let next = self.next_event();
            if next.is_none_or(|(t, _)| t > self.now_s) {
                // Nothing else happens now: every idle instance with work starts a step.
                let mut started = false;
                for k in 0..self.instances.len() {
                    if self.instances[k].busy_until_s.is_none() && self.instances[k].has_work() {
                        self.start_step(k, &mut chunks)?;
                        started = true;
                    }
                }
                if started {
                    continue;
                }
            }
            let Some((mut t, event)) = next else { return Ok(()) };
            if event == Event::Arrival && self.in_system == 0 && t != 0.0 {
                let absolute_s = self.pending.map_or(t, |a| a.absolute_s);
                self.rebase(t, absolute_s);
                t = 0.0;
            }
            self.now_s = self.now_s.max(t);
            match event {
                Event::Arrival => {
                    let mut a = self.pending.take().expect("a pending arrival");
                    if self.cfg.max_concurrency.is_some() && a.arrival_s < self.now_s {
                        // Held back by the concurrency cap: sent now.
                        a.absolute_s = self.origin_s + self.now_s;
                        a.arrival_s = self.now_s;
                    }
                    self.enqueue(a, capacity)?;
                }
                Event::KvArrives(k) => {
                    let x = self.transfers.swap_remove(k);
                    // The decode instance holding the fewest requests takes it (the first at a tie).
                    let to = (self.front..self.instances.len())
                        .min_by_key(|&j| self.instances[j].load())
                        .expect("a decode pool");
                    self.instances[to].waiting.push_back(x.req);
                }
                Event::StepEnds(k) => self.end_step(k, capacity, on_step)?,
            }
        }
        Ok(())
    }

    /// Schedule and time a step of instance `k` starting now.
    pub(super) fn start_step(&mut self, k: usize, chunks: &mut Vec<Chunk>) -> Result<()> {
        let inst = &mut self.instances[k];
        let preempted_before = inst.preemptions;
        let mut plan = std::mem::take(&mut inst.plan);
        let mut inner = false;
        inst.swap_out.clear();
        inst.swap_in.clear();
        if inst.multi_left > 0 {
            inst.continue_steps(&mut plan);
            inst.multi_left -= 1;
            inner = !plan.is_empty();
        }
        if !inner {
            inst.multi_left = 0;
            inst.schedule(&mut plan);
            let steps = self.cfg.scheduler_steps;
            if steps > 1
                && !plan.is_empty()
                && plan.iter().all(|&(i, _)| inst.running[i].decoding())
                && inst.reserve_ahead(&plan, steps)
            {
                inst.multi_left = steps - 1;
            }
        }
        if plan.is_empty() {
            // Nothing fits even an empty cache: cannot happen for checked requests.
            return Err(Error::invalid("block", self.cfg.block_tokens, "a block size the KV capacity can hold"));
        }
        chunks.clear();
        let (mut decodes, mut prefills, mut tokens, mut prompt_tokens) = (0, 0, 0, 0);
        for &(i, n) in &plan {
            let r = &inst.running[i];
            chunks.push(Chunk { new_tokens: n, cached_tokens: r.cached });
            if r.decoding() {
                decodes += 1;
            } else {
                prefills += 1;
                prompt_tokens += n;
            }
            tokens += n;
        }
        if decodes == plan.len() as u64 {
            let padded = self.cfg.cuda_graphs.padded(decodes, self.cfg.max_seqs);
            // A padding slot is a dummy generation request holding one cached token
            // (TensorRT-LLM's `add_dummy_requests(..., is_gen=True)`, vLLM's padded decode
            // entries): it runs the decode graph's generation-phase attention. With nothing
            // cached it would be a one-token prompt, timed on the context kernel.
            let pad = Chunk { new_tokens: chunks[0].new_tokens, cached_tokens: 1 };
            chunks.extend(std::iter::repeat_n(pad, (padded - decodes) as usize));
        }
        let clock = &mut self.pools[self.instances[k].pool].clock;
        let full_s = clock.step_s(chunks);
        let host_s = clock.host_s();
        let mut dt = match (inner, self.cfg.host) {
            (true, _) => full_s - host_s,
            (false, HostTime::Serial) => full_s,
            (false, HostTime::Overlapped) => (full_s - host_s).max(host_s),
        };
        dt += self.draft_s(k, &plan, chunks);
        dt += self.swap_s(k)?;
        let gpu_s = dt * self.pools[self.instances[k].pool].sc.parallel.gpus_per_replica() as f64;
        let prompt_share = prompt_tokens as f64 / tokens as f64;
        self.prompt_busy_gpu_s += gpu_s * prompt_share;
        self.output_busy_gpu_s += gpu_s * (1.0 - prompt_share);
        let inst = &mut self.instances[k];
        inst.peak_running = inst.peak_running.max(inst.running.len() as u64);
        inst.batch.hold(plan.len() as f64, dt);
        inst.queue.hold(inst.waiting.len() as f64, dt);
        inst.kv.hold(inst.used_blocks() as f64 / inst.total_blocks as f64, dt);
        inst.step_start_s = self.now_s;
        inst.busy_until_s = Some(self.now_s + dt);
        inst.step_record = StepRecord {
            step: self.steps,
            start_s: self.origin_s + self.now_s,
            time_s: dt,
            decodes,
            prefills,
            tokens,
            waiting: 0,
            kv_blocks_used: 0,
            preemptions: inst.preemptions - preempted_before,
        };
        if decodes > 0 {
            if let Admission::Sglang { init, min } = self.cfg.admission {
                inst.new_token_ratio = (inst.new_token_ratio - (init - min) / policy::SGLANG_DECAY_STEPS).max(min);
            }
        }
        inst.plan = plan;
        self.steps += 1;
        self.processed += tokens;
        Ok(())
    }

    /// Seconds of the draft steps in instance `k`'s step of `chunks` under speculation: `k`
    /// draft steps of its decoding sequences, each a decode step of those sequences on the
    /// draft model, or a fraction of the target's ([`Draft`]).
    pub(super) fn draft_s(&mut self, k: usize, plan: &[(usize, u64)], chunks: &[Chunk]) -> f64 {
        let Some(spec) = &self.cfg.speculation else { return 0.0 };
        let inst = &self.instances[k];
        self.draft_chunks.clear();
        let mut depth = 0;
        for (&(i, n), c) in plan.iter().zip(chunks) {
            if inst.running[i].decoding() {
                self.draft_chunks.push(Chunk { new_tokens: 1, cached_tokens: c.cached_tokens });
                depth = depth.max(n - 1);
            }
        }
        if depth == 0 {
            return 0.0;
        }
        let one = match &spec.draft {
            Draft::Heads { fraction } => fraction * self.pools[inst.pool].clock.step_s(&self.draft_chunks),
            Draft::Model(_) => self.draft_clock.as_mut().expect("a draft clock").step_s(&self.draft_chunks),
        };
        depth as f64 * one
    }

    /// Seconds instance `k`'s step spends swapping caches out and in over the host link:
    /// `α + bytes ÷ β` per sequence ([`Preemption::Swap`]).
    pub(super) fn swap_s(&mut self, k: usize) -> Result<f64> {
        let Some(link) = self.swap_link.clone() else { return Ok(0.0) };
        let mut total = 0.0;
        for j in 0..self.instances[k].swap_out.len() + self.instances[k].swap_in.len() {
            let inst = &self.instances[k];
            let tokens = if j < inst.swap_out.len() { inst.swap_out[j] } else { inst.swap_in[j - inst.swap_out.len()] };
            if tokens > 0 {
                total += link.transfer_s(self.kv_bytes(self.instances[k].pool, tokens)?);
            }
        }
        Ok(total)
    }

    /// KV bytes one GPU of an instance of `pool` holds for `tokens` cached positions
    /// ([`kv_bytes_per_gpu`] on the pool's layout, memoised).
    pub(super) fn kv_bytes(&mut self, pool: usize, tokens: u64) -> Result<f64> {
        let pool = &mut self.pools[pool];
        if let Some(b) = pool.kv_bytes_memo.get(&tokens) {
            return Ok(*b);
        }
        let b = kv_bytes_per_gpu(&pool.sc, tokens)?;
        pool.kv_bytes_memo.insert(tokens, b);
        Ok(b)
    }

    /// Apply the progress of instance `k`'s step, ending now: tokens, finishes, hand-offs,
    /// closed-loop arrivals.
    pub(super) fn end_step(
        &mut self,
        k: usize,
        capacity: Capacity,
        on_step: &mut impl FnMut(&StepRecord),
    ) -> Result<()> {
        let now = self.now_s;
        self.mark(now);
        let plan = std::mem::take(&mut self.instances[k].plan);
        // (index in `running`, finished: else handed off).
        let mut leaving: Vec<(usize, bool)> = Vec::new();
        let inst = &mut self.instances[k];
        let acceptance = self.cfg.speculation.as_ref().map_or(0.0, |s| s.acceptance);
        // The step's tokens stream to the client now unless more steps of a multi-step run follow.
        let run_ends = inst.multi_left == 0;
        for &(i, n) in &plan {
            let r = &mut inst.running[i];
            let produced = if n > 1 && r.decoding() {
                // Speculation: the last token and the drafts up to the first rejected.
                let mut m = 1;
                while m < n && self.spec_rng.uniform() < acceptance {
                    m += 1;
                }
                r.cached += m;
                self.spec_steps += 1;
                self.spec_tokens += m;
                m
            } else {
                let was_prefill = r.in_prefill();
                r.cached += n;
                if was_prefill && r.in_prefill() {
                    continue; // a chunk that did not complete the prompt
                }
                1
            };
            // This step produced `produced` tokens.
            let first = r.generated == 0;
            r.generated += produced;
            if first {
                if r.pinned {
                    // Its prompt is computed: the cache takes the prefix blocks it lacks.
                    let p = *r.prefix.as_deref().expect("a pinned request has a prefix");
                    let moved = inst.cache.insert(&p, r.prompt, self.cfg.block_tokens, None);
                    r.blocks -= moved;
                    r.shared += moved;
                }
                r.first_token_s = now;
                r.streamed_s = now;
                if r.measured {
                    self.ttft.add(now - r.arrival_s);
                }
            } else if run_ends || r.generated == r.output {
                // One inter-token sample per chunk streamed: the gap since the last chunk (a
                // benchmark's ITL is the time between the stream's messages).
                if r.measured {
                    self.itl.add(now - r.streamed_s);
                }
                r.streamed_s = now;
            }
            r.last_token_s = now;
            if r.generated == r.output {
                leaving.push((i, true));
            } else if inst.role == Role::HandOff {
                leaving.push((i, false));
            }
        }
        leaving.sort_unstable();
        let mut finished = 0;
        for &(i, done) in leaving.iter().rev() {
            let inst = &mut self.instances[k];
            let mut r = inst.running.remove(i);
            if done && r.pinned {
                let p = *r.prefix.as_deref().expect("a pinned request has a prefix");
                let block = self.cfg.block_tokens;
                r.blocks -= inst.cache.insert(&p, r.prompt, block, Some(r.cached / block));
            }
            inst.release(&mut r);
            if done {
                finished += 1;
                self.finish_request(&r, now);
            } else {
                self.hand_off(k, &mut r, now)?;
            }
        }
        if let Arrivals::Closed { .. } = self.cfg.arrivals {
            for _ in 0..finished {
                if let Some(a) = self.source.next_closed(now) {
                    self.enqueue(a, capacity)?;
                }
            }
        }
        let waiting = self.waiting();
        let (used, total) = self.instances.iter().fold((0, 0), |(u, t), i| (u + i.used_blocks(), t + i.total_blocks));
        let running: u64 = self
            .instances
            .iter()
            .enumerate()
            .map(|(j, i)| {
                if j == k {
                    plan.len() as u64
                } else if i.busy_until_s.is_some() {
                    i.plan.len() as u64
                } else {
                    0
                }
            })
            .sum();
        let t_s = self.origin_s + now;
        self.series.offer(SeriesPoint { t_s, running, waiting, kv_utilisation: used as f64 / total as f64 });
        let inst = &mut self.instances[k];
        inst.busy_until_s = None;
        inst.plan = plan;
        let kv_blocks_used = if self.instances.len() == 1 { used } else { self.instances[k].used_blocks() };
        on_step(&StepRecord {
            waiting: if self.instances.len() == 1 { waiting } else { self.instances[k].waiting.len() as u64 },
            kv_blocks_used,
            ..self.instances[k].step_record
        });
        Ok(())
    }

    /// A request that produced its last token at `now`.
    pub(super) fn finish_request(&mut self, r: &Req, now: f64) {
        self.completed += 1;
        self.in_system -= 1;
        if !r.measured {
            return;
        }
        let e2e = now - r.arrival_s;
        let ttft = r.first_token_s - r.arrival_s;
        let tpot = (r.output > 1).then(|| (r.last_token_s - r.first_token_s) / (r.output - 1) as f64);
        self.e2e.add(e2e);
        if let Some(t) = tpot {
            self.tpot.add(t);
        }
        let ok = self.cfg.ttft_slo_s.is_none_or(|b| ttft <= b)
            && self.cfg.tpot_slo_s.is_none_or(|b| tpot.is_none_or(|t| t <= b));
        self.good += u64::from(ok);
        self.measured_completed += 1;
        self.output_tokens += r.output;
        self.prompt_tokens += r.prompt;
    }

    /// Send the cache of `r`, whose first token prefill instance `k` produced at `now`, to the
    /// decode pool: it queues behind earlier transfers on `k`'s links, and takes the slower of
    /// each prefill GPU sending its share and each decode GPU receiving its share
    /// ([`KvLink::transfer_between_s`]).
    pub(super) fn hand_off(&mut self, k: usize, r: &mut Req, now: f64) -> Result<()> {
        let tokens = r.cached;
        let sent_bytes_per_prefill_gpu = self.kv_bytes(self.instances[k].pool, tokens)?;
        let received_bytes_per_decode_gpu = self.kv_bytes(self.decode_pool, tokens)?;
        let link = self.link.as_ref().expect("a disaggregated deployment has a link");
        let start = now.max(self.link_free_s[k]);
        let ready_s = start + link.transfer_between_s(sent_bytes_per_prefill_gpu, received_bytes_per_decode_gpu);
        self.link_free_s[k] = ready_s;
        self.transfer.add(ready_s - now);
        r.present = tokens;
        r.transferred = true;
        r.cached = 0;
        r.blocks = 0;
        r.in_step = false;
        self.transfers.push(Transfer { ready_s, req: r.clone() });
        Ok(())
    }

    pub(super) fn finish(mut self, capacity: Capacity) -> Simulation {
        self.mark(self.now_s);
        let duration_s = if self.cfg.warmup_requests > 0 {
            self.origin_s + self.now_s - self.window_start_s
        } else {
            self.origin_s + self.now_s
        };
        let per_s = |x: f64| if duration_s > 0.0 { x / duration_s } else { 0.0 };
        let issued = self.source.issued();
        let arrival_rate_per_s = if self.last_arrival_s > 0.0 && issued > 1 {
            (issued - 1) as f64 / self.last_arrival_s
        } else {
            per_s(self.measured_completed as f64)
        };
        let merged = |f: fn(&Instance) -> TimeAverage| {
            self.instances.iter().fold(TimeAverage::default(), |mut acc, i| {
                acc.merge(&f(i));
                acc
            })
        };
        let (batch, queue, kv) = (merged(|i| i.batch), merged(|i| i.queue), merged(|i| i.kv));
        let sum = |f: fn(&Instance) -> u64| self.instances.iter().map(f).sum::<u64>();
        let measured = self.measured_completed;
        let summary = SimSummary {
            completed: measured,
            requests: self.source.total() - self.cfg.warmup_requests,
            offered_rate_per_s: self.cfg.arrivals.rate_per_s(),
            arrival_rate_per_s,
            duration_s,
            mean_in_system: self.in_system_avg.mean(),
            mean_latency_s: self.e2e.mean(),
            requests_per_s: per_s(measured as f64),
            input_tokens_per_s: per_s(self.prompt_tokens as f64),
            output_tokens_per_s: per_s(self.output_tokens as f64),
            ttft_s: self.ttft.quantiles(),
            tpot_s: self.tpot.quantiles(),
            itl_s: self.itl.quantiles(),
            e2e_s: self.e2e.quantiles(),
            goodput_per_s: per_s(self.good as f64),
            slo_attainment: if measured > 0 { self.good as f64 / measured as f64 } else { 0.0 },
            preemptions: sum(|i| i.preemptions),
            recomputed_tokens: sum(|i| i.recomputed),
            prefix_hit_tokens: sum(|i| i.hit_tokens),
            processed_tokens: self.processed,
            output_tokens: self.output_tokens,
            prompt_tokens: self.prompt_tokens,
            steps: self.steps,
            mean_batch: batch.mean(),
            max_batch: batch.max() as u64,
            mean_queue: queue.mean(),
            max_queue: queue.max() as u64,
            queue_growth_per_s: if self.last_arrival_s > 0.0 {
                self.waiting_at_last_arrival as f64 / self.last_arrival_s
            } else {
                0.0
            },
            mean_kv_utilisation: kv.mean(),
            max_kv_utilisation: kv.max(),
            kv_capacity_tokens: capacity.whole,
            drained: self.completed == self.source.total(),
            gpus: self.instances.iter().map(|i| self.pools[i.pool].sc.parallel.gpus_per_replica()).sum(),
            prompt_busy_gpu_s: self.prompt_busy_gpu_s,
            output_busy_gpu_s: self.output_busy_gpu_s,
            kv_transfer_s: self.link.is_some().then(|| self.transfer.quantiles()),
            prefix_cache_hit_rate: self.cfg.prefix_cache.then(|| {
                let looked = sum(|i| i.looked_up_tokens);
                let hit = sum(|i| i.hit_tokens);
                if looked > 0 {
                    hit as f64 / looked as f64
                } else {
                    0.0
                }
            }),
            prefix_evicted_blocks: self.cfg.prefix_cache.then(|| sum(|i| i.cache.evicted)),
            spec_tokens_per_step: self.cfg.speculation.is_some().then(|| {
                if self.spec_steps > 0 {
                    self.spec_tokens as f64 / self.spec_steps as f64
                } else {
                    0.0
                }
            }),
        };
        Simulation {
            summary,
            peak_running: self.instances.iter().map(|i| i.peak_running).max().unwrap_or(0),
            series: self.series.points().to_vec(),
            ttft_cdf: self.ttft.cdf(),
            tpot_cdf: self.tpot.cdf(),
            itl_cdf: self.itl.cdf(),
            e2e_cdf: self.e2e.cdf(),
        }
    }
}
