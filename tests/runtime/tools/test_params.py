"""Typed tool parameters: the schema the model sees and the checks its arguments pass."""

from __future__ import annotations

from runtime.tools.params import Param, check_args, input_schema

PARAMS = [
    Param("n", "integer", "count", required=True, minimum=1, maximum=10),
    Param("flag", "boolean", "a switch", default=False),
    Param("ids", "array", "ids", items="integer"),
    Param("ratio", "number", "a fraction"),
    Param("mode", "string", "how", choices=("fast", "slow"), default="fast"),
]


def test_schema_uses_real_json_types() -> None:
    schema = input_schema(PARAMS)
    props = schema["properties"]
    assert schema["required"] == ["n"] and schema["additionalProperties"] is False
    assert props["n"] == {
        "type": "integer", "description": "count", "minimum": 1, "maximum": 10
    }  # fmt: skip
    assert props["flag"] == {"type": "boolean", "description": "a switch", "default": False}
    assert props["ids"]["items"] == {"type": "integer"}
    assert props["mode"]["enum"] == ["fast", "slow"]


def test_good_arguments_come_back_with_defaults() -> None:
    assert check_args(PARAMS, {"n": 3, "ratio": 1}) == {
        "n": 3, "flag": False, "ids": None, "ratio": 1, "mode": "fast"
    }  # fmt: skip
    assert check_args(PARAMS, {"n": 3, "flag": None})["flag"] is False  # type: ignore[index]


def test_strings_and_bools_are_not_numbers() -> None:
    assert check_args(PARAMS, {"n": "3"}) == "n must be a JSON integer, got str '3'"
    assert check_args(PARAMS, {"n": True}) == "n must be a JSON integer, got bool True"
    assert check_args(PARAMS, {"n": 1.5}) == "n must be a JSON integer, got float 1.5"
    assert check_args(PARAMS, {"n": 1, "flag": "true"}) == (
        "flag must be a JSON boolean, got str 'true'"
    )
    assert check_args(PARAMS, {"n": 1, "ratio": False}) == (
        "ratio must be a JSON number, got bool False"
    )


def test_ranges_items_choices_and_unknown_names() -> None:
    assert check_args(PARAMS, {"n": 0}) == "n must be at least 1, got 0"
    assert check_args(PARAMS, {"n": 11}) == "n must be at most 10, got 11"
    assert check_args(PARAMS, {"n": 1, "ids": [1, "2"]}) == (
        "ids must be a list of integers; '2' is not one"
    )
    assert check_args(PARAMS, {"n": 1, "mode": "medium"}) == (
        "mode must be one of fast, slow; got 'medium'"
    )
    assert check_args(PARAMS, {"n": 1, "speed": 2}) == (
        "unknown parameter(s) speed; this tool takes: n, flag, ids, ratio, mode"
    )
    assert str(check_args(PARAMS, {})).startswith("missing required parameter 'n' (integer)")
