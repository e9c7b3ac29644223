"""The campaign's typed configuration: what ``conf/`` composes, validated before anything starts.

Hydra composes the YAML tree (``conf/``: ``suite/``, ``system/``, ``model/``, ``ablation/``, ``cluster/``,
``experiment/``); :func:`validate` turns the result into a frozen :class:`CampaignConfig`. Every model
refuses unknown keys and out-of-range values with one structured error (``E_INVALID_ARG``) that names
the key path, so a typo fails in a second, not after an hour on a cluster. Every field carries its
docstring (``use_attribute_docstrings``), which ``tgms-campaign --help``-style tooling and the JSON schema
(:func:`config_schema`) show.

The sweep *inside* one run is the product of the root lists ``suites × systems × seeds × ablations``
(one model per run); ``--multirun`` sweeps anything across runs into one MLflow experiment. A scalar
where a list is expected (``systems=tgms``) is a one-element list, so ``-m systems=tgms,vector_rag``
works as a user expects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tgms.engine.api import DATASETS, InvalidArgError
from tgms.models.config import FLAT_NAMES, ModelConfig
from tgms.models.plan_prompt import EXAMPLE_MODES, MANUAL_MODES
from tgms.models.plan_schema import SCHEMAS as PLAN_SCHEMAS


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class SuiteConf(_Strict):
    """One task suite: the data set it is built from and which of its tasks a campaign runs."""

    dataset: str
    """The data set the suite's bundle is built from (collegemsg, bitcoin-otc, email-eu, synthetic)."""
    seed: int = Field(0, ge=0)
    """The suite generator's seed (which questions are drawn; not the model's sampling seed)."""
    source: str | None = None
    """A SNAP file to read instead of the packaged copy or the download cache (SNAP sets only)."""
    events: int = Field(100_000, ge=1)
    """Events of the synthetic generator (synthetic only)."""
    nodes: int = Field(1_000, ge=2)
    """Nodes of the synthetic generator (synthetic only)."""
    bundle: str | None = None
    """A prebuilt bundle directory to use (verified) instead of building one into the run directory."""

    @field_validator("dataset")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in DATASETS:
            raise ValueError(f"unknown data set {v!r}; known: {', '.join(DATASETS)}")
        return v


#: the tgms switches an ablation may set: booleans, and those with named choices
BOOL_SWITCHES = ("contracts", "units", "taint", "gating", "constrained", "memory", "time_names")
CHOICE_SWITCHES: dict[str, tuple[str, ...]] = {
    "plan_schema": tuple(PLAN_SCHEMAS),
    "examples": EXAMPLE_MODES,
    "manual": MANUAL_MODES,
}


class AblationConf(_Strict):
    """A switch set of the tgms system (the paper's ablations); baselines run only ``none``."""

    description: str = ""
    """What the ablation removes, in one line (shown in the report)."""
    switches: dict[str, bool | str] = Field(default_factory=dict)
    """tgms config switches set by this ablation: contracts, units, taint, gating, constrained, memory,
    time_names (booleans), plan_schema (none, generic or per_operator), examples (fixed or retrieved) and
    manual (full or retrieved)."""

    @field_validator("switches")
    @classmethod
    def _known_switches(cls, v: dict[str, bool | str]) -> dict[str, bool | str]:
        allowed = {*BOOL_SWITCHES, *CHOICE_SWITCHES}
        unknown = sorted(set(v) - allowed)
        if unknown:
            raise ValueError(f"unknown ablation switches {unknown}; allowed: {sorted(allowed)}")
        for name, value in v.items():
            choices = CHOICE_SWITCHES.get(name)
            if choices is not None and value not in choices:
                raise ValueError(f"{name} {value!r}: one of {', '.join(choices)}")
            if choices is None and not isinstance(value, bool):
                raise ValueError(f"ablation switch {name} takes true or false, not {value!r}")
        return v


class ClusterConf(_Strict):
    """Where the campaign's task actors run."""

    kind: Literal["local", "ray", "slurm"] = "local"
    """local: a Ray runtime started and stopped by the driver on this machine; ray: join a running Ray
    cluster at ``address``; slurm: join the Ray cluster of slurm/ray_cluster.sbatch."""
    address: str | None = None
    """The Ray address to join (ray/slurm), e.g. 10.0.0.1:6379 or auto."""
    address_file: str | None = None
    """A file holding the Ray head address (written by slurm/ray_cluster.sbatch); when set it wins over
    ``address``."""
    num_cpus: int | None = Field(None, ge=1)
    """CPUs of the local Ray runtime (default: all of this machine)."""
    actors: int = Field(2, ge=1, le=4096)
    """Task actors; each replays the bundle and proves its digest before serving."""
    actor_concurrency: int = Field(8, ge=1, le=1024)
    """Tasks in flight per actor (threads; the model calls are I/O-bound)."""
    actor_cpus: float = Field(0.5, gt=0)
    """CPUs Ray reserves per actor."""


class TrackingConf(_Strict):
    """Where MLflow records the campaign."""

    uri: str | None = None
    """MLflow tracking URI; default sqlite:///<run dir>/mlflow.db (one store per sweep under multirun)."""
    experiment: str | None = None
    """MLflow experiment name; default the experiment's name."""
    artifact_location: str | None = None
    """Where a new experiment keeps artifacts; default <dir of mlflow.db>/mlruns."""


class MutationsConf(_Strict):
    """The verifier mutation experiment (Table 5)."""

    enabled: bool = False
    """Run it (on the first suite's bundle) and log it."""
    per_class: int = Field(100, ge=1, le=100_000)
    """Mutants drawn per class."""
    seed: int = Field(0, ge=0)
    """The mutation draw's seed."""


class OpsBenchConf(_Strict):
    """The operator benchmark (§5.6)."""

    enabled: bool = False
    """Run it and log it."""
    scales: list[str] = Field(default_factory=lambda: ["1e5"])
    """Synthetic store sizes in edge versions (1e5, 1e6, 1e7)."""
    reps: int = Field(5, ge=1, le=1000)
    """Timed repetitions per call."""


class ExperimentConf(_Strict):
    """What this campaign is for and which tasks it runs."""

    name: str = "main"
    """The experiment's name (run directory, default MLflow experiment)."""
    description: str = ""
    """One line on what it measures."""
    split: Literal["dev", "test", "all"] = "dev"
    """The suite split the cells run."""
    per_family: int | None = Field(None, ge=1)
    """A stratified slice: at most this many tasks per family (first by task id), None for all."""
    slice: str | None = Field(None, pattern=r"^stratified-[1-9][0-9]*$")
    """A named slice of the split, after ``per_family``: ``stratified-N`` takes N tasks with the families
    (the probes among them) and their templates taking turns (pipeline.tasks.slices); None for all."""
    task_list: str | None = None
    """A file of task ids (one per line, ``#`` comments) to run instead of a slice: exactly those tasks of
    the split, an id the split lacks is an error."""
    limit: int | None = Field(None, ge=1)
    """At most this many tasks per suite after slicing, None for all."""
    evaluate: bool = True
    """Run the systems (false: only the mutation experiment and/or the operator benchmark)."""
    repair_budget: int = Field(3, ge=0, le=10)
    """Repairs after the first attempt, the same for every system (planner, Cypher)."""
    mutations: MutationsConf = Field(default_factory=MutationsConf)
    """The mutation experiment (Table 5)."""
    ops_bench: OpsBenchConf = Field(default_factory=OpsBenchConf)
    """The operator benchmark (§5.6)."""


class RunConf(_Strict):
    """Where this run keeps its files and how it behaves on a rerun."""

    dir: str = "."
    """The run directory (Hydra's hydra.run.dir): mlflow.db, records/, traces/, bundles/, tables/."""
    cache_dir: str | None = None
    """Response cache and system work files; default $TGMS_CACHE (~/.cache/tgms)."""
    reuse_bundles: bool = True
    """Copy a bundle built before by the same code from ``bundle_cache`` (verified) instead of building it."""
    bundle_cache: str | None = None
    """Where built bundles are kept by content key; default ``<cache_dir>/bundles``."""
    resume: bool = True
    """Skip (task, cell) pairs already recorded in records/ (a killed campaign finishes the rest)."""
    response_cache: bool = True
    """Cache model responses by request hash (a rerun sends no request it already sent)."""
    max_in_flight: int | None = Field(None, ge=1)
    """Tasks in flight over all actors at most; null: twice the requests the model serves at once
    (model.concurrency × replicas), so a one-request-at-a-time server sees consecutive requests of one
    cell and reuses their shared prompt prefix."""
    progress_every_s: float = Field(2.0, gt=0)
    """Seconds between live progress lines."""
    print_tables: bool = True
    """Print the result tables when the run ends."""


class Catalog(_Strict):
    """Everything a run may pick from by name: suites, system knobs, ablations."""

    suites: dict[str, SuiteConf]
    """Suites by name (conf/suite/)."""
    systems: dict[str, dict[str, Any]]
    """Each system's own knobs by system name (conf/system/; checked by the system's config model)."""
    ablations: dict[str, AblationConf]
    """Ablations by name (conf/ablation/)."""


class CampaignConfig(_Strict):
    """One campaign run: the cells ``suites × systems × seeds × ablations`` on one model."""

    experiment: ExperimentConf = Field(default_factory=ExperimentConf)
    """The experiment (conf/experiment/)."""
    suites: list[str]
    """Suites to run (names in catalog.suites)."""
    systems: list[str]
    """Systems to run (registered names: tgms, vector_rag, static_graph_rag, text_to_cypher)."""
    seeds: list[int]
    """Model sampling seeds; each is a cell of its own."""
    ablations: list[str] = Field(default_factory=lambda: ["none"])
    """Ablations of tgms (names in catalog.ablations); baselines run only none."""
    model: ModelConfig
    """The model (conf/model/; flat keys, split into generation and serving by :class:`ModelConfig`)."""
    cluster: ClusterConf = Field(default_factory=ClusterConf)
    """Where actors run (conf/cluster/)."""
    tracking: TrackingConf = Field(default_factory=TrackingConf)
    """MLflow."""
    run: RunConf = Field(default_factory=RunConf)
    """Run directory and rerun behaviour."""
    catalog: Catalog
    """Suites, system knobs and ablations by name."""

    @field_validator("suites", "systems", "ablations", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, v: Any) -> Any:
        return [v] if isinstance(v, int) else v

    @model_validator(mode="after")
    def _resolve_names(self) -> CampaignConfig:
        from tgms.pipeline.systems.base import check_config, load_systems

        for key, known in (
            ("suites", self.catalog.suites),
            ("ablations", self.catalog.ablations),
            ("systems", load_systems()),
        ):
            values = getattr(self, key)
            if not values:
                raise ValueError(f"{key} is empty: name at least one")
            if len(set(values)) != len(values):
                raise ValueError(f"{key} names one entry twice: {values}")
            unknown = [v for v in values if v not in known]
            if unknown:
                raise ValueError(f"unknown {key} {unknown}; known: {sorted(known)}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise ValueError(f"seeds must be distinct whole numbers >= 0, got {self.seeds}")
        for name in self.systems:  # each system's knobs are checked by its own config model
            check_config(name, self.catalog.systems.get(name, {}))
        return self


def validate(raw: object) -> CampaignConfig:
    """The typed config of a composed one; ``E_INVALID_ARG`` naming every bad key path otherwise (a value
    that is not a mapping is refused the same way)."""
    try:
        return CampaignConfig.model_validate(raw)
    except ValidationError as exc:
        problems = [{"path": _path(e["loc"]), "problem": e["msg"]} for e in exc.errors()]
        lines = "; ".join(f"{p['path']}: {p['problem']}" for p in problems)
        raise InvalidArgError(f"invalid campaign config: {lines}", problems=problems) from None


def _path(loc: tuple[int | str, ...]) -> str:
    """An error's key path as the user wrote it: ``model.concurrency``, not the nested
    ``model.serving.concurrency`` (the model's YAML and overrides are flat)."""
    parts = [str(p) for p in loc]
    if len(parts) >= 3 and parts[0] == "model" and parts[1] in ("generation", "serving"):
        parts = ["model", FLAT_NAMES.get((parts[1], parts[2]), parts[2]), *parts[3:]]
    return ".".join(parts) or "(root)"


def config_schema() -> dict[str, Any]:
    """The JSON schema of the campaign config, every field with its description. ``model`` appears in its
    validated form (``generation``, ``serving``, ``params_b``); the YAML and overrides write the two parts'
    keys flat (``model.temperature``, ``model.api_base``; ``name`` for ``generation.model``)."""
    return CampaignConfig.model_json_schema()
