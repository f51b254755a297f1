//! The serving inputs of `kv`, `levers`, `latency` and `cost` (a price, the memory kept free, a
//! request's lengths, a latency bound): the fields of the core's [`ServingRequest`], one table,
//! and which of them each command takes. The core's resolver ([`ServingRequest::resolve`]) reads
//! them; the defaults shown are its constants.

use crate::Input;
pub use llm_ledger_core::serving::ServingRequest;

/// Every serving input, in [`ServingRequest`]'s field order.
pub fn inputs() -> &'static [Input] {
    const INPUTS: &[Input] = &[
        Input::text("usd_per_hour", None, "a number > 0 (default: the catalogue's price)", "price per GPU-hour"),
        Input::text("reserve", Some("2GB"), "bytes (`2GB`, `512MiB`)", "memory kept free per GPU"),
        Input::text("prompt", Some("2048"), "tokens, an integer ≥ 1", "prompt tokens per request"),
        Input::text("output", Some("256"), "tokens, an integer ≥ 1", "output tokens per request"),
        Input::text("tpot_ms", None, "milliseconds > 0", "upper bound on the time per output token"),
        Input::text("step_ms", None, "milliseconds > 0", "a measured step time"),
        Input::text(
            "tokens_per_s",
            None,
            "a number > 0",
            "a measured throughput (decode: generated, prefill: processed)",
        ),
    ];
    INPUTS
}

/// The serving inputs `command` takes (the CLI's flags of that command, the explorer's keys and
/// the Python keywords), in table order; none for a command without serving inputs.
pub fn inputs_of(command: &str) -> Vec<&'static Input> {
    let names: &[&str] = match command {
        "kv" | "levers" => &["reserve"],
        "latency" => &["reserve", "prompt", "output"],
        "cost" => &["usd_per_hour", "reserve", "prompt", "output", "tpot_ms"],
        _ => &[],
    };
    inputs().iter().filter(|i| names.contains(&i.name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_ledger_core::serving::{DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS, DEFAULT_RESERVE_BYTES};

    #[test]
    fn the_table_is_the_requests_fields_with_the_cores_defaults() {
        // Every name is a field of the request (an unknown one is refused), and a request with
        // every field given names each once.
        for i in inputs() {
            let pairs = [(i.name, "1")];
            let req: ServingRequest = serde_urlencoded::from_str(&serde_urlencoded::to_string(pairs).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", i.name));
            assert!(format!("{req:?}").contains(&format!("{}: Some(\"1\")", i.name)), "{}", i.name);
        }
        assert!(serde_urlencoded::from_str::<ServingRequest>("reserved=1").is_err());
        let field_count = format!("{:?}", ServingRequest::default()).matches(": None").count();
        assert_eq!(field_count, inputs().len());
        // The defaults shown are the resolver's.
        let default = |n: &str| inputs().iter().find(|i| i.name == n).unwrap().default.unwrap();
        assert_eq!(default("prompt"), DEFAULT_PROMPT_TOKENS.to_string());
        assert_eq!(default("output"), DEFAULT_OUTPUT_TOKENS.to_string());
        assert_eq!(llm_ledger_core::size::parse_bytes("reserve", default("reserve")).unwrap(), DEFAULT_RESERVE_BYTES);
        assert_eq!(inputs_of("cost").len(), 5);
        assert!(inputs_of("ledger").is_empty());
    }
}
