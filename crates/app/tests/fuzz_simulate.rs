//! Replays the saved `simulate_inputs` fuzz inputs (crash reproducers and interesting seeds)
//! through the check the fuzz target runs, and drives it with generated queries. See README
//! "Fuzzing" for how to run the fuzzer.

#[path = "fuzz_checks/mod.rs"]
mod fuzz_checks;

#[path = "../../core/tests/support/fuzz_replay.rs"]
mod fuzz_replay;
use fuzz_replay::replay;

#[test]
fn simulate_inputs_regressions() {
    assert!(replay("simulate_inputs", fuzz_checks::check_simulate_inputs) > 0);
}

/// The `simulate_inputs` check on generated queries (the fuzzer itself needs nightly Rust): keys
/// of `simulate` with values from the ranges' edges and beyond, a fixed number of cases.
mod simulate_inputs_generated {
    use super::fuzz_checks;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "0",
                "1",
                "-1",
                "2",
                "1e-160",
                "5e-324",
                "1e-300",
                "1e-15",
                "1e6",
                "1e7",
                "nan",
                "inf",
                "1e308",
                "0.999999",
                "1e-4",
                "100",
                "16777216",
                "18446744073709551615",
                "uniform:1..64",
                "uniform:9..3",
                "lognormal:32:4",
                "lognormal:1:0",
                "poisson",
                "gamma",
                "closed",
                "trace",
                "decode-first",
                "prefill-first",
                "0,10,5;1e300,10,5",
                "0,10,5;0.5,3,2",
                "1,1,1;0,1,1",
                "\u{1b}[31m",
                "on",
                "off",
                "vllm",
                "swap",
                "overlapped",
                "watermark",
                "sglang",
                "2:1",
                "hist:tokens,weight;100,1;300,1",
            ])
            .prop_map(str::to_string),
            (0u64..100_000).prop_map(|v| v.to_string()),
            (-1e3f64..1e3).prop_map(|v| v.to_string()),
            "[ -~]{0,12}",
        ]
    }

    /// `simulate`'s own keys and a few scenario keys.
    fn key() -> impl Strategy<Value = &'static str> {
        let mut keys = fuzz_checks::simulate_keys();
        keys.extend(["gpu", "model", "kv"]);
        prop::sample::select(keys)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn generated_simulate_inputs_end_or_name_a_field(pairs in prop::collection::vec((key(), value()), 0..6)) {
            let query = serde_urlencoded::to_string(&pairs).unwrap();
            fuzz_checks::check_simulate_inputs(query.as_bytes());
        }
    }
}
