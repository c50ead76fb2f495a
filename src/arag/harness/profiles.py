"""Profiles: named bundles of policies plus a result view (``profiles/NAME.toml``, or a file of your own), and
the switches a run puts on top (``agent.policies``, ``agent.policy``, ``agent.view``)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import arag.harness.policies  # noqa: F401 - registers every packaged policy
from arag.errors import ConfigError
from arag.harness import contract
from arag.harness.compose import Harness, declared_fields
from arag.harness.prompts import FINAL, compact_format, packaged_prompt
from arag.harness.registry import POLICIES
from arag.harness.view import CompactView
from arag.settings import AgentSettings, ToolName, ViewSettings
from arag.tools.view import ResultView

PROFILES = ("paper", "compact", "tables", "extended")
PAPER_PROMPT = "system.md"  # the paper's own system prompt (arag.agent)


class Profile(BaseModel):
    """What a profile file holds."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(
        PAPER_PROMPT,
        description="The system prompt: the paper's (system.md), a file in arag/harness/prompts, or a path.",
    )
    final_prompt: Literal["paper", "compact"] = Field(description="What the model is told at the step limit.")
    format_help: Literal["paper", "compact"] = Field(description="How JSON actions are explained in the prompt.")
    budget_tokens: bool = Field(description="Whether the note after each step gives the tokens left too.")
    observation_label: bool = Field(description='JSON actions: a result starts "Observation from TOOL:".')
    policies: list[str] = Field(description="The policies it runs (their order does not matter: compose.py).")
    view: ViewSettings = Field(default_factory=ViewSettings, description="The tools' result view.")
    tools: list[ToolName] | None = Field(
        None, description="The tools it offers (none named: agent.tools; agent.tools set by the user wins)."
    )


class Bundle:
    """A profile with a run's switches applied: the policies to run (each with its settings), the view the
    toolkit is given, and what the profile says to the model."""

    def __init__(
        self,
        name: str,
        profile: Profile,
        policies: list[type[contract.Policy]],
        configs: dict[str, BaseModel],
        view: ResultView,
        settings: AgentSettings,
    ) -> None:
        self.name, self.profile, self.policies, self.view, self.settings = name, profile, policies, view, settings
        self.configs = configs
        self.fields = declared_fields(self._instances())

    def tools(self) -> list[str]:
        """The tools a run offers: agent.tools when set, else the profile's, else agent.tools' default."""
        if self.profile.tools is None or "tools" in self.settings.model_fields_set:
            return list(self.settings.tools)
        return list(self.profile.tools)

    @property
    def policy_names(self) -> list[str]:
        return [p.name for p in self.policies]

    def _instances(self) -> list[contract.Policy]:
        return [cls(self.configs[cls.name], self.settings) for cls in self.policies]

    def harness(self) -> Harness:
        """One question's policies, composed (new instances: a policy's state is one question's)."""
        return Harness(self._instances(), self.fields)

    def prompt(self) -> str | None:
        """The profile's system prompt; None: the paper's."""
        name = self.profile.prompt
        if name == PAPER_PROMPT:
            return None
        if resources.files("arag.harness").joinpath("prompts", name).is_file():
            return packaged_prompt(name)
        try:
            return Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"profile {self.name}: cannot read its prompt {name}: {exc}") from None

    def final_prompt(self) -> str | None:
        """What the model is told at the step limit; None: the paper's."""
        return FINAL if self.profile.final_prompt == "compact" else None

    def format_help(self, search_tool: str, semantic: bool, flat: bool) -> str | None:
        """How JSON actions are explained; None: the paper's way."""
        if self.profile.format_help == "paper":
            return None
        return compact_format(search_tool, semantic, flat, list(self.fields.values()))

    @property
    def note(self) -> contract.Field | None:
        """The note a policy asks every action to carry (None: the free "thought")."""
        return next((f for f in self.fields.values() if f.place == "note"), None)

    def view_for(self, flat: bool) -> ResultView:
        """The result view, its hints written as flat JSON actions where the model acts in them."""
        return replace(self.view, flat_calls=True) if flat and isinstance(self.view, CompactView) else self.view


def load_profile(name: str) -> Profile:
    """A packaged profile by name, or a profile file by path."""
    if name in PROFILES:
        text = resources.files("arag.harness").joinpath("profiles", f"{name}.toml").read_text(encoding="utf-8")
        source = f"profile {name}"
    else:
        path = Path(name)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            known = ", ".join(PROFILES)
            raise ConfigError(f"agent.profile {name!r} is neither {known}, auto nor a readable file: {exc}") from None
        source = f"profile file {path}"
    try:
        return Profile.model_validate(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"{source} is not valid: {_first_error(exc)}") from None


def resolve(settings: AgentSettings, local: bool) -> Bundle:
    """The bundle a run uses: the profile ('auto': compact for the embedded model), its policies switched by
    ``agent.policies``, each with its settings (``agent.policy.NAME``), its view overridden by ``agent.view``."""
    name = settings.profile if settings.profile != "auto" else "compact" if local else "paper"
    profile = load_profile(name)
    names = list(profile.policies)
    for switch in settings.policies:
        sign, policy = switch[:1], switch[1:].strip()
        if sign not in "+-" or not sign or policy not in POLICIES:
            known = ", ".join(sorted(POLICIES))
            raise ConfigError(f"agent.policies: {switch!r} is not +NAME or -NAME of a known policy ({known})")
        if sign == "-" and policy in names:
            names.remove(policy)
        elif sign == "+" and policy not in names:
            names.append(policy)
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise ConfigError(f"profile {name}: unknown policies {unknown}; known: {', '.join(sorted(POLICIES))}")
    configs = policy_configs(settings)
    view = result_view(profile.view, settings.view)
    return Bundle(name, profile, [POLICIES[n] for n in names], configs, view, settings)


def policy_configs(settings: AgentSettings) -> dict[str, BaseModel]:
    """Every registered policy's settings: its own class's defaults under ``agent.policy.NAME``."""
    unknown = sorted(set(settings.policy) - set(POLICIES))
    if unknown:
        known = ", ".join(sorted(POLICIES))
        raise ConfigError(f"agent.policy: {', '.join(unknown)} is no policy (known: {known})")
    configs = {}
    for name, cls in POLICIES.items():
        try:
            configs[name] = cls.Settings.model_validate(settings.policy.get(name, {}))
        except ValidationError as exc:
            raise ConfigError(_first_error(exc, f"agent.policy.{name}")) from None
    return configs


def resolved_policy_settings(settings: AgentSettings) -> dict[str, dict[str, Any]]:
    """What a run records of ``agent.policy``: the settings of every policy that has any, defaults included."""
    return {
        name: config.model_dump(mode="json")
        for name, config in sorted(policy_configs(settings).items())
        if type(config).model_fields
    }


def with_default_settings(recorded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A run's recorded ``agent.policy`` with every policy setting it lacks at its default: a setting added since
    defaults to the behaviour before it, so a run recorded then ran with it (and can be resumed under it)."""
    filled: dict[str, dict[str, Any]] = {}
    for name, cls in sorted(POLICIES.items()):
        if not cls.Settings.model_fields:
            continue
        own = recorded.get(name)
        defaults = cls.Settings().model_dump(mode="json")
        filled[name] = {**defaults, **own} if isinstance(own, dict) else defaults
    return {**recorded, **filled}


_COMPACT_ONLY = {f.name for f in fields(CompactView)} - {f.name for f in fields(ResultView)}


def result_view(*layers: ViewSettings) -> ResultView:
    """The paper's view with each layer's set values on top, in order (the compact view where a layer sets one of
    its own fields)."""
    values: dict[str, object] = {}
    for layer in layers:
        values.update({k: v for k, v in layer.model_dump().items() if v is not None})
    renamed = {"focused_read_tokens": "focus_tokens", "inline_read_tokens": "inline_tokens"}
    view = {renamed.get(k, k): v for k, v in values.items()}
    assert set(view) <= {f.name for f in fields(CompactView)}
    kind = CompactView if set(view) & _COMPACT_ONLY else ResultView
    return kind(**view)  # type: ignore[arg-type]


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    summary: str
    profiles: list[str]  # the packaged profiles that run it
    # its knobs (agent.policy.NAME.KNOB): each one's default and description
    settings: dict[str, dict[str, Any]]


def describe_policies() -> list[PolicyInfo]:
    """Every registered policy, in the compact profile's order, then the others by name."""
    bundles = {name: load_profile(name).policies for name in PROFILES}
    order = bundles["compact"] + sorted(set(POLICIES) - set(bundles["compact"]))
    return [
        PolicyInfo(
            name,
            POLICIES[name].summary,
            [p for p, listed in bundles.items() if name in listed],
            {
                knob: {"default": field.default, "description": field.description or ""}
                for knob, field in POLICIES[name].Settings.model_fields.items()
            },
        )
        for name in order
        if name in POLICIES
    ]


def _first_error(exc: Exception, prefix: str = "") -> str:
    """The first error of a validation as "where: what" (``prefix``: the setting it is under)."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    first = exc.errors()[0]
    where = ".".join([*([prefix] if prefix else []), *(str(part) for part in first["loc"])])
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"
