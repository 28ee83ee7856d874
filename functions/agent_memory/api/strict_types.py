"""No coercion between JSON types in request bodies.

Pydantic's lax mode (what the Powertools resolver validates with) turns "0.5" into 0.5, "yes" and 1 into True,
1767225600 into a date-time and "2030-01-01T00:00:00" into a date. A client that sends the wrong type has a
bug, and a silent conversion hides it (or stores what it did not mean), so each of these is refused with 422
naming the field. Pydantic's own strict mode cannot be used instead: the resolver validates the parsed body as
Python objects, where strict mode also refuses an ISO string for a date-time and a string for an enum.
"""

from __future__ import annotations

import re
import types
from datetime import date, datetime
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic.fields import FieldInfo

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SCALARS = (bool, int, float, datetime, date, str)


def _kinds(annotation: Any) -> frozenset[type]:
    """The scalar types a field accepts (`object` standing for anything else: models, lists, enums, …)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _kinds(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return frozenset().union(*(_kinds(arg) for arg in get_args(annotation)))
    if annotation is type(None):
        return frozenset({type(None)})
    if annotation in _SCALARS:
        return frozenset({annotation})
    return frozenset({object})


def _problem(value: object, kinds: frozenset[type]) -> str | None:
    numbers = kinds & {int, float}
    if isinstance(value, str):
        if kinds & {str, object}:
            return None
        if numbers:
            return f"must be a JSON number, not the string {value[:40]!r}"
        if bool in kinds:
            return f"must be true or false, not the string {value[:40]!r}"
        if date in kinds and datetime not in kinds and not _DATE_RE.match(value):
            return f"must be a date YYYY-MM-DD, not {value[:40]!r}"
        return None
    if isinstance(value, bool):
        if bool in kinds or object in kinds:
            return None
        return "must be a JSON number, not a boolean" if numbers else "must not be a boolean"
    if isinstance(value, int | float):
        if kinds & {datetime, date} and not numbers and object not in kinds:
            return "must be an ISO 8601 string (e.g. 2030-01-01T00:00:00Z), not an epoch number"
        if bool in kinds and not numbers and object not in kinds:
            return "must be true or false, not a number"
        if isinstance(value, float) and int in kinds and float not in kinds and object not in kinds:
            return f"must be a whole JSON number (no decimal point), not {value!r}"
    return None


def check(field: FieldInfo, value: object) -> None:
    """Raise ValueError (reported at the field) when `value`'s JSON type is not the field's."""
    problem = _problem(value, _kinds(field.annotation))
    if problem is not None:
        raise ValueError(problem)
