//! Searches over a monotone predicate of an integer: the last value where it still holds.
//! Used for the memory wall (`memory::max_batch`), the largest batch under a TPOT bound
//! (`plan`) and the KV/weight crossover (`crossover`).

/// The last `b` in `lo..hi` with `holds(b)`, for a `holds` known true at `lo` and false at `hi`
/// and never true again once false; neither end is evaluated (either may stand for a point past
/// the range). Bisection: ⌈log₂(hi − lo)⌉ calls.
pub(crate) fn last_true_in(mut lo: u64, mut hi: u64, mut holds: impl FnMut(u64) -> bool) -> u64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The largest `b` in `1..=max` with `holds(b)`, for a `holds` true at 1 and never true again once
/// false, searched from `guess`: steps of 1, 2, 4 … from it until the answer is bracketed, then
/// [`last_true_in`]. Two calls when `guess` is the answer; O(log |answer − guess|) otherwise.
pub(crate) fn largest_true(guess: u64, max: u64, holds: impl Fn(u64) -> bool) -> u64 {
    let guess = guess.clamp(1, max);
    // `lo` holds, `hi` does not (`max + 1` stands for "past the range").
    let (lo, hi) = if holds(guess) {
        let (mut lo, mut step) = (guess, 1u64);
        loop {
            let next = lo.saturating_add(step).min(max + 1);
            if next > max || !holds(next) {
                break (lo, next);
            }
            lo = next;
            step = step.saturating_mul(2);
        }
    } else {
        let (mut hi, mut step) = (guess, 1u64);
        loop {
            let next = hi.saturating_sub(step).max(1);
            if next == 1 || holds(next) {
                break (next, hi);
            }
            hi = next;
            step = step.saturating_mul(2);
        }
    };
    last_true_in(lo, hi, holds)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search finds the same answer as a walk one value at a time, from any start.
    #[test]
    fn largest_true_finds_the_last_batch_that_holds_from_any_guess() {
        for answer in [1u64, 2, 3, 7, 8, 1000, 1023, 1024, 1 << 30] {
            for guess in [1u64, 2, answer.saturating_sub(1).max(1), answer, answer + 1, 5000, 1 << 30] {
                let calls = std::cell::Cell::new(0u32);
                let got = largest_true(guess, 1 << 30, |b| {
                    calls.set(calls.get() + 1);
                    b <= answer
                });
                assert_eq!(got, answer, "guess {guess}");
                assert!(calls.get() <= 64, "guess {guess}, answer {answer}: {} calls", calls.get());
            }
        }
        // A right guess costs two calls: it holds, the next does not.
        let calls = std::cell::Cell::new(0u32);
        largest_true(500, 1 << 30, |b| {
            calls.set(calls.get() + 1);
            b <= 500
        });
        assert_eq!(calls.get(), 2);
    }

    /// Bisection never evaluates its ends, and finds the last value that holds.
    #[test]
    fn last_true_in_never_evaluates_its_ends() {
        for answer in 3..40u64 {
            let got = last_true_in(2, 41, |b| {
                assert!(b != 2 && b != 41, "evaluated an end");
                b <= answer
            });
            assert_eq!(got, answer);
        }
        assert_eq!(last_true_in(5, 6, |_| unreachable!()), 5);
    }
}
