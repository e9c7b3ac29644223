"""An actor given a log whose digest differs from the manifest's refuses to serve, and the driver says why.

The tampered log is a real, valid event log: one op of the last batch (a probe correction's property) is
changed and the line resealed, so it replays cleanly into a store whose digest is not the manifest's. The
actor refuses every call with ``E_CORRUPT`` naming the suite, the expected and found digests and where it
runs; :func:`start_actors` stops the campaign before any task with one error naming all of that.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.pipeline.campaign.conftest import SUITE_NAME, Bundle, cluster_conf
from tgms.engine.api import CorruptError, canonical_json_of_canonical, replay, sha256_hex
from tgms.models.config import EndpointConfig
from tgms.pipeline.campaign.actors import TaskActor
from tgms.pipeline.campaign.bundle import EVENTLOG
from tgms.pipeline.campaign.endpoints import endpoint_to_dict
from tgms.pipeline.campaign.executor import start_actors

ENDPOINT = endpoint_to_dict(EndpointConfig(base_urls=("http://127.0.0.1:9",), model="scripted"))


def seal(record: dict) -> str:
    body = canonical_json_of_canonical(record)
    return body[:-1] + f',"~sha":"{sha256_hex(body)}"}}\n'


def tampered_copy(bundle: Bundle, out: Path) -> Path:
    """A copy of the bundle whose last batch sets ``corrected`` to false instead of true."""
    shutil.copytree(bundle.dir, out)
    lines = (out / EVENTLOG).read_text(encoding="utf-8").splitlines(keepends=True)
    i = max(n for n, line in enumerate(lines) if '"kind":"batch"' in line)
    record = json.loads(lines[i])
    del record["~sha"]
    assert seal(record) == lines[i], "resealing an untouched line reproduces it"
    assert record["ops"][0]["props"] == {"corrected": True}
    record["ops"][0]["props"] = {"corrected": False}
    lines[i] = seal(record)
    (out / EVENTLOG).write_text("".join(lines), encoding="utf-8")
    return out


def replayed_digest(log: Path) -> str:
    with tempfile.TemporaryDirectory() as scratch, replay(log, Path(scratch) / "s") as store:
        return store.digest()


@pytest.fixture(scope="module")
def tampered(small_bundle: Bundle, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tampered_copy(small_bundle, tmp_path_factory.mktemp("tampered") / "bundle")


def test_actor_body_refuses_every_call(small_bundle: Bundle, tampered: Path, tmp_path: Path) -> None:
    found = replayed_digest(tampered / EVENTLOG)
    assert found != small_bundle.manifest.store_digest
    actor = TaskActor(
        SUITE_NAME, (tampered / EVENTLOG).read_bytes(), small_bundle.manifest, ENDPOINT, str(tmp_path)
    )
    try:
        for call in (
            actor.ready,
            lambda: actor.run(small_bundle.tasks[0], {"system": "tgms"}, {}, {"model": "m"}),
        ):
            with pytest.raises(CorruptError) as err:
                call()
            d = err.value.to_dict()
            assert d["error"] == "E_CORRUPT"
            assert d["details"]["suite"] == SUITE_NAME
            assert d["details"]["expected"] == small_bundle.manifest.store_digest
            assert d["details"]["found"] == found
            assert d["details"]["pid"] > 0 and d["details"]["node"]
            assert "digest differs" in d["details"]["reason"]
    finally:
        actor.close()
    assert not actor.scratch.exists(), "close removes the actor's own store"


def test_actor_body_proves_the_true_log(small_bundle: Bundle, tmp_path: Path) -> None:
    actor = TaskActor(
        SUITE_NAME, (small_bundle.dir / EVENTLOG).read_bytes(), small_bundle.manifest, ENDPOINT, str(tmp_path)
    )
    try:
        proof = actor.ready()
        assert proof["digest"] == small_bundle.manifest.store_digest
        assert proof["suite"] == SUITE_NAME and proof["seconds"] > 0
    finally:
        actor.close()


def test_unreplayable_log_is_a_refusal_too(small_bundle: Bundle, tmp_path: Path) -> None:
    data = bytearray((small_bundle.dir / EVENTLOG).read_bytes())
    data[len(data) // 2] ^= 0x01  # a flipped bit mid-log: the line's seal no longer matches
    actor = TaskActor(SUITE_NAME, bytes(data), small_bundle.manifest, ENDPOINT, str(tmp_path))
    try:
        with pytest.raises(CorruptError) as err:
            actor.ready()
        assert "does not replay" in err.value.details["reason"]
        assert err.value.details["replay_error"]["error"] == "E_CORRUPT"
        assert err.value.details["found"] is None
    finally:
        actor.close()


def test_driver_reports_which_actor_refused_and_why(
    ray_info: dict, small_bundle: Bundle, tampered: Path, tmp_path: Path
) -> None:
    found = replayed_digest(tampered / EVENTLOG)
    with pytest.raises(CorruptError) as err:
        start_actors({SUITE_NAME: (tampered, small_bundle.manifest)}, ENDPOINT, cluster_conf(), tmp_path)
    e = err.value
    expected = small_bundle.manifest.store_digest
    assert f"suite {SUITE_NAME}" in e.message and expected in e.message and found in e.message
    assert "digest differs" in e.message
    refusals = e.details["refusals"]
    assert len(refusals) == 2, "both actors of the suite refused"
    assert {r["actor"] for r in refusals} == {0, 1}
    assert all(
        r["expected"] == expected and r["found"] == found and r["suite"] == SUITE_NAME for r in refusals
    )
    assert e.details["suites"] == [SUITE_NAME]


def test_driver_starts_proven_actors(ray_info: dict, small_bundle: Bundle, tmp_path: Path) -> None:
    with start_actors(small_bundle.bundles(), ENDPOINT, cluster_conf(actors=2), tmp_path) as pool:
        proofs = pool.ready()
        assert len(proofs) == 2
        assert {p["digest"] for p in proofs} == {small_bundle.manifest.store_digest}
        assert len({p["pid"] for p in proofs}) == 2, "two actor processes"
