"""A seeded generator of malformed command lines for every ``tgms`` command.

Each case is ``(command, argv, may_report)``: ``argv`` must be refused. ``may_report`` marks the commands
whose contract for a well-formed but invalid input is a report on stdout with exit 1 instead of an error
(``plan verify`` and ``plan run`` print the violations). Inputs cover files (missing, directories,
encodings, truncation, symlink loops, NUL bytes), nesting, sizes, numbers (floats in integer fields, huge
and negative values, NaN/Infinity tokens, 1e400), cursors (forged offsets, other queries', junk),
permissions (read-only stores) and option values.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.pipeline.cli._malformed_tables import (
    BAD_VALUES,
    BASE_ARGS,
    LOCAL_CASES,
    MODEL_CASES,
    NUMBER_TOKENS,
    SERVE_CASES,
    W,
)

Case = tuple[str, list[str], bool]


def nested(depth: int, rng: random.Random) -> str:
    """JSON text nested ``depth`` levels (objects and arrays mixed)."""
    opens, closes = [], []
    for _ in range(depth):
        if rng.random() < 0.5:
            opens.append('{"k":')
            closes.append("}")
        else:
            opens.append("[")
            closes.append("]")
    return "".join(opens) + "1" + "".join(reversed(closes))


def deep_depth(rng: random.Random) -> int:
    return rng.choice([65, 70, 100, 200, 500, 1000, 3000, 20_000, 200_000])


class Generator:
    def __init__(
        self, seed: int, work: Path, store: Path, read_only_store: Path, damaged_store: Path
    ) -> None:
        self.rng = random.Random(seed)
        self.work = work
        self.store = str(store)
        self.ro_store = str(read_only_store)
        self.damaged = str(damaged_store)
        self.n = 0
        self.bad_files = self._bad_files()

    # -- files ------------------------------------------------------------------------------------------
    def file(self, data: bytes | str, suffix: str = ".json") -> str:
        self.n += 1
        path = self.work / f"f{self.n:05d}{suffix}"
        path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        return str(path)

    def _bad_files(self) -> list[str]:
        rng = self.rng
        out = [str(self.work / "does-not-exist.json"), str(self.work), "a\x00b.json"]
        (self.work / "a-dir").mkdir(exist_ok=True)
        out.append(str(self.work / "a-dir"))
        loop = self.work / "loop"
        if not loop.is_symlink():
            os.symlink(loop, loop)  # a symlink to itself: ELOOP
        out.append(str(loop))
        out.append(self.file(b""))
        out.append(self.file(b"   \n\t\n"))
        for _ in range(6):
            out.append(self.file(bytes(rng.randrange(128, 256) for _ in range(rng.randrange(1, 200)))))
        out.append(self.file('{"plan_id": "caf\xe9"}'.encode("latin-1")))
        out.append(self.file('{"steps": []}'.encode("utf-16")))
        out.append(self.file(b'{"a": "\xed\xa0\x80"}'))  # an encoded surrogate: not UTF-8
        out.append(self.file(b'{"a": 1}\x00\n'))
        out.append(self.file('{"a": "\\ud800"}'))
        out.append(self.file('{"a": '))
        out.append(self.file("[1, 2,]"))
        for token in NUMBER_TOKENS[:5]:
            out.append(self.file(f'{{"a": {token}}}'))
        for _ in range(4):
            out.append(self.file(nested(deep_depth(rng), rng)))
        return out

    # -- JSON values --------------------------------------------------------------------------------------
    def junk_value(self) -> Any:
        return self.rng.choice([None, 0, -1, 1.5, "", "x", [], {}, [None], {"": None}, True, "\ud800", 2**80])

    def bad_args(self) -> tuple[str, str]:
        """(operator, JSON-ARGS text) that must be refused."""
        rng = self.rng
        op = rng.choice(sorted(BASE_ARGS))
        base, types = BASE_ARGS[op]
        args = dict(base)
        kind = rng.randrange(9)
        if kind == 0:
            args["no_such_field_" + str(rng.randrange(100))] = self.junk_value()
        elif kind == 1:
            field = rng.choice(sorted(types))
            args[field] = rng.choice(BAD_VALUES[types[field]])
            if args[field] is None and field not in base:
                args[field] = "wrong"
        elif kind == 2:
            missing = rng.choice(sorted(base))
            del args[missing]
        elif kind == 3:
            return op, json.dumps(args)[:-1] + f', "x": {rng.choice(NUMBER_TOKENS)}}}'
        elif kind == 4:
            return op, json.dumps(args)[:-1] + f', "props": {nested(deep_depth(rng), rng)}}}'
        elif kind == 5:
            return op, rng.choice(["[]", "1", '"x"', "null", "{", "", "{'a': 1}", json.dumps(args)[:-1]])
        elif kind == 6:
            args["cursor"] = self.bad_cursor()
        elif kind == 7:
            args["limit"] = rng.choice(BAD_VALUES["limit"])
        else:
            field = rng.choice(sorted(types))
            args[field] = rng.choice([1.0, 1e3, 2.0**53, -0.0]) if types[field] in ("time", "limit") else 1.25
        return op, json.dumps(args, allow_nan=True)

    def bad_cursor(self) -> Any:
        rng = self.rng
        tag = "".join(rng.choice("0123456789abcdef") for _ in range(16))
        return rng.choice(
            [
                f"{rng.randrange(1, 10**6)}.{tag}",
                f"99999.{tag}",
                str(rng.randrange(10**6)),
                f"-{rng.randrange(10)}.{tag}",
                "",
                ".",
                "٣." + tag,
                "1" * 40 + "." + tag,
                5,
                [],
            ]
        )

    def bad_op(self) -> str:
        """One op line that the parser refuses (never one that is logged and then fails)."""
        rng = self.rng
        node = {"op": "assert_node", "uid": "fz", "vt_s": 0}
        edge = {"op": "assert_edge", "src": "n1", "dst": "n2", "rel_type": "MSG", "vt_s": 0}
        retract = {"op": "retract", "ref": {"uid": "n1"}, "t": 5}
        op = dict(rng.choice([node, edge, retract]))
        kind = rng.randrange(10)
        if kind == 0:
            t_field = "t" if op["op"] == "retract" else "vt_s"
            op[t_field] = rng.choice(BAD_VALUES["time"])
        elif kind == 1:
            op["unknown_" + str(rng.randrange(10))] = 1
        elif kind == 2:
            del op[rng.choice([k for k in op if k != "op"])]
        elif kind == 3:
            op["op"] = rng.choice(["assert", "", 5, None, "ASSERT_NODE", "drop_table"])
        elif kind == 4:
            text = json.dumps(op)
            return text[:-1] + f', "props": {nested(deep_depth(rng), rng)}}}'
        elif kind == 5:
            op["props"] = {"blob": "x" * rng.choice([70_000, 200_000])}
        elif kind == 6:
            if op["op"] == "retract":
                op["t"] = rng.choice([-1, 1.5, "7", None, [], 2**62])
            else:
                op["uid" if op["op"] == "assert_node" else "rel_type"] = rng.choice(
                    ["", "u" * 1025, 7, [], None]
                )
        elif kind == 7:
            op["props"] = rng.choice([[], "x", 5, True])
            if op["op"] == "retract":
                op["ref"] = rng.choice([{}, {"uid": 5}, {"uid": "n1", "vid": 2}, "n1", {"vid": 1.5}])
        elif kind == 8:
            return json.dumps(op)[:-1] + f', "vt_e": {rng.choice(NUMBER_TOKENS)}}}'
        else:
            if op["op"] == "retract":
                op["t"] = -1
            else:
                op["vt_e"] = op["vt_s"]  # empty interval
        return json.dumps(op)

    # -- the cases --------------------------------------------------------------------------------------
    def store_arg(self) -> str:
        return self.rng.choice(
            [
                str(self.work / "no-store"),
                str(self.work / "a-dir"),
                self.bad_files[6],  # a file, not a directory
                self.damaged,
                "",
                "x\x00y",
            ]
        )

    def cases(self) -> Iterator[Case]:
        yield from self._write(230)
        yield from self._call(260)
        yield from self._plan(150)
        yield from self._files(("replay",), 30)
        yield from self._verify_answer(70)
        yield from self._tasks(70)
        yield from self._simple(160)
        yield from self._trace_view(60)  # last: the cases above keep their seeded sequence

    def _write(self, n: int) -> Iterator[Case]:
        rng = self.rng
        valid = '{"op": "assert_node", "uid": "ok%d", "vt_s": 0}'
        for i in range(n):
            if i % 10 == 0:
                path = rng.choice(self.bad_files)
            else:
                lines = [valid % k for k in range(rng.randrange(4))]
                lines.insert(rng.randrange(len(lines) + 1), self.bad_op())
                path = self.file("\n".join(lines) + rng.choice(["\n", ""]), ".jsonl")
            store = self.ro_store if i % 23 == 0 else (self.store_arg() if i % 17 == 0 else self.store)
            extra = ["--progress-every", rng.choice(["-1", "x", "1.5", ""])] if i % 29 == 0 else []
            yield "write", ["write", "--store", store, path, *extra], False

    def _call(self, n: int) -> Iterator[Case]:
        rng = self.rng
        for i in range(n):
            op, text = self.bad_args()
            store = self.store_arg() if i % 19 == 0 else self.store
            extra: list[str] = []
            if i % 7 == 0:
                op = rng.choice(sorted(BASE_ARGS))
                text = json.dumps(BASE_ARGS[op][0])
                extra = ["--budget-s", rng.choice(["nan", "-1", "inf", "x", "-inf", "1e999", ""])]
            elif i % 31 == 0:
                op = rng.choice(["nope", "", "ENTITY_HISTORY", "entity history"])
            yield "call", ["call", op, text, "--store", store, *extra], False

    def _plan_text(self) -> str:
        rng = self.rng
        step = {
            "id": "s1",
            "op": "temporal_reachability",
            "args": {"src": "n0", "window": W},
            "depends_on": [],
        }
        plan: dict[str, Any] = {"plan_id": "p", "question": "q n0", "steps": [step]}
        plan["answer_spec"] = {"kind": "count", "from": "s1.rows_total"}
        kind = rng.randrange(8)
        if kind == 0:
            return json.dumps(plan)[:-1] + f', "x": {nested(deep_depth(rng), rng)}}}'
        if kind == 1:
            op, text = self.bad_args()
            while '"cursor"' in text:  # a cursor is authenticated when the step runs, not statically
                op, text = self.bad_args()
            return json.dumps({**plan, "steps": [{**step, "op": op, "args": "HOLE"}]}).replace(
                '"HOLE"', text or "1"
            )
        if kind == 2:
            return json.dumps(
                {**plan, "steps": [dict(step, id=f"s{i}") for i in range(rng.choice([13, 50]))]}
            )
        if kind == 3:
            return json.dumps({**plan, "steps": self.junk_value()})
        if kind == 4:
            return json.dumps({**plan, "steps": [{**step, "depends_on": ["s1"]}]})  # a cycle
        if kind == 5:
            return json.dumps(self.junk_value())
        if kind == 6:
            return json.dumps({**plan, "answer_spec": {"kind": "entity_set", "from": "s9.rows"}})
        step2 = {
            **step,
            "args": {"src": {"$ref": rng.choice(["s0.rows", "s1", "", "s1.rows[*"])}, "window": W},
        }
        return json.dumps({**plan, "steps": [step2]})

    def _plan(self, n: int) -> Iterator[Case]:
        rng = self.rng
        for i in range(n):
            sub = "verify" if i % 2 else "run"
            path = rng.choice(self.bad_files) if i % 5 == 0 else self.file(self._plan_text())
            store = self.store_arg() if i % 13 == 0 else self.store
            extra: list[str] = []
            if i % 6 == 0:
                extra = ["--budget-s", rng.choice(["nan", "-2", "inf", "abc"])]
            elif i % 11 == 0:
                extra = [rng.choice(["--without", "--task-uids"]), rng.choice(["nope", ""])]
                if extra == ["--task-uids", "nope"]:
                    extra = ["--without", "nope"]
            elif i % 17 == 0 and sub == "run":
                extra = ["--plan-wall-s", rng.choice(["nan", "-1", "0x", "inf"])]
            yield f"plan {sub}", ["plan", sub, path, "--store", store, *extra], True

    def _files(self, commands: tuple[str, ...], n: int) -> Iterator[Case]:
        for i in range(n):
            path = self.bad_files[i % len(self.bad_files)]
            if i % 5 == 4:
                path = self.file(b"x" * self.rng.randrange(1, 5000))
            yield "replay", ["replay", path, "--store", str(self.work / f"replayed-{i}")], False

    def _verify_answer(self, n: int) -> Iterator[Case]:
        rng = self.rng
        good_answer = {"text": "x", "claims": []}
        for i in range(n):
            kind = i % 4
            if kind == 0:
                answer, trace = rng.choice(self.bad_files), self.file(json.dumps({"steps": []}))
            elif kind == 1:
                answer, trace = self.file(json.dumps(good_answer)), rng.choice(self.bad_files)
            elif kind == 2:
                bad = rng.choice(
                    [
                        {"text": 5},
                        {"claims": [{"id": 1}]},
                        {"claims": "x"},
                        {"text": "x", "claims": [{"id": "c1", "type": "count", "value": "x", "evidence": 5}]},
                        [],
                        {"text": "x", "answer": {"kind": "nope"}},
                    ]
                )
                answer, trace = self.file(json.dumps(bad)), self.file(json.dumps({"steps": []}))
            else:
                bad_trace = rng.choice(
                    [
                        {"steps": [1]},
                        {"steps": [{"id": "s1"}]},
                        {"steps": [{"id": "s1", "op": "x", "depends_on": [1]}]},
                        {"steps": [], "envelopes": []},
                        {"steps": [], "envelopes": {"x": 5}},
                        {"steps": [{"id": "s1", "op": "x", "depends_on": [], "rows": "many"}]},
                        {"trace": {"steps": "x"}},
                        {"steps": [], "store_digest": 5},
                    ]
                )
                answer, trace = self.file(json.dumps(good_answer)), self.file(json.dumps(bad_trace))
            store = self.store_arg() if i % 9 == 0 else self.store
            yield "verify-answer", ["verify-answer", answer, "--trace", trace, "--store", store], False

    def _trace_view(self, n: int) -> Iterator[Case]:
        """``tgms trace view``: bad documents, and a good one with bad options (nothing may be written)."""
        rng = self.rng
        bad_docs: list[Any] = [
            {},
            [],
            {"steps": [1], "plan_digest": "x"},
            {"steps": [{"id": "s1", "op": "x", "depends_on": "s0"}], "plan_digest": "x"},
            {"verification": {}, "trace": "x", "answer": None},
            {"verification": {}, "trace": {"steps": [{"id": "s1"}]}, "answer": None},
            {"verification": {}, "trace": None, "answer": {"claims": "x"}},
            {"question": "q", "record": {}, "plan": None, "trace": None},
            {"question": "q", "record": {"task_id": 5}, "trace": {"steps": "x"}},
            {"question": 5, "record": {}},
        ]
        good = self.file(json.dumps({"verification": {}, "trace": None, "answer": None}))
        for i in range(n):
            kind = i % 3
            if kind == 0:
                argv = [rng.choice(self.bad_files)]
            elif kind == 1:
                argv = [self.file(json.dumps(rng.choice(bad_docs)))]
            else:
                argv = [
                    good,
                    *rng.choice(
                        [
                            ["--out", str(self.work)],
                            ["--out", str(self.work / "nodir" / "p.html")],
                            ["--out", good],
                            ["--store", str(self.work / "no-store-here")],
                            ["--answer", rng.choice(self.bad_files)],
                            ["--answer", self.file('{"claims": [{"id": 1}]}')],
                            ["--bogus"],
                        ]
                    ),
                ]
            yield "trace", ["trace", "view", *argv], False
        yield "trace", ["trace"], False
        yield "trace", ["trace", "frobnicate", good], False

    def _tasks(self, n: int) -> Iterator[Case]:
        rng = self.rng
        for i in range(n):
            if i % 3 == 0:
                bad = rng.choice(
                    [
                        {},
                        {"dataset": "x", "seed": 0, "test_sha256": 5, "splits": {"dev": [], "test": []}},
                        {"dataset": "x", "seed": 0, "test_sha256": "a", "splits": {"dev": [{}], "test": []}},
                        {"dataset": "x", "seed": 0, "test_sha256": "a", "splits": []},
                        {
                            "dataset": "x",
                            "seed": 0,
                            "test_sha256": "a",
                            "splits": {"dev": [], "test": []},
                            "dropped": 3,
                        },
                    ]
                )
                path = self.file(json.dumps(bad))
            else:
                path = rng.choice(self.bad_files)
            if i % 2:
                yield "tasks stats", ["tasks", "stats", path, *(["--json"] if i % 4 == 1 else [])], False
            else:
                yield (
                    "mutations",
                    ["mutations", "--store", self.store, "--suite", path, "--out", str(self.work / "m")],
                    False,
                )
            if i % 5 == 0:
                argv = ["tasks", "generate", "--store", self.store, "--dataset", "collegemsg"]
                argv += rng.choice(
                    [
                        ["--seed", "x", "--out", str(self.work / "s.json")],
                        ["--out", str(self.work / "nodir" / "s.json")],
                        ["--out", str(self.work / "a-dir")],
                        ["--seed", "-1", "--out", str(self.work / "s.json")],
                    ]
                )
                yield "tasks generate", argv, False
                yield (
                    "tasks generate",
                    [
                        "tasks",
                        "generate",
                        "--store",
                        self.store_arg(),
                        "--dataset",
                        "collegemsg",
                        "--out",
                        str(self.work / "s2.json"),
                    ],
                    False,
                )

    def _simple(self, n: int) -> Iterator[Case]:
        rng = self.rng
        for i in range(n):
            kind = i % 8
            if kind == 0:
                cmd = rng.choice(["stats", "digest", "check"])
                extra = ["--repair"] if cmd == "check" and rng.random() < 0.5 else []
                yield (
                    cmd,
                    [cmd, "--store", self.store_arg(), *extra],
                    cmd == "check",
                )  # a damaged store: a report
            elif kind == 1:
                cmd = rng.choice(["ops", "schema"])
                yield cmd, [cmd, rng.choice(["extra", "--json", "--schemas --manual"])], False
            elif kind == 2:
                scales = rng.choice(["abc", "1e5,x", "nan", "-5", "1.5", "1e30", "0", "1e5;1e6", "inf"])
                yield "bench", ["bench", "ops", "--scales", scales, "--datasets", ""], False
            elif kind == 3:
                yield (
                    "bench",
                    ["bench", rng.choice(["ops", "peers"]), "--reps", rng.choice(["0", "-1", "x", "1.5"])],
                    False,
                )
                yield "bench", ["bench", "ops", "--datasets", rng.choice(["nope", "collegemsg,x"])], False
            elif kind == 4:
                argv = ["ingest", "--store", str(self.work / f"ingested-{i}")]
                argv += rng.choice(
                    [
                        ["--dataset", "nope"],
                        ["--dataset", "collegemsg", "--source", rng.choice(self.bad_files)],
                        ["--dataset", "synthetic", "--events", rng.choice(["-5", "0", "x", "1.5"])],
                        ["--dataset", "synthetic", "--nodes", rng.choice(["-5", "0", "1", "x"])],
                        ["--dataset", "collegemsg", "--backend", "oracle"],
                    ]
                )
                yield "ingest", argv, False
                if i % 40 == 4:  # loads the data set before it finds the store exists: a few only
                    yield "ingest", ["ingest", "--dataset", "collegemsg", "--store", self.store], False
            elif kind == 5:
                out = rng.choice(["", ".", "..", self.bad_files[6]])
                yield "quickstart", ["quickstart", "--out", out], False
                yield "quickstart", ["quickstart", "--backend", rng.choice(["nope", ""])], False
            elif kind == 6:
                argv = ["mutations", "--store", self.store, "--out", str(self.work / "m")]
                argv += rng.choice(
                    [["--per-class", "0"], ["--per-class", "x"], ["--seed", "-3"], ["--dataset", "x"]]
                )
                yield "mutations", argv, False
                yield "mutations", ["mutations", "--store", self.store, "--out", self.bad_files[6]], False
            else:
                # `tgms local`: refused before any server starts or any venv is provisioned
                yield "local", LOCAL_CASES[(i // 8) % len(LOCAL_CASES)], False
                serve = SERVE_CASES[(i // 8) % len(SERVE_CASES)]
                yield (
                    "serve",
                    [a.replace("{store}", self.store).replace("{work}", str(self.work)) for a in serve],
                    False,
                )
                # `tgms bundle`: refused before any store is built or replayed
                yield (
                    "bundle",
                    rng.choice(
                        [
                            ["bundle"],
                            ["bundle", "build", "--dataset", "nope", "--out", str(self.work / "b")],
                            ["bundle", "build", "--dataset", "collegemsg", "--seed", "-1", "--out", "x"],
                            ["bundle", "build", "--dataset", "collegemsg", "--out", self.bad_files[6]],
                            ["bundle", "verify", str(self.work / "no-bundle-here")],
                            ["bundle", "verify", self.bad_files[6]],
                            ["bundle", "frobnicate"],
                        ]
                    ),
                    False,
                )
                case = MODEL_CASES[(i // 8) % len(MODEL_CASES)]
                fill = {
                    "{store}": self.store,
                    "{suite}": self.bad_files[0],
                    "{out}": str(self.work / "rec.jsonl"),
                }
                yield case[0], [fill.get(a, a) for a in case], False
                yield (
                    "write",
                    [
                        "write",
                        "--store",
                        self.ro_store,
                        self.file('{"op": "assert_node", "uid": "ro", "vt_s": 0}\n', ".jsonl"),
                    ],
                    False,
                )
                yield (
                    rng.choice(["stats", "digest"]),
                    [rng.choice(["stats", "digest"]), "--store", self.store, "--bogus"],
                    False,
                )
