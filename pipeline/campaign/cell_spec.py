"""The resolved spec of one cell, and the campaign id made of the cells' specs (issue 28, work list item 3).

A :class:`CellSpec` says what one cell computed, in one file: the suite's bundle by content, the system and
every knob it ran with (the catalog's, the ablation's switches, the system's defaults), the generation
settings that decide answers, the exact tasks selected, the repair budget and the record format. The
driver writes it as ``specs/<cell_id>.json`` in the run directory and as the cell run's ``cell_spec.json``
artifact, and tags the cell run with its SHA-256 (``tgms.cell_spec_sha256``).

Hashed (they change what a cell answers): everything above. Not hashed: how and where the model is served
(``api_base``, ``endpoints_file``, ``endpoints_wait_s``, ``timeout_s``, ``concurrency``,
``ready_timeout_s``, ``local_engine``, ``replicas``, ``reply_delay_s``, ``kind``, ``flavour``,
``api_key_env``, ``params_b``), ``run``, ``tracking``, ``cluster``, the ``description`` strings, the
experiment's name, the task list's path (its content is hashed), a suite's ``source``/``bundle`` paths (the
bundle's digests are hashed), catalog entries no cell uses, and the :class:`Provenance` block (git
revision, package version), which is written beside the hashed fields and left out of the hash.

:func:`campaign_id` is the hash of the sorted cell-spec hashes plus the two computations of a campaign
that are in no cell (the mutation experiment and the operator benchmark, when enabled).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tgms.engine.api import CorruptError, canonical_json, sha256_hex
from tgms.models.config import GenerationConfig
from tgms.pipeline.campaign.bundle import Manifest
from tgms.pipeline.campaign.cells import Cell, system_config
from tgms.pipeline.campaign.config import CampaignConfig
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import check_config
from tgms.pipeline.systems.record import RECORD_VERSION

#: the format of a cell spec; hashed, so a change of what a spec holds is a new id, never a silent reuse
SPEC_VERSION = "1"
#: the cell run's tag holding the spec's SHA-256, and the spec's artifact name on that run
CELL_SPEC_TAG = "tgms.cell_spec_sha256"
CELL_SPEC_ARTIFACT = "cell_spec.json"
#: the run directory's folder of cell specs (``specs/<cell_id>.json``)
SPECS_DIR = "specs"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuiteSpec(_Frozen):
    """The suite by content, from its bundle's manifest (what actually ran, also for a prebuilt bundle)."""

    name: str
    dataset: str
    seed: int
    store_digest: str
    suite_sha256: str
    test_sha256: str
    generator_version: str | None = None


class SystemSpec(_Frozen):
    """The system and all its knobs as its config model resolved them (defaults included)."""

    name: str
    knobs: dict[str, Any]


class AblationSpec(_Frozen):
    name: str
    switches: dict[str, bool | str] = Field(default_factory=dict)


class GenerationSpec(_Frozen):
    """What a request to the model carries that changes its answer, and which weights answer it: the hashed
    view of a cell's :class:`~models.config.GenerationConfig` (:meth:`of`). Its own shape, not the config's
    dump, so the hash (and the campaign id) stays the same bytes as before the config had its own model;
    ``flavour`` and the weights' sources stay out of it, as they did."""

    model: str
    served_model: str
    temperature: float
    max_tokens: int
    seed: int
    context_window: int
    chat_template: str | None = None
    quantization: str | None = None
    weights_sha256: str | None = None

    @classmethod
    def of(cls, generation: GenerationConfig) -> GenerationSpec:
        """The spec of ``generation`` (the cell's seed already in it)."""
        return cls(
            model=generation.model,
            served_model=generation.served,
            temperature=generation.temperature,
            max_tokens=generation.max_tokens,
            seed=generation.seed,
            # open_model serves every kind with max_model_len as the window RunSettings carries
            context_window=generation.max_model_len,
            chat_template=generation.chat_template,
            quantization=generation.quantization,
            weights_sha256=generation.model_file.sha256 if generation.model_file is not None else None,
        )


class SelectionSpec(_Frozen):
    """How the tasks were chosen, and the ids chosen (sorted)."""

    split: str
    per_family: int | None = None
    slice: str | None = None
    task_list_sha256: str | None = None
    limit: int | None = None
    task_ids: list[str]


class Provenance(_Frozen):
    """Where the spec was made: written, never hashed (a long campaign resumes across commits)."""

    git_revision: str | None = None
    git_dirty: bool | None = None
    package_version: str | None = None


class CellSpec(_Frozen):
    """One cell, resolved: its hash (:meth:`sha256`) covers every field but :attr:`provenance`."""

    spec_version: str = SPEC_VERSION
    suite: SuiteSpec
    system: SystemSpec
    ablation: AblationSpec
    generation: GenerationSpec
    selection: SelectionSpec
    repair_budget: int
    record_version: str = RECORD_VERSION
    provenance: Provenance = Field(default_factory=Provenance)

    def hashed(self) -> dict[str, Any]:
        """The fields the hash covers, as JSON values."""
        return self.model_dump(mode="json", exclude={"provenance"})

    def sha256(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`hashed` (lower-case hex)."""
        return sha256_hex(canonical_json(self.hashed()))

    def to_json(self) -> str:
        """The file's bytes: canonical JSON (so two builds of one spec are byte-equal) of every field plus
        ``sha256``, one line."""
        return canonical_json({**self.model_dump(mode="json"), "sha256": self.sha256()}) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CellSpec:
        """A spec read back from :meth:`to_json`'s form; ``E_CORRUPT`` when its ``sha256`` is not its hash."""
        raw = json.loads(text)
        stored = raw.pop("sha256", None) if isinstance(raw, dict) else None
        spec = cls.model_validate(raw)
        if stored is not None and stored != spec.sha256():
            raise CorruptError("the cell spec's sha256 is not the hash of its fields", stored=stored,
                               found=spec.sha256())  # fmt: skip
        return spec


def provenance(git_revision: str, package_version: str | None = None) -> Provenance:
    """The provenance block from :func:`pipeline.campaign.tracking.git_revision`'s ``<sha>[-dirty]``
    (``unknown`` outside a checkout) and the installed package's version (looked up when not given)."""
    if package_version is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            package_version = version("tgms")
        except PackageNotFoundError:
            package_version = None
    if git_revision == "unknown":
        return Provenance(package_version=package_version)
    sha, dirty = git_revision.removesuffix("-dirty"), git_revision.endswith("-dirty")
    return Provenance(git_revision=sha, git_dirty=dirty, package_version=package_version)


def suite_spec(name: str, manifest: Manifest) -> SuiteSpec:
    return SuiteSpec(
        name=name,
        dataset=manifest.dataset,
        seed=manifest.seed,
        store_digest=manifest.store_digest,
        suite_sha256=manifest.suite_sha256,
        test_sha256=manifest.test_sha256,
        generator_version=manifest.generator_version,
    )


def task_list_sha256(content: bytes) -> str:
    """The hash of a task-list file's bytes (its path is operational: a copy elsewhere is the same list)."""
    return hashlib.sha256(content).hexdigest()


def cell_spec(
    config: CampaignConfig,
    cell: Cell,
    manifest: Manifest,
    tasks: Iterable[Task],
    *,
    task_list_digest: str | None = None,
    origin: Provenance | None = None,
) -> CellSpec:
    """The spec of ``cell``: ``manifest`` is its suite's bundle manifest, ``tasks`` the tasks it runs
    (:func:`pipeline.campaign.cells.select_tasks`), ``task_list_digest`` the hash of
    ``experiment.task_list``'s content when one is set."""
    exp = config.experiment
    # the system's own config model fills in its defaults: a default that changes (and with it the answers)
    # changes the hash, where the catalog's knobs alone would not show it
    knobs = check_config(cell.system, system_config(config, cell)).model_dump(mode="json")
    switches = dict(config.catalog.ablations[cell.ablation].switches)
    return CellSpec(
        suite=suite_spec(cell.suite, manifest),
        system=SystemSpec(name=cell.system, knobs=knobs),
        ablation=AblationSpec(name=cell.ablation, switches=switches),
        generation=GenerationSpec.of(config.model.generation.model_copy(update={"seed": cell.seed})),
        selection=SelectionSpec(
            split=exp.split,
            per_family=exp.per_family,
            slice=exp.slice,
            task_list_sha256=task_list_digest,
            limit=exp.limit,
            task_ids=sorted(t.id for t in tasks),
        ),
        repair_budget=exp.repair_budget,
        provenance=origin or Provenance(),
    )


def campaign_identity(
    config: CampaignConfig, manifests: Mapping[str, Manifest], specs: Iterable[CellSpec]
) -> dict[str, Any]:
    """What :func:`campaign_id` hashes: the sorted cell-spec hashes (none when the experiment does not
    evaluate), and the mutation experiment and operator benchmark when enabled (their settings only then:
    a disabled one computes nothing, whatever its settings say). The mutation experiment runs on the first
    suite's bundle, so that suite is in it by content."""
    exp = config.experiment
    mutations = None
    if exp.mutations.enabled:
        first = config.suites[0]
        mutations = {
            "per_class": exp.mutations.per_class,
            "seed": exp.mutations.seed,
            "suite": suite_spec(first, manifests[first]).model_dump(mode="json"),
        }
    ops = None
    if exp.ops_bench.enabled:
        ops = {"scales": list(exp.ops_bench.scales), "reps": exp.ops_bench.reps}
    return {"cells": sorted(s.sha256() for s in specs), "mutations": mutations, "ops_bench": ops}


def campaign_id(config: CampaignConfig, manifests: Mapping[str, Manifest], specs: Iterable[CellSpec]) -> str:
    """A stable id of what the campaign computes (16 hex digits): the hash of :func:`campaign_identity`.

    A rerun that computes the same thing resumes the same MLflow runs, even with other replica URLs,
    timeouts, concurrency, descriptions, an edited catalog entry no cell uses, or from another directory.
    The git revision is deliberately not in it: a long campaign is resumed across commits (the revision is
    each cell spec's provenance and the parent's ``tgms.git_revision`` tag). Ids made before cell specs
    (the config's hash) differ from these: an MLflow store's older parent runs are not resumed by them."""
    text = canonical_json(campaign_identity(config, manifests, specs))
    return sha256_hex(text)[:16]
