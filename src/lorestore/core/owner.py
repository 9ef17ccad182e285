"""The owner of a lesson, a tombstone, a policy or an audit chain, a user or an org, and the
only conversions between its spellings: ``Owner`` in records and code, ``owner.key``
(``user:<name>``, ``org:<slug>``) in every owner column, principal, token and storage call,
``owner.record()`` (``{"user": name}``) in JSON documents, export files and results.

Names keep the rule user names and org slugs always had: lower-case letters, digits, ``.``,
``_`` and ``-``, starting with a letter or digit, at most 63 characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from lorestore.core.errors import LorestoreError

if TYPE_CHECKING:  # the stores and the hooks handle owners without loading pydantic
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import core_schema

OwnerKind = Literal["user", "org"]
KINDS: tuple[OwnerKind, ...] = ("user", "org")
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}\Z")
# Owners are few and validated on every lesson read: each is checked and built once.
_INTERNED: dict[tuple[str, str], Owner] = {}
_INTERN_MAX = 4096


def _refusal(text: object, why: str) -> LorestoreError:
    return LorestoreError(
        "invalid_argument",
        f"owner {text!r} {why}",
        hint="name an owner as user:NAME or org:SLUG (lower-case letters, digits, '.', '_' "
        "or '-', at most 63)",
    )


@dataclass(frozen=True, order=True, slots=True)
class Owner:
    """A user or an org; hashable, ordered (users and orgs apart, then by name)."""

    kind: OwnerKind
    name: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise _refusal(f"{self.kind}:{self.name}", "is neither a user nor an org")
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise _refusal(f"{self.kind}:{self.name}", "has no valid name")

    # --- construction ----------------------------------------------------------------------

    @classmethod
    def _make(cls, kind: str, name: str, text: object) -> Owner:
        if not isinstance(name, str):  # (nor hashable, perhaps)
            raise _refusal(text, "has no valid name")
        interned = _INTERNED.get((kind, name))
        if interned is not None:
            return interned
        if kind not in KINDS:
            raise _refusal(text, "is neither a user nor an org")
        if not _NAME.match(name):
            raise _refusal(text, "has no valid name")
        owner = cls(kind, name)
        if len(_INTERNED) >= _INTERN_MAX:
            _INTERNED.clear()
        _INTERNED[(kind, name)] = owner
        return owner

    @classmethod
    def parse(cls, key: str) -> Owner:
        """The owner a key names: ``user:<name>`` or ``org:<slug>``, exactly."""
        if not isinstance(key, str):
            raise _refusal(key, "is not text")
        kind, colon, name = key.partition(":")
        if not colon:
            raise _refusal(key, "is not user:NAME or org:SLUG")
        return cls._make(kind, name, key)

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Owner:
        """The owner of the interchange form, ``{"user": name}`` or ``{"org": slug}``."""
        if not isinstance(record, Mapping) or len(record) != 1:
            raise _refusal(record, 'is not {"user": NAME} or {"org": SLUG}')
        ((kind, name),) = record.items()
        return cls._make(kind, name, record)

    @classmethod
    def user(cls, name: str) -> Owner:
        """The user of this name (``user:`` before it is taken off)."""
        return cls._make("user", name.removeprefix("user:"), name)

    @classmethod
    def org(cls, slug: str) -> Owner:
        """The org of this slug; ``org:acme`` and ``acme`` are the same org."""
        return cls._make("org", slug.removeprefix("org:"), slug)

    # --- the other spellings ---------------------------------------------------------------

    @property
    def key(self) -> str:
        """``user:<name>`` or ``org:<slug>``: the stored and principal form."""
        return f"{self.kind}:{self.name}"

    def record(self) -> dict[str, str]:
        """``{"user": name}`` or ``{"org": slug}``: the interchange and JSON form."""
        return {self.kind: self.name}

    @property
    def is_org(self) -> bool:
        return self.kind == "org"

    def __str__(self) -> str:
        return self.key

    # --- as a pydantic field: validated from and serialised to the interchange form ---------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # JSON (and JSON schema): exactly the object a dict[str, str] field had. Python: an
        # Owner as is, or that object. Serialised, in either mode, to that object.
        from pydantic_core import core_schema

        record = core_schema.dict_schema(core_schema.str_schema(), core_schema.str_schema())
        from_record = core_schema.no_info_after_validator_function(_from_record, record)
        return core_schema.json_or_python_schema(
            json_schema=from_record,
            python_schema=core_schema.no_info_plain_validator_function(_from_python),
            serialization=core_schema.plain_serializer_function_ser_schema(
                Owner.record,
                return_schema=record,
            ),
        )


def _from_record(record: dict[str, str]) -> Owner:
    # A ValueError (not a LorestoreError) so pydantic reports it as a validation error of
    # the field, as it did any other malformed value.
    if len(record) == 1:
        ((kind, name),) = record.items()
        interned = _INTERNED.get((kind, name))
        if interned is not None:
            return interned
    try:
        return Owner.of(record)
    except LorestoreError as exc:
        raise ValueError(exc.message) from None


def _from_python(value: Any) -> Owner:
    if isinstance(value, Owner):
        return value
    if type(value) is dict and len(value) == 1:
        ((kind, name),) = value.items()
        if type(name) is str:
            interned = _INTERNED.get((kind, name))
            return interned if interned is not None else _from_record(value)
    raise ValueError('an owner is {"user": NAME} or {"org": SLUG}')
