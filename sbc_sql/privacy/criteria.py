"""The criteria a user asks for on top of k (:data:`.registry.CRITERIA`), each checked on
every declared sensitive column on its own.

:class:`Criteria` holds what was asked, one field per option of a registered criterion
(flags or keywords, in the registry's order), and checks what needs no data; :func:`models`
turns it into the privacy models a release is verified against, :meth:`Criteria.rule` into
the rule a clustering keeps.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

from ..cluster.sensitive import Rule
from ..errors import InputError
from ..model import Column
from . import registry
from .base import PrivacyModel
from .criterion import Criterion

F = TypeVar("F", bound=Callable[..., Any])


class Criteria:
    """The options of the criteria on top of k, by name (``l_diversity``, ``l_model``, ...:
    :func:`.registry.options`), positionally in that order or by keyword; an option not
    given takes its default, and a criterion whose options leave it unasked (None) is not
    asked. Immutable; two are equal when every option is."""

    __slots__ = ("_values",)
    _values: Mapping[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        declared = registry.options()
        if len(args) > len(declared):
            raise TypeError(f"Criteria takes at most {len(declared)} options, {len(args)} given")
        values = {o.name: o.default for o in declared}
        values.update((o.name, v) for o, v in zip(declared, args, strict=False))
        for name, value in kwargs.items():
            if name not in values:
                raise TypeError(f"Criteria has no option {name!r}")
            if any(o.name == name for o in declared[: len(args)]):
                raise TypeError(f"Criteria got option {name!r} twice")
            values[name] = value
        object.__setattr__(self, "_values", MappingProxyType(values))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not an option (nor _values before it is set)
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), tuple(self._values.values()))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Criteria is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Criteria) and dict(self._values) == dict(other._values)

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        return "Criteria(" + ", ".join(f"{n}={v!r}" for n, v in self._values.items()) + ")"

    def values(self) -> Mapping[str, Any]:
        """Every option's value, by name."""
        return self._values

    def asked_on(self, column: Column | None = None) -> Iterator[Criterion]:
        """The criteria asked, in the registry's order, on ``column``."""
        for kind in registry.criteria():
            criterion = kind.from_options(self._values, column)
            if criterion is not None:
                yield criterion

    @property
    def asked(self) -> bool:
        return any(True for _ in self.asked_on())

    def check(self) -> None:
        """The options' own limits (the data's are checked by :func:`check_sensitive`); a
        choice first, then the thresholds, in the registry's order."""
        declared = registry.options()
        for option in sorted(declared, key=lambda o: not o.choices):
            option.check(self._values[option.name])

    def rule(self) -> Rule:
        """The same criteria as the clustering checks them."""
        return Rule(tuple(self.asked_on()))

    def describe(self) -> str:
        return ", ".join(c.describe() for c in self.asked_on())


#: the keywords Criteria takes, for introspection: the registered criteria's options
Criteria.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default) for o in registry.options()]
)


def takes_criteria(function: F) -> F:
    """``function`` takes the registered criteria's options (:func:`.registry.options`) as
    keywords in its last parameter, ``**criteria``: its signature lists them after its own,
    with their defaults, and a keyword that is neither its own nor a criterion's is the
    TypeError Python raises for one (``Criteria(**criteria)`` then checks the values)."""
    signature = inspect.signature(function)
    *own, rest = signature.parameters.values()
    if rest.kind is not inspect.Parameter.VAR_KEYWORD:
        raise TypeError(f"{function.__qualname__} has no **criteria to take the criteria's options")
    keywords = [
        inspect.Parameter(
            o.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=o.default,
            annotation=o.type.__name__ if o.default is not None else f"{o.type.__name__} | None",
        )
        for o in registry.options()
    ]
    full = signature.replace(parameters=[*own, *keywords])

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        full.bind(*args, **kwargs)
        return function(*args, **kwargs)

    checked.__signature__ = full  # type: ignore[attr-defined]
    return typing.cast(F, checked)


def require_sensitive(criteria: Criteria, sensitive: Sequence[Column]) -> None:
    """A criterion asked needs a sensitive column to hold on."""
    if criteria.asked and not sensitive:
        raise InputError(
            f"{criteria.describe()} is asked, but no column is declared sensitive; declare one "
            "(--sensitive, or the column comment 'sbc:sensitive')"
        )


def check_sensitive(criteria: Criteria, sensitive: Sequence[Column], distinct: dict[str, int]) -> None:
    """A criterion needs a sensitive column, and what it asks of each to be possible there
    (``distinct``: each column's distinct values, NULL counted as one)."""
    require_sensitive(criteria, sensitive)
    for criterion in criteria.asked_on():
        for c in sensitive:
            criterion.check_values(c.name, distinct[c.name])


def models(k: int, asked: Criteria, sensitive: Sequence[Column]) -> tuple[PrivacyModel, ...]:
    """k-anonymity, then each criterion on each sensitive column, in the columns' order."""
    return (registry.base()(k), *(m for c in sensitive for m in asked.asked_on(c)))


def rule_of(**options: Any) -> Rule:
    """The clustering's rule of the criteria these options ask (by option name, as
    :class:`Criteria` takes them)."""
    return Criteria(**options).rule()


def recorded_criteria(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The criteria a run kept (anonymize's keywords), from the privacy models its
    provenance ``doc`` records."""
    kinds = {kind.name: kind for kind in registry.criteria()}
    out: dict[str, Any] = {}
    for record in doc.get("privacy_models", []):
        kind = kinds.get(record.get("name"))
        if kind is not None:
            out.update(kind.from_record(record).option_values())
    return out
