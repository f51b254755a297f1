//! A mistyped name gets the closest accepted ones, not the whole list; a flag another command
//! takes says which; a pasted Hub URL or `org/name@rev` is a Hub id; a Hub id in the wrong case
//! names the cached one.

use crate::harness::fails;

#[test]
fn a_mistyped_preset_or_gpu_gets_the_closest_names_and_the_command_that_lists_them() {
    let e = fails(&["ledger", "--model", "lama-3-8b"]);
    assert_eq!(
        e,
        "error: unknown model `lama-3-8b`; did you mean `llama-3-8b`? (46 accepted); `llm-ledger models` lists them"
    );
    assert!(e.len() < 120, "{}", e.len());
    assert_eq!(
        fails(&["ledger", "--model", "gpt-oss"]),
        "error: unknown model `gpt-oss`; did you mean `gpt-oss-20b` or `gpt-oss-120b`? (46 accepted); `llm-ledger models` lists them"
    );
    assert_eq!(
        fails(&["ledger", "--model", "bert-base"]),
        "error: unknown model `bert-base`; none of the 46 accepted names is close; `llm-ledger models` lists them"
    );
    // The 23 GPUs are too many to list: the closest ones, and the command that lists them all.
    assert_eq!(
        fails(&["ledger", "--gpu", "mi300"]),
        "error: unknown GPU `mi300`; did you mean `mi300x`? (23 accepted); `llm-ledger gpus` lists them"
    );
    assert!(fails(&["sweep", "--gpu", "h100-sxm,rtx4090"]).contains("did you mean `rtx-4090`?"));
}

#[test]
fn a_short_list_is_still_listed_with_the_closest_name_first() {
    assert_eq!(
        fails(&["ledger", "--engine", "vlm"]),
        "error: unknown engine for `--engine` `vlm`; did you mean `vllm`? accepted: trtllm, trtllm@0.6, vllm, vllm@0.6, sglang, gpt-fast, eager"
    );
    assert_eq!(
        fails(&["ledger", "--phase", "decod"]),
        "error: unknown phase `decod`; did you mean `decode`? accepted: decode, prefill"
    );
    let kv = fails(&["ledger", "--kv", "bf61"]);
    assert!(
        kv.starts_with("error: unknown precision for `--kv` `bf61`; did you mean `bf16`? accepted: fp32, bf16,"),
        "{kv}"
    );
    // Nothing close: the list alone.
    assert_eq!(fails(&["ledger", "--flash", "maybe"]), "error: unknown value for `--flash` `maybe`; accepted: on, off");
}

#[test]
fn a_flag_of_another_command_says_which_commands_take_it() {
    let e = fails(&["plan", "--tpot-ms", "50", "--tp", "8"]);
    assert_eq!(
        e,
        "error: unexpected argument '--tp' found; `plan` does not take it: `--tp` is a flag of `ledger`, `sweep`, `latency`, `cost`, `measure`, `calibrate`, `zoom`, `moe`, `simulate` (see `llm-ledger plan --help`)"
    );
    assert!(!e.contains("--output"), "{e}");
    let e = fails(&["sweep", "--tpot-ms", "5"]);
    assert!(e.contains("`sweep` does not take it: `--tpot-ms` is a flag of `cost`, `plan`, `simulate`"), "{e}");
    // A typo of the command's own flag: the closest of its flags.
    assert_eq!(
        fails(&["ledger", "--bach", "3"]),
        "error: unexpected argument '--bach' found; tip: a similar argument exists: '--batch' (see `llm-ledger ledger --help`)"
    );
    assert_eq!(
        fails(&["ledger", "--zzzz"]),
        "error: unexpected argument '--zzzz' found; `ledger` has no such flag (see `llm-ledger ledger --help`)"
    );
    assert!(fails(&["--batch", "8"])
        .contains("`llm-ledger` without a command does not take it: `--batch` is a flag of `ledger`"));
}
