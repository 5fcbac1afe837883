"""The agent scenarios' long option help, shared by their commands, `bench ab` and `bench
sweep` (imported by the CLI when its command table is built: nothing heavy here)."""

# The flags these help texts belong to, so the commands that declare them spell them alike.
RUN_FLAG, POOL_TOKENS_FLAG = "--run", "--pool-tokens"

SLO_HELP = ("SLO terms METRIC_pQ=VALUE, comma-separated; metrics ttft, e2e, itl (s or ms) "
            "and decode (tok/s). Goodput = share of turns meeting every term.")
WORKLOAD_HELP = ("A preset (coding-agent, coding-agent-with-batch, timestamp-first, "
                 "long-session) or a YAML file: system_prompt_tokens, task_tokens, tools "
                 "{count, tokens_each, placement}, append_tokens, output_tokens, think_time_s "
                 "(a number or [min, max]), paste {share, tokens}, timestamp_first, background "
                 "{prompt_tokens, context_share, output_tokens, delay_s}, context_share, seed; "
                 "`preset: NAME` starts from a preset. Token sizes shrink to fit the server's "
                 "max-model-len.")
RUN_HELP = ("The sm121 run behind --url (default: the running run whose engine or gateway "
            "listens on its port): its plan gives the verdict its scheduler settings "
            "(max-num-seqs), its boot log the KV pool where the engine's /metrics does not say "
            "it (vLLM 0.21).")
POOL_TOKENS_HELP = ("The KV pool in tokens, as the engine logged it (`KV cache size: N "
                    "tokens`), for the prediction: for an endpoint sm121 did not start; wins "
                    "over the engine's /metrics and the run's boot log.")
