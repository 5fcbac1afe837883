"""The arms tune measures (pure): step 1 of its search changes one scheduler knob at a time
against one baseline, so a difference in capacity is credited to the knob that moved it.

- the baseline: the recipe's profile (its default unless `--baselines` names one) with
  max-num-seqs raised to hold the largest N tested plus the background job; against the
  profile as shipped this is the "seqs alone" change (a profile that cannot hold the agents
  measures its own cap, not its scheduling);
- `seqs-S`: max-num-seqs alone, twice that (or the decode saturation batch when larger);
- `lpt-T`: the long-prefill threshold alone, T in 512, 1024, 2048;
- `chunk-C`: the step budget (max-num-batched-tokens) alone, C in 2048, 4096, 8192;
- the reference arm: chunk 8192, no threshold (the field's batch-8192), what the long
  prefill's cost is priced against; it is `chunk-8192` when the baseline has no threshold;
- the recipe's other named profiles, seqs raised the same way (their differing knobs named);
- `vllm-defaults`: none of the three set (the engine's own defaults): what a user gets without
  sm121, for the report's comparison, not a one-knob arm.
An arm equal to the baseline (a threshold at or above the chunk, the baseline's own value) is
not measured twice; it is listed as dropped with the reason. The order is the priority."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sm121.bench.tune.result import CandidateRecord
from sm121.engines.adapter import SchedulerFlags
from sm121.recipes.schema import ArgValue

THRESHOLDS = (512, 1024, 2048)
CHUNKS = (2048, 4096, 8192)
REFERENCE_CHUNK = 8192
REFERENCE = "reference"
DEFAULTS = "vllm-defaults"


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
        """The arm as tune.json keeps it (`model_dump(mode="json")` writes it)."""
        return CandidateRecord(name=self.name, base=self.base, args=dict(self.args),
                               why=self.why, source=self.source, differs=list(self.differs),
                               role=list(self.role))

    @staticmethod
    def from_json(data: object) -> Candidate:
        """An arm from tune.json (its JSON, or its record), checked against its record."""
        record = CandidateRecord.model_validate(data)
        return Candidate(record.name, record.base, dict(record.args), record.why,
                         record.source, tuple(record.differs), tuple(record.role))


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | str) and str(value).isdigit() else None


def scheduling(args: Mapping[str, ArgValue], knobs: SchedulerFlags) -> dict[str, int | None]:
    """The three knobs as the engine reads them: a threshold at or above the chunk does
    nothing, so it counts as unset."""
    chunk, seqs = _int(args.get(knobs.batched_tokens)), _int(args.get(knobs.max_num_seqs))
    threshold = _int(args.get(knobs.long_prefill_threshold))
    if threshold is not None and chunk is not None and threshold >= chunk:
        threshold = None
    return {knobs.batched_tokens: chunk, knobs.long_prefill_threshold: threshold,
            knobs.max_num_seqs: seqs}


def differing(args: Mapping[str, ArgValue], baseline: Mapping[str, ArgValue],
              knobs: SchedulerFlags) -> tuple[str, ...]:
    mine, theirs = scheduling(args, knobs), scheduling(baseline, knobs)
    return tuple(k for k in mine if mine[k] != theirs[k])


def seqs_for(largest_n: int) -> int:
    """max-num-seqs that holds `largest_n` agents and the background job."""
    return largest_n + 1


def arms(baseline: str, profiles: Mapping[str, Mapping[str, ArgValue]], largest_n: int,
         knobs: SchedulerFlags, saturation_batch: int | None = None
         ) -> tuple[list[Candidate], list[str]]:
    """(the arms in priority order, the dropped ones with why). `profiles`: recipe profile
    -> its merged args, `baseline` first among them; `largest_n`: the most agents any arm
    is tested at (its capacity search's top)."""
    CHUNK, SEQS, THRESHOLD = knobs.batched_tokens, knobs.max_num_seqs, \
        knobs.long_prefill_threshold
    base_args = dict(profiles[baseline])
    seqs = max(_int(base_args.get(SEQS)) or 1, seqs_for(largest_n))
    ref = {**base_args, SEQS: seqs}  # the baseline as measured
    found: list[Candidate] = []
    dropped: list[str] = []
    seen: dict[tuple[tuple[str, int | None], ...], str] = {}

    def add(name: str, profile: str, args: dict[str, ArgValue], why: str, source: str,
            role: tuple[str, ...] = ()) -> None:
        merged = {**profiles[profile], **args}
        key = tuple(scheduling(merged, knobs).items())
        if name != DEFAULTS and key in seen:
            twin = seen[key]
            if role:  # the same engine args: the earlier arm takes this role too
                at = next(i for i, c in enumerate(found) if c.name == twin)
                found[at] = replace(found[at], role=found[at].role + role)
            else:
                dropped.append(f"{name}: the same scheduling as {twin}")
            return
        seen[key] = name
        found.append(Candidate(name, profile, args, why, source,
                               differing(merged, ref, knobs), role))

    raised: dict[str, ArgValue] = {SEQS: seqs} if _int(base_args.get(SEQS)) != seqs else {}
    add(baseline, baseline, raised, f"the recipe's profile {baseline} with max-num-seqs "
        f"{seqs} ({largest_n} agents, the most tested, and the background job)", "baseline",
        ("baseline",))
    one_knob = scheduling(ref, knobs)[THRESHOLD] is None  # then the reference is chunk-8192
    ref_why = (f"chunk {REFERENCE_CHUNK}, no threshold: what the long prefill's cost is priced "
               "against")
    if not one_knob:
        add(REFERENCE, baseline, {CHUNK: REFERENCE_CHUNK, THRESHOLD: None, SEQS: seqs},
            ref_why, "reference", ("reference",))
    if one_knob:
        add(f"chunk-{REFERENCE_CHUNK}", baseline, {SEQS: seqs, CHUNK: REFERENCE_CHUNK},
            f"the step budget alone, {REFERENCE_CHUNK} tokens; also the reference: {ref_why}",
            "step 1", ("reference",))
    more = max(2 * seqs, saturation_batch or 0)
    add(f"seqs-{more}", baseline, {SEQS: more}, f"max-num-seqs alone, {more}", "step 1")
    for t in THRESHOLDS:
        add(f"lpt-{t}", baseline, {SEQS: seqs, THRESHOLD: t},
            f"the long-prefill threshold alone, {t} tokens", "step 1")
    for c in CHUNKS:
        if one_knob and c == REFERENCE_CHUNK:
            continue  # added above, as the reference
        add(f"chunk-{c}", baseline, {SEQS: seqs, CHUNK: c},
            f"the step budget alone, {c} tokens", "step 1")
    for name, args in profiles.items():
        if name != baseline:
            add(name, name, {SEQS: max(_int(args.get(SEQS)) or 1, seqs)},
                f"the recipe's profile {name}, max-num-seqs raised to {seqs}", "recipe")
    add(DEFAULTS, baseline, {CHUNK: None, THRESHOLD: None, SEQS: None},
        "the engine's own defaults for the three knobs (none set): what a user gets without "
        "sm121", "engine defaults", ("defaults",))
    return found, dropped
