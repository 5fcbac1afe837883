"""The arms tune measures (pure): step 1 of its search changes one scheduler knob at a time
against one baseline, so a difference in capacity is credited to the knob that moved it. The
knobs are the engine's (its adapter's SchedulerFlags); a knob it has no equivalent for is
listed as dropped with the adapter's reason.

- the baseline: the recipe's profile (its default unless `--baselines` names one) with
  max-num-seqs raised to hold the largest N tested plus the background job; against the
  profile as shipped this is the "seqs alone" change (a profile that cannot hold the agents
  measures its own cap, not its scheduling). Where the engine splits its context across the
  sequences (llama.cpp's `-c` over `-np` slots), the context grows with them, so every arm
  gives each agent the window the profile gives it;
- `seqs-S`: max-num-seqs alone, twice that (or the decode saturation batch when larger);
- `lpt-T`: the long-prefill threshold alone, T in 512, 1024, 2048 (vLLM; llama.cpp has none);
- `chunk-C`: the step budget (vLLM's max-num-batched-tokens, llama.cpp's `-b`) alone, C in
  2048, 4096, 8192;
- `ubatch-U`: the micro-batch alone (llama.cpp's `-ub`), U in 256, 1024, 2048;
- `shared-pool`: one KV pool shared by every sequence (llama.cpp's kv-unified; the same total
  context) alone, where the engine splits its context across them;
- the reference arm: chunk 8192, no threshold (the field's batch-8192), what the long
  prefill's cost is priced against; it is `chunk-8192` when the baseline has no threshold;
- the recipe's other named profiles, seqs raised the same way (their differing knobs named);
- `ENGINE-defaults` (`vllm-defaults`, `llama.cpp-defaults`): none of the knobs set (the
  engine's own defaults): what a user gets without sm121, for the report's comparison, not a
  one-knob arm.
An arm equal to the baseline (a threshold at or above the chunk, a micro-batch capped at it,
the baseline's own value) is not measured twice; it is listed as dropped with the reason. The
order is the priority."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pydantic import ValidationError

from sm121.bench.tune.result import CandidateRecord
from sm121.display import escape, quoted
from sm121.engines.adapter import MemoryFlags, SchedulerFlags
from sm121.errors import Sm121Error
from sm121.plan.effective import profile_args
from sm121.recipes.schema import ArgValue, Recipe

THRESHOLDS = (512, 1024, 2048)
CHUNKS = (2048, 4096, 8192)
MICRO_BATCHES = (256, 1024, 2048)
REFERENCE_CHUNK = 8192
REFERENCE = "reference"
DEFAULTS = "vllm-defaults"
UNIFIED = "shared-pool"


def defaults_arm(engine: str) -> str:
    """The engine-defaults arm's name for the engine kind `engine` ("vllm" -> vllm-defaults)."""
    return f"{engine}-defaults"


@dataclass(frozen=True)
class Candidate:
    name: str
    base: str  # the recipe profile it starts from
    args: dict[str, ArgValue] = field(default_factory=dict)  # on top of the base profile
    why: str = ""
    source: str = "step 1"  # baseline | step 1 | reference | recipe | engine defaults
    differs: tuple[str, ...] = ()  # the knobs whose value differs from the baseline's
    role: tuple[str, ...] = ()  # "baseline", "reference", "defaults"

    def to_json(self) -> CandidateRecord:
        """The arm as tune.json keeps it (`model_dump(mode="json")` writes it); refused when
        its name is not a profile name (names.ProfileName: a variant named past its bound)."""
        try:
            return CandidateRecord(name=self.name, base=self.base, args=dict(self.args),
                                   why=self.why, source=self.source,
                                   differs=list(self.differs), role=list(self.role))
        except ValidationError as exc:
            raise Sm121Error(f"cannot measure arm {quoted(self.name, 120)}: "
                             f"{escape(exc.errors()[0]['msg'])}",
                             "rename the recipe's profile or arg named above") from exc

    @staticmethod
    def from_json(data: object) -> Candidate:
        """An arm from tune.json (its JSON, or its record), checked against its record."""
        record = CandidateRecord.model_validate(data)
        return Candidate(record.name, record.base, dict(record.args), record.why,
                         record.source, tuple(record.differs), tuple(record.role))


def merged_args(recipe: Recipe, candidate: Candidate) -> dict[str, ArgValue]:
    """The candidate's engine args: its base profile's (recipe args under them), its own on top."""
    return {**profile_args(recipe, candidate.base), **candidate.args}


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | str) and str(value).isdigit() else None


def scheduling(args: Mapping[str, ArgValue], knobs: SchedulerFlags,
               memory: MemoryFlags | None = None) -> dict[str, int | bool | None]:
    """The knobs as the engine reads them: a threshold at or above the chunk does nothing, so
    it counts as unset; a micro-batch above the chunk is capped at it. With `memory`, whether
    the engine's context is one pool shared by every sequence (llama.cpp's kv-unified)."""
    chunk, seqs = _int(args.get(knobs.batched_tokens)), _int(args.get(knobs.max_num_seqs))
    found: dict[str, int | bool | None] = {knobs.batched_tokens: chunk}
    if knobs.long_prefill_threshold is not None:
        threshold = _int(args.get(knobs.long_prefill_threshold))
        if threshold is not None and chunk is not None and threshold >= chunk:
            threshold = None
        found[knobs.long_prefill_threshold] = threshold
    found[knobs.max_num_seqs] = seqs
    if knobs.micro_batch is not None:
        micro = _int(args.get(knobs.micro_batch))
        found[knobs.micro_batch] = min(micro, chunk) if micro and chunk else micro
    if memory is not None and memory.shared_pool is not None:
        found[memory.shared_pool] = args.get(memory.shared_pool) is True
    return found


def differing(args: Mapping[str, ArgValue], baseline: Mapping[str, ArgValue],
              knobs: SchedulerFlags, memory: MemoryFlags | None = None) -> tuple[str, ...]:
    mine, theirs = scheduling(args, knobs, memory), scheduling(baseline, knobs, memory)
    return tuple(k for k in mine if mine[k] != theirs[k])


def seqs_for(largest_n: int) -> int:
    """max-num-seqs that holds `largest_n` agents and the background job."""
    return largest_n + 1


def arms(baseline: str, profiles: Mapping[str, Mapping[str, ArgValue]], largest_n: int,
         knobs: SchedulerFlags, saturation_batch: int | None = None,
         memory: MemoryFlags | None = None, defaults: str = DEFAULTS
         ) -> tuple[list[Candidate], list[str]]:
    """(the arms in priority order, the dropped ones with why). `profiles`: recipe profile
    -> its merged args, `baseline` first among them; `largest_n`: the most agents any arm
    is tested at (its capacity search's top); `memory`: the engine's memory flags (where its
    context is split across the sequences, raising them raises the context); `defaults`: the
    engine-defaults arm's name (defaults_arm)."""
    CHUNK, SEQS, THRESHOLD = knobs.batched_tokens, knobs.max_num_seqs, \
        knobs.long_prefill_threshold
    MICRO = knobs.micro_batch
    base_args = dict(profiles[baseline])
    seqs = max(_int(base_args.get(SEQS)) or 1, seqs_for(largest_n))

    def holding(args: Mapping[str, ArgValue], n: int) -> dict[str, ArgValue]:
        """The args that set max-num-seqs to `n` on a profile of `args`."""
        return memory.with_seqs(args, n) if memory is not None else {SEQS: n}

    held = holding(base_args, seqs)
    ref = {**base_args, **held}  # the baseline as measured
    found: list[Candidate] = []
    dropped: list[str] = []
    seen: dict[tuple[tuple[str, int | bool | None], ...], str] = {}

    def add(name: str, profile: str, args: dict[str, ArgValue], why: str, source: str,
            role: tuple[str, ...] = ()) -> None:
        merged = {**profiles[profile], **args}
        key = tuple(scheduling(merged, knobs, memory).items())
        if name != defaults and key in seen:
            twin = seen[key]
            if role:  # the same engine args: the earlier arm takes this role too
                at = next(i for i, c in enumerate(found) if c.name == twin)
                found[at] = replace(found[at], role=found[at].role + role)
            else:
                dropped.append(f"{name}: the same scheduling as {twin}")
            return
        seen[key] = name
        found.append(Candidate(name, profile, args, why, source,
                               differing(merged, ref, knobs, memory), role))

    raised: dict[str, ArgValue] = held if _int(base_args.get(SEQS)) != seqs else {}
    grown = f", {' '.join(f'{k} {v}' for k, v in raised.items() if k != SEQS)} (the same " \
        "context per sequence)" if len(raised) > 1 else ""
    add(baseline, baseline, raised, f"the recipe's profile {baseline} with {SEQS} "
        f"{seqs}{grown} ({largest_n} agents, the most tested, and the background job)",
        "baseline", ("baseline",))
    one_knob = THRESHOLD is None or scheduling(ref, knobs)[THRESHOLD] is None
    ref_why = (f"chunk {REFERENCE_CHUNK}, no threshold: what the long prefill's cost is priced "
               "against")
    if THRESHOLD is not None and not one_knob:
        add(REFERENCE, baseline, {CHUNK: REFERENCE_CHUNK, THRESHOLD: None, **held},
            ref_why, "reference", ("reference",))
    if one_knob:
        add(f"chunk-{REFERENCE_CHUNK}", baseline, {**held, CHUNK: REFERENCE_CHUNK},
            f"the step budget alone, {REFERENCE_CHUNK} tokens; also the reference: {ref_why}",
            "step 1", ("reference",))
    more = max(2 * seqs, saturation_batch or 0)
    add(f"seqs-{more}", baseline, holding(base_args, more), f"{SEQS} alone, {more}", "step 1")
    if THRESHOLD is not None:
        for t in THRESHOLDS:
            add(f"lpt-{t}", baseline, {**held, THRESHOLD: t},
                f"the long-prefill threshold alone, {t} tokens", "step 1")
    else:
        dropped.append(f"lpt-{'/'.join(map(str, THRESHOLDS))}: "
                       f"{knobs.no_threshold or 'the engine has no long-prefill threshold'}")
    for c in CHUNKS:
        if one_knob and c == REFERENCE_CHUNK:
            continue  # added above, as the reference
        add(f"chunk-{c}", baseline, {**held, CHUNK: c},
            f"the step budget alone, {c} tokens", "step 1")
    if MICRO is not None:
        for u in MICRO_BATCHES:
            add(f"ubatch-{u}", baseline, {**held, MICRO: u},
                f"the micro-batch alone, {u} tokens", "step 1")
    pool = memory.shared_pool if memory is not None else None
    if pool is not None and base_args.get(pool) is not True:
        add(UNIFIED, baseline, {**held, pool: True}, f"{pool} alone: one KV pool of the same "
            "total context shared by every sequence (any one may use it all)", "step 1")
    for name, args in profiles.items():
        if name != baseline:
            add(name, name, holding(args, max(_int(args.get(SEQS)) or 1, seqs)),
                f"the recipe's profile {name}, {SEQS} raised to {seqs}", "recipe")
    unset: dict[str, ArgValue] = {k: None for k in (CHUNK, THRESHOLD, SEQS, MICRO) if k}
    add(defaults, baseline, unset,
        f"the engine's own defaults for {', '.join(unset)} (none set): what a user gets "
        "without sm121", "engine defaults", ("defaults",))
    return found, dropped
