"""The one exception tree: every class keeps its code, is found by it, and serializes to one shape."""

from __future__ import annotations

import pytest

from tgms.engine import errors
from tgms.engine.errors import ERROR_CLASSES, TGMSError, error_from_dict

CODES = {
    "SchemaError": "E_SCHEMA",
    "InvalidArgError": "E_INVALID_ARG",
    "NotFoundError": "E_NOT_FOUND",
    "GroundingError": "E_GROUNDING",
    "CostError": "E_COST",
    "LimitError": "E_LIMIT",
    "UpstreamError": "E_UPSTREAM",
    "CorruptError": "E_CORRUPT",
    "ConflictError": "E_CONFLICT",
    "BackendError": "E_BACKEND",
}


@pytest.mark.parametrize(("name", "code"), CODES.items())
def test_each_class_has_its_code_and_round_trips(name: str, code: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, TGMSError) and cls.code == code and ERROR_CLASSES[code] is cls
    err = cls("went wrong", field="x", value=float("nan"))
    shape = err.to_dict()
    assert shape == {"error": code, "message": "went wrong", "details": {"field": "x", "value": "nan"}}
    back = error_from_dict(shape)
    assert type(back) is cls and back.to_dict() == shape


def test_the_registry_holds_exactly_the_ten_codes() -> None:
    assert list(ERROR_CLASSES) == list(CODES.values())
    assert TGMSError.code == "E_INTERNAL"
    assert type(error_from_dict({"error": "E_NOPE", "message": "m"})) is TGMSError


def test_a_code_is_declared_once() -> None:
    with pytest.raises(RuntimeError, match="declared twice"):

        class Again(TGMSError, code="E_SCHEMA"):  # the declaration itself must fail
            pass

    assert ERROR_CLASSES["E_SCHEMA"] is errors.SchemaError
