"""A generated suite of campaign faults that end before anything is made (issue 26): every case must end
in the one structured error (``{error, message, details}``, a known code, the cause named) and make
nothing, never a traceback or a silent outcome. The cases run in-process through the same steps the
driver runs first (pipeline/campaign/driver.py ``main``/``_task``): the overrides composed
(pipeline/campaign/overrides.py), the config validated (pipeline/campaign/config.py), then the checks
before anything is made (pipeline/campaign/preflight.py). The faults that need a running campaign
(signals, memory kills, dying replicas) have their own tests beside this one."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tgms.engine.api import TGMSError
from tgms.engine.errors import ERROR_CLASSES

pytest.importorskip("hydra")

from tgms.pipeline.campaign.config import validate
from tgms.pipeline.campaign.driver import CONF_DIR, tracking_target
from tgms.pipeline.campaign.overrides import check_overrides
from tgms.pipeline.campaign.preflight import preflight

GROUPS = ("model", "experiment", "cluster")
SECTIONS = ("model", "run", "cluster", "experiment", "tracking")
#: (override, why it is refused): values a config field refuses
BAD_VALUES = [
    "model.concurrency=0", "model.concurrency=-3", "model.timeout_s=0", "model.temperature=-1",
    "model.max_tokens=0", "model.ready_timeout_s=0", "model.kind=cloud", "model.replicas=0",
    "run.progress_every_s=-1", "run.max_in_flight=0", "seeds=[]", "seeds=[-1]", "systems=[]",
    "systems=[nope]", "systems=[tgms,nope]", "ablations=[nope]", "ablations=[]", "suites=[]",
    "suites=[nope]", "cluster.num_cpus=-2", "cluster.actors=0", "cluster.actor_cpus=-1",
    "cluster.actor_concurrency=0", "cluster.kind=mars", "experiment.per_family=-1",
    "experiment.split=holdout", "experiment.limit=-5", "experiment.repair_budget=-1",
    "experiment.mutations.per_class=-1", "experiment.slice=stratified-abc",
    "catalog.suites.collegemsg.seed=-1", "catalog.suites.collegemsg.events=0",
    "catalog.systems.tgms.examples=sometimes", "catalog.systems.tgms.manual=half",
    "catalog.systems.tgms.examples_k=0", "catalog.systems.tgms.greedy_repairs=-1",
    "catalog.systems.tgms.repeat_redraws=99", "catalog.systems.tgms.plan_schema=xml",
    "catalog.systems.vector_rag.top_k=0", "run.resume=perhaps", "run.response_cache=maybe",
]  # fmt: skip
PARSE_ERRORS = ["seeds=[0,", "systems=[tgms", "model.concurrency=", "=tgms", "seeds=[0]]", "a b=c"]


def run_checks(tmp: Path, overrides: list[str], setup: Callable[[Path], None] | None = None) -> TGMSError:
    """The driver's first steps on ``overrides``; the structured error they end in."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    run_dir = tmp / "campaigns" / "case"
    full = [*overrides, f"run.dir={run_dir}"]
    if setup is not None:
        setup(tmp)
    with pytest.raises(TGMSError) as caught:
        check_overrides(CONF_DIR, full)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = compose("config", overrides=full)
        config = validate(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]
        preflight(config, tracking_target(config, tmp / "campaigns" / "case")[0], run_dir, lambda _: None)
    err = caught.value
    shape = err.to_dict()
    assert set(shape) == {"error", "message", "details"} and shape["error"] in {*ERROR_CLASSES, "E_INFRA"}
    assert shape["message"] and "Traceback" not in shape["message"]
    assert not (tmp / "campaigns").exists()  # nothing made
    return err


def _cases() -> list[tuple[str, list[str], Callable[[Path], None] | None, str]]:
    cases: list[tuple[str, list[str], Callable[[Path], None] | None, str]] = []
    for group in GROUPS:
        cases.append((f"unknown {group}", [f"{group}=no_such_{group}"], None, "E_NOT_FOUND"))
    for listed in ("suite", "system", "ablation"):
        cases.append((f"{listed}= for {listed}s=[]", [f"{listed}=collegemsg"], None, "E_INVALID_ARG"))
    for section in SECTIONS:
        for key in ("nonsense", "Concurrency", "seed_", "api-base", "timeout", "num_cpu", "dir_"):
            cases.append((f"unknown key {section}.{key}", [f"{section}.{key}=1"], None, "E_INVALID_ARG"))
    for bad in BAD_VALUES:
        cases.append((f"bad value {bad}", [bad], None, "E_INVALID_ARG"))
    for text in PARSE_ERRORS:
        cases.append((f"unparseable {text!r}", [text], None, ""))
    endpoint = ["model=qwen2.5-7b", "model.ready_timeout_s=0.5"]
    unreachable = "model.api_base=[http://127.0.0.1:9]"
    cases += [
        ("endpoint without api_base", endpoint, None, "E_INVALID_ARG"),
        ("endpoint ftp url", [*endpoint, "model.api_base=[ftp://127.0.0.1:9]"], None, "E_INVALID_ARG"),
        ("endpoint bare host", [*endpoint, "model.api_base=[127.0.0.1:9]"], None, "E_INVALID_ARG"),
        ("endpoint unreachable", [*endpoint, unreachable], None, "E_INFRA"),
        ("endpoint two unreachable", [*endpoint, "model.api_base=[http://127.0.0.1:9,http://127.0.0.1:7]"],
         None, "E_INFRA"),
        ("endpoints file missing", [*endpoint, "model.endpoints_file=/nonexistent/e.txt"], None,
         "E_NOT_FOUND"),
        ("api key variable unset", [*endpoint, unreachable, "model.api_key_env=TGMS_TEST_UNSET_KEY"], None,
         "E_INVALID_ARG"),
    ]  # fmt: skip

    def empty_endpoints(tmp: Path) -> None:
        (tmp / "e.txt").write_text("# no replicas\n\n")

    cases.append(("endpoints file empty", [*endpoint, "model.endpoints_file=ENDPOINTS"], empty_endpoints,
                  "E_INVALID_ARG"))  # fmt: skip
    for name, make, code in _store_faults():
        cases.append((f"tracking store {name}", ["tracking.uri=sqlite:///DB"], make, code))
    return cases


def _store_faults() -> list[tuple[str, Callable[[Path], None], str]]:
    def garbage(tmp: Path) -> None:
        (tmp / "m.db").write_bytes(os.urandom(32 * 1024))

    def text(tmp: Path) -> None:
        (tmp / "m.db").write_text("not a database\n" * 100)

    def torn(tmp: Path) -> None:
        db = tmp / "m.db"
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE runs (run_uuid TEXT)")
        con.execute("CREATE TABLE metrics (k TEXT, v REAL)")
        con.executemany("INSERT INTO metrics VALUES (?, ?)", [(f"m{i}", float(i)) for i in range(20_000)])
        con.commit()
        con.close()
        data = bytearray(db.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 8192] = os.urandom(8192)
        db.write_bytes(bytes(data))

    def half_made_with_runs(tmp: Path) -> None:
        con = sqlite3.connect(tmp / "m.db")
        con.execute("CREATE TABLE runs (run_uuid TEXT)")
        con.execute("INSERT INTO runs VALUES ('r1')")
        con.execute("CREATE TABLE _alembic_tmp_jobs (id INTEGER)")
        con.commit()
        con.close()

    return [("garbage", garbage, "E_CORRUPT"), ("text", text, "E_CORRUPT"), ("torn", torn, "E_CORRUPT"),
            ("half-made with runs", half_made_with_runs, "E_CORRUPT")]  # fmt: skip


CASES = _cases()


def test_the_suite_has_at_least_a_hundred_cases() -> None:
    assert len(CASES) >= 100, len(CASES)


@pytest.mark.parametrize(("name", "overrides", "setup", "code"), CASES, ids=[c[0] for c in CASES])
def test_a_fault_ends_in_the_structured_error_and_makes_nothing(
    tmp_path: Path, name: str, overrides: list[str], setup: Callable[[Path], None] | None, code: str
) -> None:
    subst = {"DB": str(tmp_path / "m.db"), "ENDPOINTS": str(tmp_path / "e.txt")}
    resolved = [
        o.replace("sqlite:///DB", f"sqlite:///{subst['DB']}").replace("=ENDPOINTS", f"={subst['ENDPOINTS']}")
        for o in overrides
    ]
    os.environ.pop("TGMS_TEST_UNSET_KEY", None)
    err = run_checks(tmp_path, resolved, setup)
    if code:
        assert err.code == code, (name, err.to_dict())
