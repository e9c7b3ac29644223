"""Issue 14's list of CLI defects, one test each: the structured error with the right code, nothing changed.

Each of these failed before the boundary work (a traceback, a wrong code, or an input accepted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.claims._support import W, raw_plan, step

from ._cli import build_small_store, log_bytes, read_only_dir, run_cli, store_digest, store_fingerprint


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_small_store(tmp_path_factory.mktemp("boundary") / "store")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of the test's own (for tests that write or damage it)."""
    return build_small_store(tmp_path / "own")


def _bad_file(tmp_path: Path, kind: str) -> Path:
    if kind == "missing":
        return tmp_path / "missing.json"
    if kind == "directory":
        (tmp_path / "a-dir").mkdir()
        return tmp_path / "a-dir"
    path = tmp_path / "latin1.json"
    path.write_bytes('{"question": "caf\xe9"}\n'.encode("latin-1"))  # not UTF-8
    return path


EXPECTED = {"missing": "E_NOT_FOUND", "directory": "E_INVALID_ARG", "non-utf8": "E_SCHEMA"}


@pytest.mark.parametrize("kind", ["missing", "directory", "non-utf8"])
@pytest.mark.parametrize("command", ["write", "plan verify", "plan run", "replay", "verify-answer"])
def test_bad_files_are_structured_errors(capsys, tmp_path, store_dir, command, kind):
    before = store_fingerprint(store_dir)
    bad = _bad_file(tmp_path, kind)
    argv = {
        "write": ["write", "--store", store_dir, bad],
        "plan verify": ["plan", "verify", bad, "--store", store_dir],
        "plan run": ["plan", "run", bad, "--store", store_dir],
        "replay": ["replay", bad, "--store", tmp_path / "replayed"],
        "verify-answer": ["verify-answer", bad, "--trace", bad, "--store", store_dir],
    }[command]
    ran = run_cli(capsys, *argv)
    want = "E_CORRUPT" if (command, kind) == ("replay", "non-utf8") else EXPECTED[kind]  # not a log at all
    assert ran.code != 0 and ran.error["error"] == want, ran.err
    assert store_fingerprint(store_dir) == before
    assert not (tmp_path / "replayed").exists()


@pytest.mark.parametrize(
    "suite",
    [{"a": 1}, [], {"dataset": "x", "seed": 0, "test_sha256": "y", "splits": {"dev": [1], "test": []}}],
)
def test_tasks_stats_on_a_non_suite(capsys, tmp_path, suite):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(suite))
    ran = run_cli(capsys, "tasks", "stats", path)
    assert (ran.code, ran.error["error"]) == (2, "E_SCHEMA")
    assert "is not a task suite" in ran.error["message"]


@pytest.mark.parametrize("scales", ["abc", "1e5,x", "nan", "-5", "1.5", "1e30", "0"])
def test_bench_scales_must_be_counts(capsys, scales):
    ran = run_cli(capsys, "bench", "ops", "--scales", scales, "--datasets", "")
    assert (ran.code, ran.error["error"]) == (2, "E_INVALID_ARG")


def _nested(depth: int) -> str:
    """JSON text of objects nested ``depth`` deep (text: json.dumps itself cannot write 5,000 levels)."""
    return '{"k":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [65, 300, 5000])
def test_deep_op_props_are_e_limit(capsys, tmp_path, store, depth):
    before = log_bytes(store)
    ops = tmp_path / "ops.jsonl"
    ops.write_text(f'{{"op": "assert_node", "uid": "deep", "vt_s": 0, "props": {_nested(depth)}}}\n')
    ran = run_cli(capsys, "write", "--store", store, ops)
    assert ran.error["error"] == "E_LIMIT" and ran.code == 1, ran.err
    assert log_bytes(store) == before


@pytest.mark.parametrize("depth", [65, 300, 5000])
def test_deep_compute_input_is_e_limit(capsys, store_dir, depth):
    args = f'{{"fn": "count", "input": [{_nested(depth)}]}}'
    ran = run_cli(capsys, "call", "compute", args, "--store", store_dir)
    assert ran.error["error"] == "E_LIMIT", ran.err


@pytest.mark.parametrize("depth", [65, 300, 5000])
def test_deep_plan_args_are_e_limit(capsys, tmp_path, store_dir, depth):
    plan = json.dumps(raw_plan(step("s1", "compute", {"fn": "count", "input": ["HOLE"]}), answer="s1.value"))
    path = tmp_path / "plan.json"
    path.write_text(plan.replace('"HOLE"', _nested(depth)))
    for sub in ("verify", "run"):
        ran = run_cli(capsys, "plan", sub, path, "--store", store_dir)
        assert ran.error["error"] == "E_LIMIT", ran.err


def test_oversized_props_are_e_limit(capsys, tmp_path, store):
    ops = tmp_path / "ops.jsonl"
    ops.write_text(json.dumps({"op": "assert_node", "uid": "big", "vt_s": 0, "props": {"x": "y" * 70_000}}))
    ran = run_cli(capsys, "write", "--store", store, ops)
    assert ran.error["error"] == "E_LIMIT"


def test_write_to_a_read_only_store_is_a_conflict(capsys, tmp_path, store):
    ops = tmp_path / "ops.jsonl"
    ops.write_text('{"op": "assert_node", "uid": "new", "vt_s": 0}\n')
    before = store_fingerprint(store)
    with read_only_dir(store):
        ran = run_cli(capsys, "write", "--store", store, ops)
        assert (ran.code, ran.error["error"]) == (1, "E_CONFLICT"), ran.err
        assert "read-only" in ran.error["message"]
    assert store_fingerprint(store) == before


@pytest.mark.parametrize("had_results", [False, True], ids=["no-results-dir", "old-results-dir"])
def test_plan_run_on_a_read_only_store_keeps_results_in_the_cache(
    capsys, tmp_path, store, monkeypatch, had_results
):
    monkeypatch.setenv("TGMS_CACHE", str(tmp_path / "cache"))
    if had_results:
        (store / "results" / "00").mkdir(parents=True)  # results of runs from before it became read-only
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            raw_plan(
                step("s1", "temporal_reachability", {"src": "n1", "window": dict(W)}),
                answer="s1.rows_total",
                kind="count",
            )
        )
    )
    before = store_fingerprint(store)
    with read_only_dir(store):
        ran = run_cli(capsys, "plan", "run", plan, "--store", store)
        assert ran.code == 0, ran.err
        assert "results go to" in ran.err
        out = tmp_path / "run.json"
        out.write_text(ran.out)
        ran = run_cli(capsys, "verify-answer", out, "--trace", out, "--store", store)
        assert ran.code == 0, ran.err  # verify-answer finds the results where plan run put them
    assert store_fingerprint(store) == before
    assert any((tmp_path / "cache" / "results").rglob("*.json"))


# -- refused although it was accepted ------------------------------------------------------------------
REACH = {"src": "n0", "window": {"t_a": 0, "t_b": 1000}, "limit": 3}


def _call(capsys, store: Path, args: dict):
    return run_cli(capsys, "call", "temporal_reachability", json.dumps(args), "--store", store)


def _page(capsys, store: Path, args: dict) -> dict:
    ran = _call(capsys, store, args)
    assert ran.code == 0, ran.err
    return ran.json["payload"]


def test_forged_and_stale_cursors_are_refused(capsys, store):
    args = dict(REACH)
    first = _page(capsys, store, args)
    assert first["truncated"] and first["cursor"] and first["rows_total"] == 11
    second = _page(capsys, store, {**args, "cursor": first["cursor"]})
    assert second["rows"] and second["rows"] != first["rows"]
    _, tag = first["cursor"].split(".")
    for forged in (
        f"99999.{tag}",
        f"6.{tag}",
        f"0.{tag}",
        first["cursor"] + "0",
        "3",
        "3.",
        "-3." + tag,
        "٣." + tag,
    ):
        ran = _call(capsys, store, {**args, "cursor": forged})
        assert ran.error["error"] == "E_INVALID_ARG", forged
    other = _call(capsys, store, {**args, "src": "n1", "cursor": first["cursor"]})
    assert other.error["error"] == "E_INVALID_ARG"  # another query's cursor
    ops = store.parent / "more.jsonl"
    ops.write_text('{"op": "assert_node", "uid": "n99", "vt_s": 0}\n')
    assert run_cli(capsys, "write", "--store", store, ops).code == 0
    stale = _call(capsys, store, {**args, "cursor": first["cursor"]})
    assert stale.error["error"] == "E_INVALID_ARG"  # issued before the store changed


def test_a_cursor_pinned_to_a_past_tt_survives_later_writes(capsys, store):
    from tgms.engine.store import Store

    with Store.open(store, read_only=True) as s:
        tt = int(s.backend.get_meta()["last_tt"])
    args = {**REACH, "as_of_tt": tt}
    first = _page(capsys, store, args)
    ops = store.parent / "more.jsonl"
    ops.write_text('{"op": "assert_node", "uid": "n99", "vt_s": 0}\n')
    assert run_cli(capsys, "write", "--store", store, ops).code == 0
    assert _page(capsys, store, {**args, "cursor": first["cursor"]})["rows"]  # a pinned result is immutable


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-1", "-0.5", "abc"])
@pytest.mark.parametrize("command", ["call", "plan verify", "plan run"])
def test_bad_budgets_are_invalid_args(capsys, tmp_path, store_dir, command, value):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(raw_plan(step("s1", "resolve_entities", {"query": "n"}), answer="s1.rows")))
    argv = {
        "call": ["call", "resolve_entities", '{"query": "n"}', "--store", store_dir],
        "plan verify": ["plan", "verify", plan, "--store", store_dir],
        "plan run": ["plan", "run", plan, "--store", store_dir],
    }[command]
    ran = run_cli(capsys, *argv, "--budget-s", value)
    assert (ran.code, ran.error["error"]) == (2, "E_INVALID_ARG"), ran.err


@pytest.mark.parametrize("t", ["1.0", "1e3", "1.5", "1E+3", "-0.0"])
def test_float_times_are_refused_in_ops_like_fractions(capsys, tmp_path, store, t):
    before = log_bytes(store)
    ops = tmp_path / "ops.jsonl"
    ops.write_text(f'{{"op": "assert_node", "uid": "x", "vt_s": {t}}}\n')
    ran = run_cli(capsys, "write", "--store", store, ops)
    assert ran.error["error"] == "E_INVALID_ARG"
    assert ran.error["message"] == "vt_s must be an integer number of microseconds"
    assert log_bytes(store) == before


@pytest.mark.parametrize("t", ["1.0", "1e3", "1.5"])
def test_float_times_are_refused_in_operator_args_like_fractions(capsys, store_dir, t):
    ran = run_cli(
        capsys, "call", "snapshot_subgraph", f'{{"seeds": ["n1"], "t_valid": {t}}}', "--store", store_dir
    )
    assert ran.error["error"] == "E_SCHEMA" and ran.error["details"]["field"] == "t_valid"


# -- messages ----------------------------------------------------------------------------------------
def test_a_failed_line_names_its_number_and_what_was_committed(capsys, tmp_path, store):
    ops = tmp_path / "ops.jsonl"
    ops.write_text(
        '{"op": "assert_node", "uid": "a1", "vt_s": 0}\n\n'
        '{"op": "assert_node", "uid": "a2", "vt_s": 0}\n'
        '{"op": "retract", "ref": {"uid": "nobody"}, "t": 5}\n'
        '{"op": "assert_node", "uid": "a3", "vt_s": 0}\n'
    )
    ran = run_cli(capsys, "write", "--store", store, ops)
    err = ran.error
    assert err["error"] == "E_NOT_FOUND"
    assert err["details"]["line"] == 4 and err["details"]["committed_batches"] == 2
    assert "line 4" in err["message"] and "2 batch(es) on earlier lines were committed" in err["message"]
    from tgms.engine.store import Store

    with Store.open(store, read_only=True) as s:
        assert {"a1", "a2"} <= set(s.entity_ids()) and "a3" not in s.entity_ids()


def test_a_missing_store_is_not_found(capsys, tmp_path):
    for argv in (["stats"], ["digest"], ["check"], ["call", "ops_list_does_not_matter_here"]):
        if argv[0] == "call":
            argv = ["call", "resolve_entities", '{"query": "x"}']
        ran = run_cli(capsys, *argv, "--store", tmp_path / "nowhere")
        assert ran.error["error"] == "E_NOT_FOUND", argv


def test_argparse_errors_are_structured(capsys):
    for argv in (["nope"], ["stats"], ["call"], ["ingest", "--dataset", "x", "--store", "s"], []):
        ran = run_cli(capsys, *argv)
        assert ran.code == 2 and ran.error["error"] in ("E_SCHEMA", "E_INVALID_ARG"), argv
        assert "usage" in ran.error["details"]


def test_quickstart_refuses_to_delete_the_current_directory(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep").write_text("x")
    for out in ("", ".", "..", str(tmp_path)):
        ran = run_cli(capsys, "quickstart", "--out", out)
        assert ran.error["error"] == "E_INVALID_ARG"
    assert (tmp_path / "keep").exists()


def test_store_digest_unchanged_by_all_of_the_above(store_dir):
    assert store_digest(store_dir)  # the module's shared store still opens and reads
