"""Option bundles: a dataclass of typer options shared by several commands (declared once, as llm's shared option
decorators do), handed to each command as one object."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

Command = TypeVar("Command", bound=Callable[..., Any])


def with_bundles(**bundles: type) -> Callable[[Command], Command]:
    """Give a command the options of each dataclass in ``bundles`` (``keyword=Bundle``): they are added to its
    command line after its own, and the command receives one ``Bundle`` instance as ``keyword``."""

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        own = [parameter for name, parameter in signature.parameters.items() if name not in bundles]
        fields_of: dict[str, list[str]] = {}
        added: list[inspect.Parameter] = []
        taken = {parameter.name for parameter in own}
        for keyword, bundle in bundles.items():
            hints = typing.get_type_hints(bundle, include_extras=True)
            fields_of[keyword] = []
            for field in dataclasses.fields(bundle):
                if field.name in taken:
                    raise TypeError(
                        f"{command.__name__}: option {field.name!r} is both its own and {bundle.__name__}'s"
                    )
                taken.add(field.name)
                fields_of[keyword].append(field.name)
                default = field.default if field.default is not dataclasses.MISSING else inspect.Parameter.empty
                added.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                               annotation=hints[field.name]))  # fmt: skip

        @functools.wraps(command)
        def run(**values: Any) -> Any:
            for keyword, bundle in bundles.items():
                values[keyword] = bundle(**{name: values.pop(name) for name in fields_of[keyword]})
            return command(**values)

        parameters = own + added
        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        return typing.cast(Command, run)

    return decorate
