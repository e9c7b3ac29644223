"""SNAP loaders and event frames: real files, bad files, gzip, and the download path.

CollegeMsg ships in the package, so its cases run everywhere: from ``../shared/data`` when that folder is
beside the repository, else from the packaged copy (pinned to SNAP's file by its SHA-256). bitcoin-otc and
the email-Eu prefix exist only in ``../shared/data``: their cases skip, naming the file, without it."""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import http.server
import io
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tests.conftest import SHARED_DATA
from tgms.engine.errors import InvalidArgError, NotFoundError, SchemaError, TGMSError
from tgms.engine.ingest import snap
from tgms.engine.ingest.events import EventFrame, check_event_frame, concat_frames, make_table, props_text
from tgms.engine.ingest.snap import (
    cached_path,
    default_cache_dir,
    download,
    load_dataset,
    packaged_collegemsg,
    source_sha256,
)

DATA = SHARED_DATA
COLLEGE = DATA / "CollegeMsg.txt"
BITCOIN = DATA / "soc-sign-bitcoinotc.csv"
EMAIL = DATA / "email-Eu-core-temporal.prefix83k.txt"
#: SHA-256 of SNAP's CollegeMsg.txt (as ``../shared/data`` holds it; the bundle tests pin the same)
COLLEGE_SHA256 = "e00ba2415373dee52c00616065bcceaa4750e78de60d1855c76470600f10740f"


def shared(path: Path) -> Path:
    """A file of the shared test data (``../shared/data`` beside the repository); skip if it is absent."""
    if not path.is_file():
        pytest.skip(
            f"needs {path.name} from the shared test data, not in {DATA} (../shared/data or TGMS_SHARED_DATA)"
        )
    return path


def college_bytes() -> bytes:
    """CollegeMsg as SNAP ships it: the shared file, or else the copy packaged with the engine."""
    return COLLEGE.read_bytes() if COLLEGE.is_file() else gzip.decompress(packaged_collegemsg().read_bytes())


@pytest.fixture(scope="module")
def college() -> EventFrame:
    return load_dataset("collegemsg", COLLEGE if COLLEGE.is_file() else None)


@pytest.fixture(scope="module")
def bitcoin() -> EventFrame:
    return load_dataset("bitcoin-otc", shared(BITCOIN))


# ---- the real files ---------------------------------------------------------------------------------------
def test_collegemsg_counts_and_first_row(college: EventFrame) -> None:
    assert (college.num_rows, college.n_nodes()) == (59_835, 1_899)
    assert (college.rel_type, college.label, college.name) == ("msg", "user", "collegemsg")
    assert college.table.slice(0, 1).to_pylist() == [
        {"src": "n1", "dst": "n2", "t": 1082040961000000, "t_end": None, "props": None}
    ]
    assert college.is_instantaneous
    assert college.check() is None


def test_collegemsg_keeps_file_order_and_duplicates(college: EventFrame) -> None:
    raw = np.loadtxt(io.BytesIO(college_bytes()), dtype=np.int64)
    assert np.array_equal(college.table.column("t").to_numpy(), raw[:, 2] * 1_000_000)
    assert college.table.column("src").to_pylist() == [f"n{x}" for x in raw[:, 0]]
    assert college.table.column("dst").to_pylist() == [f"n{x}" for x in raw[:, 1]]
    groups = college.table.group_by(["src", "dst", "t"]).aggregate([([], "count_all")])
    repeated = groups.filter(pc.greater(groups.column("count_all"), 1))
    assert repeated.num_rows == 36  # 36 distinct rows occur more than once ...
    assert college.num_rows - groups.num_rows == 37  # ... one of them three times: all copies are kept


def test_packaged_collegemsg_is_snap_s_file(college: EventFrame) -> None:
    assert source_sha256(packaged_collegemsg()) == COLLEGE_SHA256
    assert hashlib.sha256(college_bytes()).hexdigest() == COLLEGE_SHA256  # what the other cases read
    packaged = load_dataset("collegemsg")
    assert packaged.source.endswith("CollegeMsg.txt.gz")
    assert packaged.digest() == college.digest()
    assert packaged.table.equals(college.table)


def test_the_shared_collegemsg_is_the_packaged_one() -> None:
    assert gzip.decompress(packaged_collegemsg().read_bytes()) == shared(COLLEGE).read_bytes()


def test_collegemsg_loads_fast() -> None:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        frame = load_dataset("collegemsg")
        best = min(best, time.perf_counter() - t0)
    assert frame.num_rows == 59_835
    assert best < 0.5, f"CollegeMsg took {best:.3f}s"


def test_bitcoin_otc_counts_and_ratings(bitcoin: EventFrame) -> None:
    assert (bitcoin.num_rows, bitcoin.n_nodes()) == (35_592, 5_881)
    assert (bitcoin.rel_type, bitcoin.name) == ("rates", "bitcoin-otc")
    first = bitcoin.table.slice(0, 1).to_pylist()[0]
    assert first == {"src": "n6", "dst": "n2", "t": 1289241912000000, "t_end": None, "props": '{"rating":4}'}
    assert bitcoin.table.column("props").null_count == 0
    raw = np.loadtxt(BITCOIN, delimiter=",", dtype=np.int64)
    ratings = [int(p[len('{"rating":') : -1]) for p in bitcoin.table.column("props").to_pylist()]
    assert ratings == raw[:, 2].tolist()
    assert min(ratings) == -10 and max(ratings) == 10
    assert bitcoin.check() is None


def test_email_eu_prefix_counts() -> None:
    frame = load_dataset("email-eu", shared(EMAIL))
    assert (frame.num_rows, frame.n_nodes()) == (83_083, 816)
    assert frame.table.slice(0, 2).to_pylist() == [
        {"src": "n1", "dst": "n2", "t": 0, "t_end": None, "props": None},
        {"src": "n3", "dst": "n4", "t": 2797000000, "t_end": None, "props": None},
    ]
    raw = np.loadtxt(EMAIL, dtype=np.int64)
    assert frame.time_extent() == (int(raw[:, 2].min()) * 10**6, int(raw[:, 2].max()) * 10**6 + 1)
    assert frame.source == str(EMAIL)


def test_gzip_input_detected_by_content(tmp_path: Path, bitcoin: EventFrame) -> None:
    gz = tmp_path / "ratings.data"  # no .gz suffix: detection is by magic bytes
    gz.write_bytes(gzip.compress(BITCOIN.read_bytes()))
    assert load_dataset("bitcoin-otc", gz).digest() == bitcoin.digest()
    assert load_dataset("bitcoin-otc", str(gz)).num_rows == 35_592


def test_names_and_aliases() -> None:
    assert snap.dataset_spec("CollegeMsg").name == "collegemsg"
    assert snap.dataset_spec("soc-sign-bitcoinotc").rel_type == "rates"
    with pytest.raises(NotFoundError) as exc:
        load_dataset("nope", COLLEGE)
    assert exc.value.details["known"] == ["bitcoin-otc", "collegemsg", "email-eu"]


# ---- malformed files --------------------------------------------------------------------------------------
BAD_FILES = [
    ("collegemsg", "1 2 3\n4 5\n", SchemaError, 2, "expected 3 columns, got 2"),
    ("collegemsg", "1 2 3\n4 5 6 7\n", SchemaError, 2, "expected 3 columns, got 4"),
    ("collegemsg", "1 2 3\nx 5 6\n", SchemaError, 2, "source id 'x' is not an integer"),
    ("collegemsg", "1 2 3\n4 5.5 6\n", SchemaError, 2, "target id '5.5' is not an integer"),
    ("collegemsg", "1 2 3\n4 5 6\n7 8 abc\n", SchemaError, 3, "time 'abc' is not a number"),
    ("collegemsg", "1 2 3\n7 8 9.5\n", SchemaError, 2, "not an integer number of seconds"),
    ("collegemsg", "1 2 3\n4 5 -7\n", InvalidArgError, 2, "time -7 is negative"),
    ("collegemsg", "1 -2 3\n", InvalidArgError, 1, "target id -2 is negative"),
    ("collegemsg", "1 99999999999999999999 3\n", InvalidArgError, 1, "is too large"),
    ("collegemsg", "", SchemaError, 1, "empty"),
    ("collegemsg", "\n\n# only a comment\n", SchemaError, 3, "empty"),
    ("collegemsg", "# header\n1 2 3\n\n4 5\n", SchemaError, 4, "expected 3 columns, got 2"),
    ("email-eu", "1 2 0\n3 4 99999999999999\n", InvalidArgError, 2, "beyond the representable range"),
    ("bitcoin-otc", "1,2,3,4\n1,2,x,5\n", SchemaError, 2, "rating 'x' is not a number"),
    ("bitcoin-otc", "1,2,3,4\n1,2,11,5\n", InvalidArgError, 2, "outside [-10, 10]"),
    ("bitcoin-otc", "1,2,3,4\n1,2,nan,5\n", InvalidArgError, 2, "outside [-10, 10]"),
    ("bitcoin-otc", "1,2,3\n", SchemaError, 1, "expected 4 columns, got 3"),
    ("bitcoin-otc", "1 2 3 4\n", SchemaError, 1, "expected 4 columns, got 1"),
]


@pytest.mark.parametrize(("name", "content", "cls", "line", "problem"), BAD_FILES)
def test_bad_file_structured_error(
    tmp_path: Path, name: str, content: str, cls: type[TGMSError], line: int, problem: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(cls) as exc:
        load_dataset(name, path)
    err = exc.value
    assert type(err) is cls
    assert err.details["file"] == str(path)
    assert err.details["line"] == line
    assert problem in err.details["problem"]
    assert f"{path}:{line}:" in err.message
    assert err.to_dict()["error"] == cls.code


def test_bad_line_found_in_large_gz_file(tmp_path: Path) -> None:
    lines = college_bytes().decode().splitlines()
    lines[41_000] = "17 18 19 20"
    path = tmp_path / "big.txt.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(SchemaError) as exc:
        load_dataset("collegemsg", path)
    assert exc.value.details["line"] == 41_001


def test_irregular_whitespace_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "ws.txt"
    path.write_text("1\t2\t30\r\n  4  5   60 \n")
    frame = load_dataset("collegemsg", path)
    assert frame.table.to_pydict() == {
        "src": ["n1", "n4"],
        "dst": ["n2", "n5"],
        "t": [30_000_000, 60_000_000],
        "t_end": [None, None],
        "props": [None, None],
    }


def test_missing_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as exc:
        load_dataset("collegemsg", tmp_path / "absent.txt")
    assert exc.value.details["file"] == str(tmp_path / "absent.txt")
    bad_gz = tmp_path / "bad.txt.gz"
    bad_gz.write_bytes(b"\x1f\x8b" + b"not really gzip" * 10)
    with pytest.raises(SchemaError) as exc2:
        load_dataset("collegemsg", bad_gz)
    assert exc2.value.details["problem"] == "bad gzip"


# ---- download ---------------------------------------------------------------------------------------------
class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        super().do_GET()


@contextlib.contextmanager
def _serve(root: Path) -> Iterator[tuple[str, list[str]]]:
    handler = type("H", (_Handler,), {"requests": []})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", handler.requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture()
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str], Path]]:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    root = tmp_path / "www"
    root.mkdir()
    shutil.copy(packaged_collegemsg(), root / "CollegeMsg.txt.gz")
    if EMAIL.is_file():  # only test_download_of_email_eu needs it
        (root / "email-Eu-core-temporal.txt.gz").write_bytes(gzip.compress(EMAIL.read_bytes()))
    with _serve(root) as (url, requests):
        monkeypatch.setenv("TGMS_SNAP_BASE_URL", url)
        yield url, requests, root


def test_download_into_cache_dir(served: tuple[str, list[str], Path], tmp_path: Path) -> None:
    _, requests, _ = served
    cache = tmp_path / "cache"
    t0 = time.perf_counter()
    frame = load_dataset("collegemsg", cache_dir=cache)  # a named cache dir is used for CollegeMsg too
    assert time.perf_counter() - t0 < 30
    assert (frame.num_rows, frame.n_nodes()) == (59_835, 1_899)
    dest = cached_path("collegemsg", cache)
    assert dest == cache / "CollegeMsg.txt.gz" and dest.is_file()
    assert frame.source == str(dest)
    assert sorted(p.name for p in cache.iterdir()) == [dest.name]  # no temp files left behind
    assert requests == ["/CollegeMsg.txt.gz"]
    again = load_dataset("collegemsg", cache_dir=cache)
    assert again.digest() == frame.digest() == load_dataset("collegemsg").digest()
    assert len(requests) == 1  # served from the cache the second time


def test_download_of_email_eu(served: tuple[str, list[str], Path], tmp_path: Path) -> None:
    _, requests, _ = served
    shared(EMAIL)
    frame = load_dataset("email-eu", cache_dir=tmp_path / "cache")
    assert (frame.num_rows, frame.n_nodes()) == (83_083, 816)
    assert frame.source == str(tmp_path / "cache" / "email-Eu-core-temporal.txt.gz")
    assert requests == ["/email-Eu-core-temporal.txt.gz"]


def test_download_uses_tgms_cache_env(
    served: tuple[str, list[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TGMS_CACHE", str(tmp_path / "tc"))
    assert default_cache_dir() == tmp_path / "tc" / "datasets"
    path = download("collegemsg", timeout=10)
    assert path == tmp_path / "tc" / "datasets" / "CollegeMsg.txt.gz"
    assert path.read_bytes() == packaged_collegemsg().read_bytes()


def test_download_http_404_is_not_found(served: tuple[str, list[str], Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(NotFoundError) as exc:
        load_dataset("bitcoin-otc", cache_dir=cache)
    assert exc.value.details["status"] == 404
    assert "soc-sign-bitcoinotc.csv.gz" in exc.value.details["url"]
    assert list(cache.iterdir()) == []


def test_truncated_download_is_not_cached(served: tuple[str, list[str], Path], tmp_path: Path) -> None:
    _, _, root = served
    full = packaged_collegemsg().read_bytes()
    (root / "CollegeMsg.txt.gz").write_bytes(full[: len(full) // 2])
    cache = tmp_path / "cache"
    with pytest.raises(NotFoundError) as exc:
        download("collegemsg", cache, timeout=10)
    assert "incomplete or corrupt" in exc.value.message
    assert list(cache.iterdir()) == []


def test_offline_download_gives_structured_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("TGMS_SNAP_BASE_URL", f"http://127.0.0.1:{port}/data/")
    cache = tmp_path / "cache"
    t0 = time.perf_counter()
    with pytest.raises(NotFoundError) as exc:
        load_dataset("email-eu", cache_dir=cache)
    assert time.perf_counter() - t0 < 30
    err = exc.value.to_dict()
    assert err["error"] == "E_NOT_FOUND"
    assert err["details"]["url"] == f"http://127.0.0.1:{port}/data/email-Eu-core-temporal.txt.gz"
    assert str(cache / "email-Eu-core-temporal.txt.gz") in err["details"]["hint"]
    assert list(cache.iterdir()) == []


# ---- EventFrame -------------------------------------------------------------------------------------------
def test_event_frame_validator_names_row_and_column() -> None:
    good = make_table(["a", "b"], ["b", "c"], [5, 3], [None, 10], [None, props_text({"x": 1.5, "a": [1]})])
    assert EventFrame(good, "follows").check() is None
    cases = [
        (make_table(["a", "b"], ["b", ""], [1, 2]), SchemaError, "dst", 1),
        (make_table(["a", None], ["b", "c"], [1, 2]), SchemaError, "src", 1),
        (make_table(["a", "b"], ["b", "c"], [1, -2]), InvalidArgError, "t", 1),
        (make_table(["a"], ["b"], [5], [5]), InvalidArgError, "t_end", 0),
        (make_table(["a"], ["b"], [5], None, ['{"b":1,"a":2}']), SchemaError, "props", 0),
        (make_table(["a"], ["b"], [5], None, ['{"a":NaN}']), SchemaError, "props", 0),
        (make_table(["a"], ["b"], [5], None, ["[1]"]), SchemaError, "props", 0),
        (make_table(["a"], ["b"], [5], None, ["{}"]), SchemaError, "props", 0),
        (make_table(["a"], ["b"], [5], None, ['{"a":0.1234567891}']), SchemaError, "props", 0),
    ]
    for table, cls, column, row in cases:
        err = check_event_frame(EventFrame(table, "msg"))
        assert type(err) is cls, (column, err)
        assert (err.details["column"], err.details["row"]) == (column, row)
        with pytest.raises(cls):
            EventFrame(table, "msg").validate()
    with pytest.raises(SchemaError):
        EventFrame(pa.table({"src": ["a"], "dst": ["b"], "t": [1]}), "msg")
    with pytest.raises(SchemaError):
        EventFrame(good.set_column(2, "t", pa.array([1.0, 2.0])), "msg")
    with pytest.raises(SchemaError):
        EventFrame(good, "")
    with pytest.raises(InvalidArgError):
        props_text({"x": float("nan")})
    assert props_text({"b": 1.0, "a": 0.1 + 0.2}) == '{"a":0.3,"b":1}' and props_text({}) is None


def test_event_frame_chunks_and_digest(college: EventFrame) -> None:
    parts = list(college.chunks(10_000))
    assert [p.num_rows for p in parts] == [10_000] * 5 + [9_835]
    assert all(p.rel_type == "msg" and p.name == "collegemsg" for p in parts)
    assert concat_frames(parts).digest() == college.digest()
    assert parts[1].table.slice(0, 1).to_pylist() == college.table.slice(10_000, 1).to_pylist()
    other = EventFrame(college.table.slice(1), "msg", name="collegemsg")
    assert other.digest() != college.digest()
    with pytest.raises(InvalidArgError):
        next(college.chunks(0))
    assert college.node_uids()[:4] == ["n1", "n2", "n3", "n4"]
    assert len(college.node_uids()) == 1_899
    assert pc.count_distinct(college.table.column("src")).as_py() <= 1_899
