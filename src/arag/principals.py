"""Who reads: a principal (a user, with the groups they belong to) and the documents it may read.

A document says who may read it in its metadata field ``access``: the groups, any one of which may read it (front
matter ``access: [hr, finance]``, a JSON Lines record's ``access`` field, or a folder's ``.arag-access.toml``
rule, applied when it is indexed: :mod:`arag.corpus.access`). A document without the field is open to everyone; an
empty list, to no one but the local user. The local user — the CLI and the Python API unless told otherwise — reads
every document. An :class:`~arag.index.Index` viewed for a principal (``Index.as_principal``) shows it only the
documents it may read, in every operation, before any scoring.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from arag.errors import InputError

ACCESS_FIELD = "access"
_GROUP = re.compile(r"^[\w.@:-]{1,128}$")


class PrincipalError(InputError):
    """A group name that cannot be one (empty, too long, or with characters other than letters, digits, . @ : _ -)."""


@dataclass(frozen=True)
class Principal:
    """A reader: its name (for the audit log) and the groups it belongs to."""

    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    within: Principal | None = None  # a reader this one is narrowed to too (a view of a view): both must allow

    @classmethod
    def of(cls, name: str, groups: Iterable[str]) -> Principal:
        """A principal whose group names are checked (:class:`PrincipalError` names a bad one)."""
        checked = frozenset(group.strip() for group in groups if group.strip())
        for group in checked:
            if not _GROUP.match(group):
                raise PrincipalError(f"{group!r} is not a group name (letters, digits, . @ : _ -, at most 128)")
        return cls(name, checked)

    @property
    def every_group(self) -> frozenset[str]:
        """Its groups and those of every principal it is narrowed to: what a store is told it reads as, so that
        the store's own restriction never hides what :meth:`may_read` allows."""
        return self.groups if self.within is None else self.groups | self.within.every_group

    def may_read(self, metadata: dict[str, Any] | None) -> bool:
        """Whether a document with this metadata is one it may read."""
        groups = access_groups(metadata)
        allowed = groups is None or not self.groups.isdisjoint(groups)
        return allowed and (self.within is None or self.within.may_read(metadata))


def access_groups(metadata: dict[str, Any] | None) -> list[str] | None:
    """The groups a document's metadata lets read it: None when it says nothing (open to everyone); a list, maybe
    empty (closed), when it does. A text value is read as names separated by commas."""
    if not metadata or ACCESS_FIELD not in metadata:
        return None
    value = metadata[ACCESS_FIELD]
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    return [str(item).strip() for item in items if item is not None and str(item).strip()]
