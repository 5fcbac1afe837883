"""What tune measured and chose, typed: a capacity probe (one agents run at some N), an arm's
row (its capacity bracket, goodput with its Clopper-Pearson interval, the continuous metrics
beside it, the long prefill's in-situ cost), a claim, the targets' binding bound, the plans
made before every boot, the result as a whole, and tune.json itself (`TuneRecord`, the
state every step adds to); the field order is its key order."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sm121.errors import Sm121Error
from sm121.memory.cold_start import FreshRate
from sm121.names import ProfileName
from sm121.open_model import Open
from sm121.recipes.schema import ArgName, ArgValue, one_spelling

# The knee scenario's params as given (`sm121 tune --knee-steps/--knee-batches/--knee-reps`)
KneeParamsGiven = dict[str, list[int] | int | None]
# An arm's name, wherever tune.json holds one, is a recipe profile's name (names.ProfileName,
# the type a recipe's `profiles:` keys have): tune builds file names from it, prints it and
# may write it as a profile, and a tune.json may be a stranger's (a shared folder resumed), so
# it is checked at load.


class Probe(Open):
    """One agents run at N on an arm's boot (a capacity probe, or a confirmation run)."""

    agents: int
    slo_met: bool
    goodput: float | None = None
    good_turns: int | None = None
    judged_turns: int | None = None
    ttft_p95_judged_s: float | None = None
    ttft_p95_during_background_s: float | None = None
    decode_p50: float | None = None
    background_ttft_s: float | None = None
    results_file: str | None = None
    run_id: str | None = None

    def value(self, metric: str) -> float | None:
        found = getattr(self, metric, None)
        return None if found is None else float(found)


class CapacityRecord(BaseModel):
    """capacity.Bracket as tune.json keeps it: lo <= N* < hi, and the (N, met) behind it."""

    lo: int
    hi: int | None
    text: str
    tested: list[tuple[int, bool]]
    non_monotone: bool = False


class ExclusivePrefill(BaseModel):
    """One boot's exclusive long prefill (tune/exclusive.py): the workload's background
    prompt alone on the idle engine."""

    run_id: str | None = None
    prompt_tokens: int | None = None
    ttft_s: float | None = None
    error: str | None = None


class ArmRow(BaseModel):
    """One arm over its runs at the target N and its probes (tune/choose.py builds it)."""

    name: ProfileName
    reps: int = 0
    boots: list[str] = Field(default_factory=list)
    goodput: float | None = None
    goodput_min: float | None = None
    good_turns: int = 0
    judged_turns: int = 0
    goodput_ci: tuple[float, float] | None = None  # Clopper-Pearson, 95%, over the reps
    ttft_p95_judged_s: float | None = None
    ttft_p95_during_background_s: float | None = None
    decode_p50: float | None = None
    background_ttft_s: float | None = None
    background_prompt_tokens: float | None = None  # a median over the reps
    prefill_rate: float | None = None
    capacity: CapacityRecord = CapacityRecord(lo=0, hi=None, text="not measured", tested=[])
    probes: list[Probe] = Field(default_factory=list)
    confirm: list[Probe] = Field(default_factory=list)  # the finalists' confirmation runs
    prefill_reference: ProfileName | None = None
    prefill_cost: float | None = None  # background TTFT over the reference arm's, minus 1
    # The exclusive long prefill, one per boot (tune/exclusive.py): median TTFT over the
    # arm's boots, and its cost against the reference arm's median
    exclusive: list[ExclusivePrefill] = Field(default_factory=list)
    exclusive_ttft_s: float | None = None
    exclusive_cost: float | None = None

    @property
    def exclusive_boots(self) -> int:
        """The boots whose exclusive long prefill gave a first token (the median's)."""
        return sum(1 for e in self.exclusive if e.ttft_s is not None)
    kv_tokens: int | None = None
    # the capacity model's prediction from the arm's own pool (bench/tune/predict.py)
    predicted: int | None = None
    predicted_binding: str | None = None
    differs: list[str] = Field(default_factory=list)
    role: list[str] = Field(default_factory=list)
    source: str = ""
    step: int | None = None  # tokens a long prefill gets per step


class Effect(BaseModel):
    """A claim's effect at one N: mean(a) - mean(b) over boots and its 95% interval."""

    agents: int
    difference: float
    low: float
    high: float
    direction: str | None  # "a", "b", or None when the interval holds 0


class Claim(BaseModel):
    a: str
    b: str
    metric: str
    shown: bool
    winner: str | None
    effects: list[Effect]
    reasons: list[str]
    text: str


class Binding(BaseModel):
    """Whether some arm meets both targets; if none does, which bound binds and by how much."""

    met: bool
    candidates: list[str]
    text: str


class SittingRecord(BaseModel):
    """Where and when the tune measured: recorded by its first invocation, so that a report
    made again elsewhere (the same tune.json, `sm121 tune` with the same arguments) names the
    machine that measured, not the one that renders."""

    device: str
    date: str


class TuneResult(BaseModel):
    table: list[ArmRow]
    ranking: list[ProfileName]
    chosen: ProfileName | None
    baseline: ProfileName | None
    reference: ProfileName | None
    claims: list[Claim]
    binding: Binding
    cost_bound: float
    device: str
    engine: str
    date: str


class PlanRecord(Open):
    """The plan made before an arm's boot, from the times measured so far."""

    before: ProfileName
    left_s: int | float
    boot_s: int | float
    rep_s: int | float
    arms_left: int
    arms: int
    reps: int
    probes: int
    fits: bool
    estimate_s: int | None = None


class ConfirmPlan(BaseModel):
    finalists: list[ProfileName]
    second_n: int | None
    boots: int


class RequestRecord(Open):
    """The question as tune.json keeps it (TuneRequest.to_record), in its key order."""

    recipe: str
    workload: str
    slo: str
    agents: int
    turns: int | None = None
    budget_s: float
    baselines: list[str] | None = None
    knee_params: KneeParamsGiven = Field(default_factory=dict)
    reps: int | None = None
    max_candidates: int | None = None
    sweep_points: int | None = None
    max_agents: int | None = None  # the largest N any arm is tested at
    boots: int | None = None
    rest_s: float | None = None
    cluster: str | None = None
    host: str | None = None


class CandidateRecord(BaseModel):
    """An arm as tune.json keeps it (candidates.Candidate.to_json)."""

    # Finite numbers only, as in a recipe (recipes/schema.Strict): these args boot an engine
    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    name: ProfileName
    base: ProfileName  # the recipe profile it starts from
    # Each name as sm121 wrote it (one spelling, the engine arg name rule of every recipe and
    # `--set`), checked at load: a planted key is refused before any boot or write
    args: dict[ArgName, ArgValue] = Field(default_factory=dict)
    why: str = ""
    source: str = "step 1"
    differs: list[str] = Field(default_factory=list)
    role: list[str] = Field(default_factory=list)

    @field_validator("args", mode="before")
    @classmethod
    def _one_spelling(cls, value: object) -> object:
        """Two spellings of one flag (`max_num_seqs` beside `max-num-seqs`): an error naming
        both, before either is read as a name."""
        if isinstance(value, Mapping):
            one_spelling(value)
        return value


class ColdRateRecord(BaseModel):
    """The prefill rate of a fresh first prompt that tune's predictions take for the cold start
    (tune/cold_rate.py), as tune.json keeps it: the knee's engine-window rate at the step
    nearest the first prompt its engine counted, said with its source; `why` where there is
    none (nothing counted, or no step near it), and the cold start is then not known."""

    tok_s: float | None = None
    step: int | None = None  # the knee's prompt it was measured at
    first_prompt_tokens: int | None = None  # as the knee's engine counted it
    source: str | None = None
    why: str | None = None

    def rate(self) -> FreshRate | None:
        if self.tok_s is None or self.tok_s <= 0:
            return None
        return FreshRate(self.tok_s, self.source or "tune's knee")

    def text(self) -> str:
        """The rate and its source in a few words, or why there is none."""
        if self.rate() is None:
            return f"not known: {self.why or 'no rate recorded'}"
        return (f"{self.tok_s or 0:,.0f} tok/s, {self.source} (the step nearest the first "
                f"prompt's {self.first_prompt_tokens or 0:,} tokens)")


class PredictionRecord(BaseModel):
    """An arm's capacity predicted before its boot (bench/tune/predict.py), as tune.json keeps
    it: the agents, the binding resource, the pool it came from, the working set a session
    took (the expected session from the first prompt the knee's engine counted, else the
    longest one: tune/first_prompt.py); `below` says why the arm was put last (its prediction
    under the target), None when it was not."""

    predicted: int | None = None
    binding: str | None = None
    at_most: bool = False  # some allowance not known: an upper bound
    pool_tokens: int | None = None
    pool_source: str | None = None
    working_set_tokens: int | None = None  # None: a tune.json from before it was kept
    first_prompt_tokens: int | None = None  # None: the longest session (nothing counted)
    prefix_source: str | None = None  # how the first prompt was counted, or why it was not
    # what the cold start allows ("allows 23", "no limit of its own", "not known"; None: a
    # tune.json from before it was kept) and the rate it took (None: none)
    cold_start: str | None = None
    cold_prefill_tok_s: float | None = None
    line: str = ""
    below: str | None = None

    def text(self) -> str:
        if self.predicted is None:
            return "not known"
        return (f"{'at most ' if self.at_most else ''}{self.predicted} agents "
                f"({self.binding or '?'} binds)")

    def working_set(self) -> str:
        """Which session the prediction took, in a few words."""
        if self.working_set_tokens is None:
            return "working set not recorded"
        if self.first_prompt_tokens is None:
            return f"the longest session, {self.working_set_tokens:,} tokens (a bound)"
        return (f"the expected session, {self.working_set_tokens:,} tokens (first prompt "
                f"{self.first_prompt_tokens:,}, counted on the knee's engine)")


class TuneRecord(Open):
    """tune.json: the question, then what each step adds as it finishes (the knee's sitting,
    the arms, the plans, every arm's probes, confirmations, exclusive prefills and capacity,
    the result, the report and the profile written). `TuneState` writes it after every
    step, so an interrupted tune resumes from it; its report reads it once chosen."""

    request: RequestRecord
    created: str | None = None
    elapsed_s: float = 0.0
    resumed: int = 0
    status: str = "running"
    sitting: SittingRecord | None = None
    candidates: list[CandidateRecord] | None = None  # None: not chosen yet
    dropped: list[str] = Field(default_factory=list)
    # each arm's prediction before any boot, and what the fp8 KV arm's check said (added, or
    # why not), made with the arms (bench/tune/before_boot.py)
    predictions: dict[ProfileName, PredictionRecord] = Field(default_factory=dict)
    kv_arm: str | None = None
    # the cold start's rate every prediction of this invocation takes, from the knee (None: a
    # tune.json from before it was kept)
    cold_rate: ColdRateRecord | None = None
    plans: list[PlanRecord] = Field(default_factory=list)
    skipped: list[ProfileName] = Field(default_factory=list)
    sweeps: dict[ProfileName, list[Probe]] = Field(default_factory=dict)
    capacity: dict[ProfileName, CapacityRecord] = Field(default_factory=dict)
    confirm_plan: ConfirmPlan | None = None
    confirm: dict[ProfileName, list[Probe]] = Field(default_factory=dict)
    exclusive: dict[ProfileName, list[ExclusivePrefill]] = Field(default_factory=dict)
    result: TuneResult | None = None  # None: not chosen yet
    written: str | None = None
    report: str | None = None
    serve_needs_trust: list[str] = Field(default_factory=list)

    def chosen(self) -> TuneResult:
        """The result, once tune has chosen (its report and the CLI read it then)."""
        if self.result is None:
            raise Sm121Error("tune.json has no result yet", "run `sm121 tune` to the end "
                             "(it resumes where it stopped)")
        return self.result
