//! The one cost model under load ([`Bill::under_load`]) and the capacity search
//! ([`capacity::find`]): hand-computed prices, the three figures adding up to the deployment's
//! cost, and the search's rates against the runs it made.

use llm_ledger_core::capacity::{self, Bounds, KNEE_FACTOR, LIGHT_LOAD, RATE_PRECISION};
use llm_ledger_core::economics::{Bill, CostBasis};
use llm_ledger_core::serving::{Price, PriceSource};
use llm_ledger_core::simulate::workload::{Arrivals, Lengths};
use llm_ledger_core::simulate::{simulate, simulate_within, Budget, Deployment, SimConfig};
use llm_ledger_core::testing::scenario;

const PRICE: Price = Price { usd_per_hour: 3.6, source: PriceSource::User };

fn cfg(rate: f64, requests: u64) -> SimConfig {
    SimConfig { requests, prompt: Lengths::Fixed(1000), output: Lengths::Fixed(100), ..SimConfig::poisson(rate) }
}

#[test]
fn a_bill_under_load_adds_up_to_the_deployments_cost() {
    let sc = scenario(&[("tp", "2")]);
    let s = simulate(&sc, &cfg(4.0, 300), |_| {}).unwrap().summary;
    assert_eq!(s.gpus, 2);
    let b = Bill::under_load(&s, PRICE);
    assert_eq!(b.basis, CostBasis::UnderLoad);
    // $3.60 per GPU-hour is $0.001 per GPU-second: two GPUs cost $0.002 a second of the run.
    let usd_per_s = 0.002;
    let per_request = b.usd_per_request.unwrap();
    assert!((per_request - usd_per_s / s.requests_per_s).abs() <= 1e-12 * per_request);
    // Prompt and output tokens together pay the whole bill, as the requests do.
    let input = b.usd_per_million_input_tokens.unwrap() / 1e6 * s.input_tokens_per_s;
    let output = b.usd_per_million_output_tokens.unwrap() / 1e6 * s.output_tokens_per_s;
    assert!(((input + output) - usd_per_s).abs() <= 1e-12, "{input} + {output}");
    // The split is the steps' GPU time: every step's time × 2 GPUs, shared by its tokens.
    let f = s.prompt_busy_gpu_s / (s.prompt_busy_gpu_s + s.output_busy_gpu_s);
    assert!((input / usd_per_s - f).abs() <= 1e-12);
    assert!(f > 0.0 && f < 1.0, "{f}");
}

#[test]
fn a_run_of_prompts_alone_bills_input_tokens_only() {
    // One output token each: every step is a prompt's chunk, so the output share is nothing.
    let sc = scenario(&[]);
    let c = SimConfig { output: Lengths::Fixed(1), ..cfg(2.0, 100) };
    let s = simulate(&sc, &c, |_| {}).unwrap().summary;
    assert_eq!(s.output_busy_gpu_s, 0.0);
    let b = Bill::under_load(&s, PRICE);
    assert_eq!(b.usd_per_million_output_tokens, Some(0.0));
    let input = b.usd_per_million_input_tokens.unwrap() / 1e6 * s.input_tokens_per_s;
    assert!((input - 0.001).abs() < 1e-12, "{input}");
}

#[test]
fn the_capacity_is_the_largest_rate_its_runs_held() {
    let sc = scenario(&[]);
    let base = cfg(1.0, 400);
    let bounds = Bounds { ttft_s: Some(0.5), tpot_s: Some(0.03) };
    let found = capacity::find(&sc, &base, &Deployment::SINGLE, bounds, &Budget::unlimited()).unwrap();
    let f = &found.facts;
    let cap = f.capacity_per_s.expect("the light load holds these bounds");
    // The first run saturates the instance: a closed loop of max_seqs, then the light load.
    assert_eq!(f.runs[0].rate_per_s, None);
    assert_eq!(f.saturating_concurrency, base.max_seqs);
    assert_eq!(f.runs[1].rate_per_s, Some(LIGHT_LOAD * f.saturation_per_s));
    assert!(cap <= f.saturation_per_s && cap >= f.light_rate_per_s);
    // Every run at or below the capacity that the search made held; the nearest it tried
    // above (within the precision, unless the capacity is saturation) did not.
    let held = |r: f64| f.runs.iter().find(|x| x.rate_per_s == Some(r)).map(|x| x.holds);
    assert_eq!(held(cap), Some(true));
    if cap < f.saturation_per_s {
        let above =
            f.runs.iter().filter_map(|x| x.rate_per_s.filter(|&r| r > cap && !x.holds)).fold(f64::INFINITY, f64::min);
        assert!(above / cap <= 1.0 + RATE_PRECISION + 1e-12, "{cap} .. {above}");
    }
    // The run reported is the capacity's, and it is what a run at that rate gives.
    let again = simulate_within(&sc, &base.at_rate(cap), &Deployment::SINGLE, &Budget::unlimited(), |_| {}).unwrap();
    assert_eq!(found.at.summary, again.summary);
    assert!(found.at.summary.holds_p99(bounds.ttft_s, bounds.tpot_s));
    // The knee: within twice the light load's p99 end to end, and no faster than the light load.
    assert!(f.knee_per_s >= f.light_rate_per_s && f.knee_per_s <= f.saturation_per_s);
    let knee_run = f.runs.iter().find(|x| x.rate_per_s == Some(f.knee_per_s)).unwrap();
    assert!(knee_run.e2e_p99_s <= KNEE_FACTOR * f.light_e2e_p99_s);
    // The search is bounded: saturation, light load, then two bisections of at most 8 runs
    // each, the capacity's and the knee's (shared runs are not repeated).
    assert!(f.runs.len() <= 2 + 2 * 9, "{}", f.runs.len());
}

#[test]
fn bounds_no_load_holds_give_no_capacity_and_no_bounds_are_refused() {
    let sc = scenario(&[]);
    let base = cfg(1.0, 200);
    // A TTFT below one prompt's prefill.
    let tight = Bounds { ttft_s: Some(1e-4), tpot_s: None };
    let found = capacity::find(&sc, &base, &Deployment::SINGLE, tight, &Budget::unlimited()).unwrap();
    assert_eq!(found.facts.capacity_per_s, None);
    let e =
        capacity::find(&sc, &base, &Deployment::SINGLE, Bounds { ttft_s: None, tpot_s: None }, &Budget::unlimited())
            .unwrap_err();
    assert_eq!(e.field(), Some("rate"));
    let closed = SimConfig { arrivals: Arrivals::Closed { concurrency: 4 }, ..base };
    let e = capacity::find(&sc, &closed, &Deployment::SINGLE, tight, &Budget::unlimited()).unwrap_err();
    assert_eq!(e.field(), Some("rate"));
}
