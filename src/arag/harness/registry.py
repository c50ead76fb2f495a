"""Policies by name: each module of arag/harness/policies registers its own (``@register``) when the package is
imported, and a user's policy registers the same way."""

from __future__ import annotations

from arag.harness.contract import Policy

POLICIES: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    """Make a policy known by its name (for profiles and ``--policy``)."""
    POLICIES[cls.name] = cls
    return cls
