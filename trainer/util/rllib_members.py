"""RLlib 2.60's classes and the members RLlib defines on each, as data: what this project's
counterparts of them have to answer to.

The file `rllib_2_60_members.json` beside this one records, for every class the Ray 2.60 wheel
defines in one of the modules RLlib's record of modules and names lists (its new API stack: a
class the launcher's table refuses as the old stack is only named, under "old_stack"), and for
every base class inside `ray` such a class inherits from (marked `"x": 1`):

- "b": its base classes inside `ray`, in the order the class statement names them;
- "m": each method RLlib defines in the class body (protected ones too; `__init__` as the only
  dunder), as `kind(parameters)`: kind `m` method, `c` classmethod, `s` staticmethod, `p`
  property (no parameters), `i` the constructor; a `!` after the kind where RLlib marks it a
  hook to override (`@OverrideToImplementCustomLogic...`). The parameters are written as in a
  `def` line without `self` / `cls` and without defaults: `a, b=, *args, c=, **kw` (`=`: has a
  default; a lone `*` before the keyword-only ones where there is no `*args`).

Methods RLlib decorates `@Deprecated(..., error=True)` are left out (they raise in RLlib).
Regenerating the file needs the wheel (`trainer.compat.rllib_members_record`):

    python -m trainer.compat.rllib_members_record           # writes it from the installed wheel
    python -m trainer.compat.rllib_members_record --check   # exit 1 when it differs
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from trainer.errors import UnsupportedCall

T = TypeVar("T", bound=type)

DATA_FILE = Path(__file__).with_name("rllib_2_60_members.json")

#: A member's kinds (see the module docstring).
METHOD, CLASSMETHOD, STATICMETHOD, PROPERTY, CONSTRUCTOR = "m", "c", "s", "p", "i"
#: A parameter's kinds.
POSITIONAL, KEYWORD, VAR_POSITIONAL, VAR_KEYWORD = "positional", "keyword", "*", "**"


@dataclass(frozen=True)
class RLlibParameter:
    """One parameter of an RLlib method (after `self` / `cls`)."""

    name: str
    #: `POSITIONAL` (positional or keyword), `KEYWORD` (keyword-only), `VAR_POSITIONAL`,
    #: `VAR_KEYWORD`.
    kind: str
    has_default: bool


@dataclass(frozen=True)
class RLlibMember:
    """A member RLlib defines on a class."""

    name: str
    kind: str
    #: The qualified name of the class that defines it.
    owner: str
    parameters: tuple[RLlibParameter, ...] = ()
    #: RLlib marks it a hook to override (`@OverrideToImplementCustomLogic`).
    hook: bool = False

    @property
    def protected(self) -> bool:
        return self.name.startswith("_") and self.name != "__init__"

    @property
    def key(self) -> str:
        """`Owner.name`, the owner by its short name (how the gap table names it)."""
        return f"{self.owner.rpartition('.')[2]}.{self.name}"


def parse_member(name: str, owner: str, text: str) -> RLlibMember:
    """A member from its record (`m!(a, b=, *args, c=, **kw)`)."""
    head, _, rest = text.partition("(")
    kind, hook = head.rstrip("!"), head.endswith("!")
    parameters = []
    keyword_only = False
    for part in (p.strip() for p in rest.rstrip(")").split(",")):
        if not part:
            continue
        if part == "*":
            keyword_only = True
        elif part.startswith("**"):
            parameters.append(RLlibParameter(part[2:], VAR_KEYWORD, False))
        elif part.startswith("*"):
            keyword_only = True
            parameters.append(RLlibParameter(part[1:], VAR_POSITIONAL, False))
        else:
            kind_of = KEYWORD if keyword_only else POSITIONAL
            parameters.append(RLlibParameter(part.rstrip("="), kind_of, part.endswith("=")))
    return RLlibMember(name, kind, owner, tuple(parameters), hook)


class RLlibMembers:
    """The data file, read: RLlib's classes, their bases and members."""

    def __init__(self, data: dict[str, Any]):
        self.ray_version: str = data["ray_version"]
        self.old_stack: tuple[str, ...] = tuple(data["old_stack"])
        self._classes: dict[str, dict[str, Any]] = data["classes"]

    def classes(self, *, bases: bool = False) -> list[str]:
        """The recorded classes (qualified), with `bases` also the base classes recorded only
        because a recorded class inherits from them."""
        return sorted(n for n, r in self._classes.items() if bases or "x" not in r)

    def has_class(self, qualified: str) -> bool:
        return qualified in self._classes

    def bases(self, qualified: str) -> list[str]:
        return list(self._classes.get(qualified, {}).get("b", ()))

    def own_members(self, qualified: str) -> dict[str, RLlibMember]:
        """The members the class body defines."""
        record = self._classes.get(qualified, {})
        return {
            name: parse_member(name, qualified, text) for name, text in record.get("m", {}).items()
        }

    def mro(self, qualified: str) -> list[str]:
        """The class and its recorded bases in Python's method resolution order (C3)."""
        return _c3(qualified, self.bases)

    def members(self, qualified: str) -> dict[str, RLlibMember]:
        """Every member a user reaches on the class: its own and those its bases inside `ray`
        define, the nearest definition winning."""
        found: dict[str, RLlibMember] = {}
        for klass in self.mro(qualified):
            for name, member in self.own_members(klass).items():
                found.setdefault(name, member)
        return found


def _c3(qualified: str, bases_of: Any) -> list[str]:
    """C3 linearization over `bases_of` (falls back to depth-first order where the bases do not
    merge, which Python would refuse, so never for a class that exists)."""
    sequences = [_c3(base, bases_of) for base in bases_of(qualified)]
    sequences.append(list(bases_of(qualified)))
    order = [qualified]
    while True:
        sequences = [s for s in sequences if s]
        if not sequences:
            return order
        for sequence in sequences:
            head = sequence[0]
            if not any(head in s[1:] for s in sequences):
                break
        else:  # not mergeable: depth-first, each class once
            rest = [c for s in sequences for c in s]
            return order + [c for i, c in enumerate(rest) if c not in rest[:i]]
        order.append(head)
        sequences = [s[1:] if s[0] == head else s for s in sequences]


@functools.cache
def rllib_members() -> RLlibMembers:
    """The data file, read once per process."""
    with open(DATA_FILE, encoding="utf-8") as file:
        return RLlibMembers(json.load(file))


def _signature(member: RLlibMember) -> inspect.Signature:
    """RLlib's signature of `member` (defaults shown as None: the record keeps only whether
    there is one), with `self` / `cls` where RLlib binds one."""
    kinds = {
        POSITIONAL: inspect.Parameter.POSITIONAL_OR_KEYWORD,
        KEYWORD: inspect.Parameter.KEYWORD_ONLY,
        VAR_POSITIONAL: inspect.Parameter.VAR_POSITIONAL,
        VAR_KEYWORD: inspect.Parameter.VAR_KEYWORD,
    }
    parameters = []
    if member.kind in (METHOD, PROPERTY, CONSTRUCTOR):
        parameters.append(inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD))
    elif member.kind == CLASSMETHOD:
        parameters.append(inspect.Parameter("cls", inspect.Parameter.POSITIONAL_OR_KEYWORD))
    for parameter in member.parameters:
        default = None if parameter.has_default else inspect.Parameter.empty
        parameters.append(inspect.Parameter(parameter.name, kinds[parameter.kind], default=default))
    return inspect.Signature(parameters)


def refusal(rllib_class: str, name: str, capability: str, why: str) -> Any:
    """RLlib's `rllib_class.name` as a member that raises `UnsupportedCall` (naming the member,
    `why` and `capability`) when called, with RLlib's signature and kind (a classmethod or
    staticmethod where RLlib's is one). `KeyError` where RLlib's class has no such member."""
    member = rllib_members().members(rllib_class)[name]
    short = f"{member.owner.rpartition('.')[2]}.{name}"
    message = f"RLlib's {short} is not available in localrl: {why}"

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedCall(message, capability)

    refused.__name__ = name
    refused.__doc__ = f"Refuses when called (RLlib's {short}): {why}."
    refused.__signature__ = _signature(member)  # type: ignore[attr-defined]
    refused.__localrl_refusal__ = message  # type: ignore[attr-defined]
    if member.kind == CLASSMETHOD:
        return classmethod(refused)
    if member.kind == STATICMETHOD:
        return staticmethod(refused)
    return refused


def is_refusal(value: Any) -> bool:
    """Whether `value` is a member `refusal` made (or the function inside one)."""
    return isinstance(getattr(getattr(value, "__func__", value), "__localrl_refusal__", None), str)


def refuse(rllib_class: str, capability: str, why: str, *names: str) -> Callable[[T], T]:
    """Class decorator: each of RLlib's members `names` of `rllib_class` becomes a `refusal` on
    the class (one reason for the lot: a decorator per reason). Refuses nothing at lookup,
    import or subclassing; only a call raises. A `TypeError` where the class has such a
    member already (a refusal never hides a working member)."""
    made = {name: refusal(rllib_class, name, capability, why) for name in names}

    def decorate(cls: T) -> T:
        for name, member in made.items():
            if inspect.getattr_static(cls, name, None) is not None:
                raise TypeError(f"refuse(): {cls.__qualname__} has {name} already")
            function = getattr(member, "__func__", member)
            function.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, member)
        return cls

    return decorate
