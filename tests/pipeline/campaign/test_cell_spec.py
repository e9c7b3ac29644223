"""The per-cell spec and the campaign id made of the cells' specs (issue 28, work list item 3).

The id must not move when only how or where the campaign runs changes (replica URLs, timeouts,
concurrency, descriptions, catalog entries no cell uses, the order of a list, the git revision), and must
move when what a cell computes changes (sampling, a knob a cell uses, an ablation's switches, the task
selection, the suite). Each "unchanged" case first checks that its override did change the config, so it
cannot pass by composing the same config twice.

The bundles here are fakes: a ``suite.json`` of made-up tasks and a made-up manifest. The driver's task
selection and spec building (``plan_cells``) read nothing else; a real campaign's specs are checked in
``test_smoke.py`` (on the smoke campaign's fixture).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("hydra")

from tests.pipeline.campaign.test_config import load
from tests.suite_fixtures import manifest as fake_manifest
from tests.suite_fixtures import suite_of, task
from tgms.engine.api import CorruptError
from tgms.pipeline.campaign.bundle import SUITE, Manifest
from tgms.pipeline.campaign.cell_spec import CellSpec, Provenance, campaign_id, provenance
from tgms.pipeline.campaign.config import CampaignConfig
from tgms.pipeline.campaign.driver import CellPlan, plan_cells, write_cell_spec

Bundles = dict[str, tuple[Path, Manifest]]
#: the smoke experiment on two systems and two tgms ablations: small, with every kind of field in play
#: (every task of the fake suite: smoke's one per family would hide a selection change)
BASE = (
    "experiment=smoke",
    "systems=[tgms,vector_rag]",
    "ablations=[none,no_taint]",
    "experiment.per_family=null",
)


def fake_bundle(root: Path, seed: int = 0, families: int = 3, templates: int = 2, per: int = 4) -> Bundles:
    """A collegemsg bundle stand-in: ``suite.json`` with dev tasks and a manifest whose digests follow the
    seed (as a rebuilt bundle's would)."""
    fams = ["T1", "T2", "T3", "T4", "T5"][:families]
    dev = [
        task(id=f"collegemsg/{f}{t}/{k:02d}", family=f, template=f"{f}{t}")
        for f in fams
        for t in range(templates)
        for k in range(per)
    ]
    out = root / f"bundle-s{seed}"
    out.mkdir(parents=True, exist_ok=True)
    (out / SUITE).write_text(suite_of(dev, dataset="collegemsg", seed=seed).to_json(), encoding="utf-8")
    digests = {
        "store_digest": f"{seed:064x}",
        "suite_sha256": f"{seed + 1:064x}",
        "test_sha256": f"{seed + 2:064x}",
    }
    manifest = fake_manifest(seed=seed, **digests)
    return {"collegemsg": (out, manifest)}


def plan(config: CampaignConfig, bundles: Bundles, origin: Provenance | None = None) -> CellPlan:
    return plan_cells(config, bundles, origin or Provenance())


def cid(config: CampaignConfig, bundles: Bundles, origin: Provenance | None = None) -> str:
    specs = plan(config, bundles, origin).specs.values()
    return campaign_id(config, {n: m for n, (_, m) in bundles.items()}, specs)


@pytest.fixture
def bundles(tmp_path: Path) -> Bundles:
    return fake_bundle(tmp_path)


@pytest.mark.parametrize(
    "overrides",
    [
        ["++model.api_base=[http://replica-b:8000]"],
        ["model.timeout_s=7"],
        ["model.concurrency=3"],
        ["++model.ready_timeout_s=5", "model.replicas=3", "++model.endpoints_file=/eps/x.txt"],
        ["++model.local_engine=llama-server", "model.params_b=0.5"],
        ["experiment.description=edited words"],
        ["catalog.ablations.no_taint.description=edited words"],  # a used ablation's description
        ["experiment.name=renamed"],
        ["++catalog.systems.text_to_cypher.row_cap=7"],  # a system no cell uses
        ["catalog.ablations.no_gating.switches.gating=true"],  # an ablation no cell uses
        ["catalog.suites.bitcoin_otc.seed=5"],  # a suite no cell uses
        ["catalog.suites.collegemsg.source=/elsewhere/CollegeMsg.txt"],  # the bundle's content is hashed
        ["cluster.actors=7", "run.max_in_flight=3", "tracking.experiment=other", "run.resume=false"],
        ["systems=[vector_rag,tgms]", "ablations=[no_taint,none]"],  # the order of the root lists
        ["++catalog.systems.tgms.examples_k=2"],  # a default made explicit: the resolved knobs are equal
    ],
)
def test_operational_changes_keep_the_id(overrides: list[str], bundles: Bundles) -> None:
    before, after = load(*BASE), load(*BASE, *overrides)
    assert after.model_dump() != before.model_dump(), "the override changed nothing: a vacuous case"
    assert cid(after, bundles) == cid(before, bundles)


@pytest.mark.parametrize(
    "overrides",
    [
        ["++model.temperature=0.5"],
        ["model.max_tokens=100"],
        ["model.max_model_len=4096"],
        ["++model.served_name=other-weights"],
        ["model.name=other-model"],
        ["++catalog.systems.tgms.examples_k=3"],  # a knob of a used system
        ["++catalog.systems.vector_rag.k=3"],
        ["++catalog.ablations.no_taint.switches.gating=false"],  # a used ablation's switches
        ["experiment.limit=3"],
        ["experiment.slice=stratified-4"],
        ["experiment.per_family=2"],
        ["experiment.split=all"],
        ["++experiment.repair_budget=1"],
        ["seeds=[0]"],
        ["experiment.mutations.per_class=9"],  # the mutation experiment is in no cell, but it is computed
        ["experiment.mutations.enabled=false"],
        ["experiment.ops_bench.enabled=true"],
    ],
)
def test_what_a_campaign_computes_changes_the_id(overrides: list[str], bundles: Bundles) -> None:
    assert cid(load(*BASE, *overrides), bundles) != cid(load(*BASE), bundles)


def test_the_suite_by_content_changes_the_id(tmp_path: Path) -> None:
    base = cid(load(*BASE), fake_bundle(tmp_path))
    # another suite seed is another bundle (ensure_bundle builds <suite>-s<seed>): its manifest is hashed
    assert cid(load(*BASE, "catalog.suites.collegemsg.seed=1"), fake_bundle(tmp_path, seed=1)) != base
    # the same config on a bundle whose suite file differs (a generator change, a rebuilt suite)
    changed = fake_bundle(tmp_path / "b")
    where, manifest = changed["collegemsg"]
    changed["collegemsg"] = (where, manifest.model_copy(update={"suite_sha256": "f" * 64}))
    assert cid(load(*BASE), changed) != base
    # a suite with other tasks: the ids selected are in the spec
    assert cid(load(*BASE), fake_bundle(tmp_path / "c", per=5)) != base


def test_the_task_list_is_hashed_by_content_not_path(tmp_path: Path, bundles: Bundles) -> None:
    first, copy, other = tmp_path / "a.txt", tmp_path / "elsewhere" / "b.txt", tmp_path / "c.txt"
    copy.parent.mkdir()
    first.write_text("collegemsg/T10/00\ncollegemsg/T20/01  # two tasks\n")
    copy.write_bytes(first.read_bytes())
    other.write_text("collegemsg/T10/00\ncollegemsg/T20/02\n")
    ids = {p: cid(load(*BASE, f"experiment.task_list={p}"), bundles) for p in (first, copy, other)}
    assert ids[first] == ids[copy]
    assert ids[first] != ids[other]
    assert ids[first] != cid(load(*BASE), bundles)
    spec = next(iter(plan(load(*BASE, f"experiment.task_list={first}"), bundles).specs.values()))
    assert spec.selection.task_ids == ["collegemsg/T10/00", "collegemsg/T20/01"]
    assert spec.selection.task_list_sha256 == hashlib.sha256(first.read_bytes()).hexdigest()


def test_the_git_revision_is_provenance_not_identity(bundles: Bundles) -> None:
    config = load(*BASE)
    a, b = provenance("abc1234", "0.1.0"), provenance("def5678-dirty", "0.2.0")
    assert (b.git_revision, b.git_dirty) == ("def5678", True) and a.git_dirty is False
    assert cid(config, bundles, a) == cid(config, bundles, b)
    spec_a = next(iter(plan(config, bundles, a).specs.values()))
    spec_b = next(iter(plan(config, bundles, b).specs.values()))
    assert spec_a.sha256() == spec_b.sha256()
    assert spec_a.to_json() != spec_b.to_json()  # written, just not hashed
    assert "provenance" not in spec_a.hashed()
    assert json.loads(spec_a.to_json())["provenance"]["git_dirty"] is False
    assert provenance("unknown", "0.1.0") == Provenance(package_version="0.1.0")


def test_the_spec_holds_the_resolved_cell(bundles: Bundles) -> None:
    config = load(*BASE, "++model.temperature=0.25", "experiment.limit=5")
    specs = plan(config, bundles).specs
    by_id = {c.cell_id: s for c, s in specs.items()}
    assert sorted(by_id) == sorted(
        f"collegemsg.{sys}.scripted.s{seed}.{abl}"
        for seed in (0, 1)
        for sys, abl in [("tgms", "none"), ("tgms", "no_taint"), ("vector_rag", "none")]
    )
    spec = by_id["collegemsg.tgms.scripted.s1.no_taint"]
    assert spec.ablation.switches == {"taint": False} and spec.system.knobs["taint"] is False
    assert spec.system.knobs["examples_k"] == 2  # a default the catalog does not set, resolved
    assert spec.system.knobs["examples_embedder"] == "hashing"  # the smoke experiment's catalog knob
    g = spec.generation
    assert (g.model, g.served_model, g.temperature, g.seed) == ("scripted", "scripted", 0.25, 1)
    assert (g.max_tokens, g.context_window) == (
        config.model.generation.max_tokens,
        config.model.generation.max_model_len,
    )
    assert spec.selection.limit == 5 and len(spec.selection.task_ids) == 5
    assert spec.selection.task_ids == sorted(spec.selection.task_ids)
    assert (spec.suite.store_digest, spec.suite.generator_version) == ("0" * 64, "2")
    assert spec.repair_budget == config.experiment.repair_budget and spec.record_version == "1"
    # every cell of a suite runs the same tasks
    assert len({tuple(s.selection.task_ids) for s in specs.values()}) == 1


def test_cell_spec_json_is_deterministic_and_checks_its_hash(bundles: Bundles, tmp_path: Path) -> None:
    config = load(*BASE)
    origin = provenance("abc1234", "0.1.0")
    cell, spec = next(iter(plan(config, bundles, origin).specs.items()))
    again = plan(config, bundles, origin).specs[cell]  # built a second time, from scratch
    assert spec.to_json() == again.to_json()
    first = write_cell_spec(tmp_path / "run", cell, spec).read_bytes()
    path = write_cell_spec(tmp_path / "run", cell, again)
    assert path == tmp_path / "run" / "specs" / f"{cell.cell_id}.json"
    assert path.read_bytes() == first and first.endswith(b"\n") and first.count(b"\n") == 1
    read = CellSpec.from_json(first.decode())
    assert read == spec and read.sha256() == spec.sha256() == json.loads(first)["sha256"]
    tampered = json.loads(first)
    tampered["generation"]["temperature"] = 0.9
    with pytest.raises(CorruptError):
        CellSpec.from_json(json.dumps(tampered))


def test_a_disabled_experiment_s_settings_are_not_in_the_id(bundles: Bundles) -> None:
    off = ("experiment.mutations.enabled=false", "experiment.ops_bench.enabled=false")
    base = cid(load(*BASE, *off), bundles)
    edited = load(*BASE, *off, "experiment.mutations.per_class=9", "experiment.ops_bench.reps=9")
    assert cid(edited, bundles) == base
    assert cid(load(*BASE, *off[1:], "experiment.mutations.per_class=9"), bundles) != base


def test_no_evaluation_means_no_cells_in_the_id(bundles: Bundles) -> None:
    config = load(*BASE, "experiment.evaluate=false")
    assert plan(config, bundles).specs == {}
    # the cells' settings do not matter when no cell runs; the mutation experiment still does
    base = cid(config, bundles)
    assert cid(load(*BASE, "experiment.evaluate=false", "++model.temperature=0.5"), bundles) == base
    assert cid(load(*BASE, "experiment.evaluate=false", "experiment.mutations.seed=3"), bundles) != base


def test_records_carry_the_spec_hash_only_in_a_campaign(tmp_path: Path) -> None:
    from tgms.models.config import GenerationConfig
    from tgms.pipeline.campaign.cells import Cell
    from tgms.pipeline.campaign.executor import CellJob, run_settings, write_result
    from tgms.pipeline.campaign.records import TaskResult, read_records
    from tgms.pipeline.systems.record import TaskRecord

    record = TaskRecord(task_id="t1", system="tgms", model="m", seed=0, answer_kind=None)
    # outside a campaign the key is absent: a record's bytes are what they were before the field
    assert "cell_spec_sha256" not in record.model_dump(mode="json")
    assert "cell_spec_sha256" not in json.loads(record.to_json())
    cell = Cell("collegemsg", "tgms", "m", 0)
    for digest, name in (("ab" * 32, "with"), (None, "without")):
        settings = run_settings(cell, GenerationConfig(model="m"))
        job = CellJob(
            cell, {}, settings, [], tmp_path / name / "r.jsonl", tmp_path / name / "t.jsonl", digest
        )
        write_result(job, TaskResult(record))
        line = json.loads(job.records_path.read_text())
        assert line.get("cell_spec_sha256") == digest and ("cell_spec_sha256" in line) == (digest is not None)
        (back,) = read_records(job.records_path)
        assert back.cell_spec_sha256 == digest and back == record.model_copy(
            update={"cell_spec_sha256": digest}
        )
