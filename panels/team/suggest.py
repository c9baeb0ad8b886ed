"""What to say of an unknown key in a team file: the nearest valid key of its table. Pure.

The valid keys of a table are the fields of the pydantic model that reads it (model.py is
the one place that says what a team file may hold), found by walking the model's field
types along the error's location: `("panels", 0, "budget", "max_sesion_usd")` goes from
`TeamModel` through `list[PanelModel]` and `BudgetOverrides | None` to the budget's fields.
A key close to a valid one (difflib) is named; otherwise the table's keys are listed.
"""

from __future__ import annotations

import difflib
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from panels.team.locate import Loc


def unknown_key(root: type[BaseModel], loc: Loc) -> str:
    """The message for the unknown key at the end of `loc` (a validation error's location)."""
    *table, key = loc
    where = table_name(tuple(table))
    model = model_at(root, tuple(table))
    valid = [] if model is None else table_keys(model)
    said = f"unknown key {key!r} in {where}"
    near = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
    if near:
        return f"{said}; did you mean {near[0]!r}?"
    if not valid:
        return f"{said}; remove it"
    return f"{said}; its keys are {', '.join(valid)}"


def table_name(table: Loc) -> str:
    """How the file names the table at `table`: `[team.budget]`, `[[panels]]`,
    `[panels.budget]`, `[[panels.policy]]`; the top level for ()."""
    if not table:
        return "the file's top level"
    names = ".".join(str(part) for part in table if isinstance(part, str))
    return f"[[{names}]]" if isinstance(table[-1], int) else f"[{names}]"


def table_keys(model: type[BaseModel]) -> list[str]:
    """The keys a table read by `model` may hold, in the model's order."""
    return [info.alias or name for name, info in model.model_fields.items()]


def model_at(root: type[BaseModel], table: Loc) -> type[BaseModel] | None:
    """The model that reads the table at `table`, or None when the path leaves the models."""
    current: Any = root
    for part in table:
        if isinstance(part, int):  # an element of an array of tables
            current = _inner(current, list)
        elif _model(current) is not None:
            model = _model(current)
            assert model is not None
            fields = {info.alias or name: info for name, info in model.model_fields.items()}
            if part not in fields:
                return None
            current = fields[part].annotation
        else:  # a table of tables by name (`[team.external.NAME]`)
            current = _inner(current, dict)
        if current is None:
            return None
    return _model(current)


def _options(annotation: Any) -> list[Any]:
    """The types an annotation may be: a union's members, an Annotated's type."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _options(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [t for arg in get_args(annotation) for t in _options(arg)]
    return [annotation]


def _model(annotation: Any) -> type[BaseModel] | None:
    for option in _options(annotation):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


def _inner(annotation: Any, container: type) -> Any:
    """The element type of a list, or the value type of a dict, among `annotation`'s options."""
    for option in _options(annotation):
        if get_origin(option) is container:
            return get_args(option)[-1]
    return None
