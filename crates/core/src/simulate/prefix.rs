//! A block-level prefix cache over an instance's KV pool, as vLLM's automatic prefix caching and
//! SGLang's radix cache keep one.
//!
//! ## The model
//!
//! A prompt may start with named token sequences ([`PromptPrefix`]): a **root** (a system prompt,
//! shared by every prompt naming it) and, containing the root, a **chain** (a conversation's
//! history, which each turn extends). Two prompts naming the same id share that sequence's
//! tokens as far as both reach, so the cache holds, per id, how many of its blocks are cached —
//! the depth of one branch of a radix tree whose nodes are whole blocks (only whole blocks are
//! shared, as both engines share them; vLLM hashes each full block with its prefix).
//!
//! * **Lookup** at admission: the root's cached blocks, up to the root's whole blocks, then — once
//!   the whole root is found — the chain's, up to its whole blocks; at most `⌊(prompt − 1) /
//!   block⌋` blocks, so that at least the prompt's last token is computed (both engines compute
//!   it to sample the first token). The hit tokens hold blocks but are not computed.
//! * **Insertion**: when a request's prompt is done, the blocks of its root and chain that the
//!   cache lacks move from the request to the cache (the cache grows by what the request
//!   computed; blocks another request cached in the meantime stay the request's own); when it
//!   finishes, its chain takes the whole blocks of its prompt and answer, which the chain's next
//!   row (a conversation's next turn) starts with — as SGLang caches a finished request's
//!   tokens in its radix tree and vLLM keeps every full block.
//! * **Pinning and eviction**: an id's blocks are pinned while a running request names it, and
//!   evictable otherwise. Cached blocks count as used KV; when an allocation needs more blocks
//!   than are free, the least recently used unpinned id gives up blocks from its tail (radix
//!   leaves first) until enough are free. An evicted root leaves its chains unreachable until it
//!   is cached again; they are evicted in their turn.

use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// Named token sequences a prompt starts with (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PromptPrefix {
    /// Id of the chain (a conversation): prompts with this id share their first `tokens` tokens
    /// as far as both reach.
    pub id: u64,
    /// Tokens of the chain this prompt starts with (root included; ≤ the prompt).
    pub tokens: u64,
    /// A shorter shared start (a system prompt): its id and tokens (≤ `tokens`), shared with
    /// every prompt naming the same root id.
    pub root: Option<(u64, u64)>,
}

/// A cache key: roots and chains have their own id spaces.
type Key = (bool, u64);

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    blocks: u64,
    pins: u64,
    used: u64,
}

/// One instance's prefix cache (module docs).
#[derive(Debug, Default)]
pub(super) struct PrefixCache {
    entries: HashMap<Key, Entry>,
    /// Unpinned entries with blocks, by last use.
    lru: BTreeSet<(u64, Key)>,
    tick: u64,
    /// Blocks held by the cache.
    pub(super) blocks: u64,
    /// Blocks of unpinned entries.
    pub(super) evictable: u64,
    /// Blocks evicted so far.
    pub(super) evicted: u64,
}

/// The two segments of a prompt's prefix in blocks: `(key, first block, end block)`.
pub(super) fn segments(p: &PromptPrefix, prompt: u64, block: u64) -> [(Key, u64, u64); 2] {
    let cap = (prompt - 1) / block;
    let (root_id, root_tokens) = p.root.unwrap_or((0, 0));
    let root_end = (root_tokens / block).min(cap);
    let chain_end = (p.tokens / block).min(cap).max(root_end);
    [((true, root_id), 0, if p.root.is_some() { root_end } else { 0 }), ((false, p.id), root_end, chain_end)]
}

impl PrefixCache {
    /// Blocks of `p` found in the cache for a prompt of `prompt` tokens.
    pub(super) fn lookup(&self, p: &PromptPrefix, prompt: u64, block: u64) -> u64 {
        let mut hit = 0;
        for (key, start, end) in segments(p, prompt, block) {
            let have = self.entries.get(&key).map_or(0, |e| e.blocks);
            let found = have.min(end - start);
            hit += found;
            if found < end - start {
                break;
            }
        }
        hit
    }

    /// A running request names `p`: pin its ids (taking them off the eviction list). Segments
    /// without a whole block are not pinned (nor unpinned).
    pub(super) fn pin(&mut self, p: &PromptPrefix, prompt: u64, block: u64) {
        self.tick += 1;
        for (key, start, end) in segments(p, prompt, block) {
            if end == start {
                continue;
            }
            let e = self.entries.entry(key).or_default();
            if e.pins == 0 && e.blocks > 0 {
                self.lru.remove(&(e.used, key));
                self.evictable -= e.blocks;
            }
            e.pins += 1;
            e.used = self.tick;
        }
    }

    /// A request that pinned `p` stops running.
    pub(super) fn unpin(&mut self, p: &PromptPrefix, prompt: u64, block: u64) {
        self.tick += 1;
        for (key, start, end) in segments(p, prompt, block) {
            if end == start {
                continue;
            }
            let e = self.entries.get_mut(&key).expect("a pinned entry");
            e.pins -= 1;
            e.used = self.tick;
            if e.pins == 0 {
                if e.blocks == 0 {
                    self.entries.remove(&key);
                } else {
                    self.lru.insert((e.used, key));
                    self.evictable += e.blocks;
                }
            }
        }
    }

    /// A pinned request has computed its prompt: the blocks of `p` the cache lacks, which the
    /// request holds as its own, move to the cache; with `context_blocks`, the request has
    /// finished and its chain takes its whole blocks up to there (the next turn of a
    /// conversation starts with this one's prompt and answer). Returns the blocks moved.
    pub(super) fn insert(&mut self, p: &PromptPrefix, prompt: u64, block: u64, context_blocks: Option<u64>) -> u64 {
        let mut moved = 0;
        let [root, (key, start, end)] = segments(p, prompt, block);
        let chain = (key, start, end.max(context_blocks.unwrap_or(0)));
        for (key, start, end) in [root, chain] {
            if end == start {
                continue;
            }
            // A chain the request did not pin (its prompt had no whole block of it) is created
            // unpinned, so evictable at once.
            if start + self.entries.get(&key).map_or(0, |e| e.blocks) >= end {
                continue;
            }
            self.tick += 1;
            let e = self.entries.entry(key).or_default();
            let first = start + e.blocks;
            {
                let n = end - first;
                if e.pins == 0 {
                    if e.blocks > 0 {
                        self.lru.remove(&(e.used, key));
                    }
                    e.used = self.tick;
                    self.lru.insert((e.used, key));
                    self.evictable += n;
                }
                e.blocks += n;
                moved += n;
            }
        }
        self.blocks += moved;
        moved
    }

    /// Evict unpinned blocks, least recently used id first, until `need` blocks are freed or
    /// none is left; returns the blocks freed.
    pub(super) fn evict(&mut self, need: u64) -> u64 {
        let mut freed = 0;
        while freed < need {
            let Some(&(used, key)) = self.lru.iter().next() else { break };
            let e = self.entries.get_mut(&key).expect("an entry on the list");
            let n = e.blocks.min(need - freed);
            e.blocks -= n;
            freed += n;
            if e.blocks == 0 {
                self.lru.remove(&(used, key));
                self.entries.remove(&key);
            }
        }
        self.blocks -= freed;
        self.evictable -= freed;
        self.evicted += freed;
        freed
    }
}
