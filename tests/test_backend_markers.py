"""The test suite's backend machinery (tests/conftest.py): one list of backends, skips only for a driver
that is not installed, and ``@pytest.mark.notimpl(backend)`` as a strict per-backend xfail."""

from __future__ import annotations

import pytest

from tests import conftest
from tgms.engine.errors import NotFoundError
from tgms.engine.store.backends import BACKENDS

pytest_plugins = ["pytester"]


def _not_found_from(import_error: ImportError) -> NotFoundError:
    try:
        try:
            raise import_error
        except ImportError as exc:
            raise NotFoundError("the backend needs an extra") from exc
    except NotFoundError as wrapped:
        return wrapped


def test_the_backends_are_listed_once() -> None:
    assert conftest.BACKENDS is BACKENDS


def test_only_an_absent_driver_package_is_a_reason_to_skip() -> None:
    absent = _not_found_from(ModuleNotFoundError("no kuzu", name="no_such_driver_pkg_tgms"))
    assert conftest._missing_driver(absent) == "no_such_driver_pkg_tgms"
    # an adapter module of ours failing to import, or an installed driver failing inside: real failures
    assert (
        conftest._missing_driver(_not_found_from(ImportError("x", name="tgms.engine.store.backends.x")))
        is None
    )
    assert conftest._missing_driver(_not_found_from(ImportError("cannot import name", name="numpy"))) is None
    assert conftest._missing_driver(NotFoundError("no cause")) is None


def test_notimpl_is_a_strict_xfail_on_the_named_backends(pytester: pytest.Pytester) -> None:
    pytest.importorskip("kuzu")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.notimpl("kuzu", reason="not written yet", raises=NotImplementedError)
        def test_fixture_form(backend):
            if backend == "kuzu":
                raise NotImplementedError

        @pytest.mark.notimpl(["kuzu"], reason="implemented meanwhile")
        def test_stale_marker(backend):
            pass

        @pytest.mark.parametrize("backend", ["duckdb", "kuzu"])
        @pytest.mark.notimpl("kuzu")
        def test_parametrize_form(backend):
            assert backend != "kuzu"

        @pytest.mark.notimpl("kuzu", raises=NotImplementedError)
        def test_wrong_exception(backend):
            assert backend != "kuzu"
        """
    )
    result = pytester.runpytest("-p", "tests.conftest", "-p", "no:randomly", "-p", "no:xdist", "-q")
    # duckdb runs every test normally; kuzu: two expected failures, a stale marker (XPASS strict) and a
    # failure of the wrong kind are both reported as failures
    result.assert_outcomes(passed=4, xfailed=2, failed=2)
    result.stdout.fnmatch_lines(["*XPASS(strict)*kuzu: implemented meanwhile*"])


def test_notimpl_refuses_an_unknown_backend(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.notimpl("sqlite")
        def test_x(backend):
            pass
        """
    )
    result = pytester.runpytest("-p", "tests.conftest", "-p", "no:randomly", "-p", "no:xdist", "-q")
    assert result.ret != 0
    assert "notimpl names unknown backend(s) ['sqlite']" in result.stderr.str()
