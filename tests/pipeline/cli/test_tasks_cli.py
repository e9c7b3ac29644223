"""``tgms tasks generate`` / ``tgms mutations`` on stores too small to draw from: a clear refusal or an
honest empty suite, never an internal error, and nothing written into a store that is refused."""

from __future__ import annotations

import json

from ._cli import log_bytes, run_cli


def _store(capsys, tmp_path, name: str, lines: list[str]):
    ops = tmp_path / f"{name}.jsonl"
    ops.write_text("\n".join(lines) + "\n")
    root = tmp_path / name
    assert run_cli(capsys, "write", "--store", root, ops, "--create").code == 0
    return root


def test_a_store_without_edge_events_is_refused_before_anything_is_written(capsys, tmp_path):
    root = _store(capsys, tmp_path, "nodes", ['{"op": "assert_node", "uid": "x", "vt_s": 3}'])
    before = log_bytes(root)
    for argv in (
        ["tasks", "generate", "--store", root, "--dataset", "collegemsg", "--out", tmp_path / "s.json"],
        ["mutations", "--store", root, "--out", tmp_path / "m"],
    ):
        ran = run_cli(capsys, *argv)
        assert ran.error["error"] == "E_INVALID_ARG" and "no edge events" in ran.error["message"], argv
    assert log_bytes(root) == before
    assert not (tmp_path / "s.json").exists()


def test_data_shorter_than_a_second_gives_an_empty_suite(capsys, tmp_path):
    root = _store(
        capsys,
        tmp_path,
        "tiny",
        [
            '[{"op": "assert_node", "uid": "a", "vt_s": 0}, {"op": "assert_node", "uid": "b", "vt_s": 0}]',
            '{"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "w", "vt_s": 0, "vt_e": 100}',
        ],
    )
    out = tmp_path / "s.json"
    ran = run_cli(
        capsys, "tasks", "generate", "--store", root, "--dataset", "collegemsg", "--out", out, "--no-probes"
    )
    assert ran.code == 0, ran.err
    suite = json.loads(out.read_text())
    assert suite["splits"]["dev"] == [] and suite["splits"]["test"] == []
