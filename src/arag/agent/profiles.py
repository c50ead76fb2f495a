"""Profiles: named bundles of policies plus a result view (``profiles/NAME.toml``, or a file of your own), and
the switches a run puts on top (``agent.policies``, ``agent.view``)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arag.agent.policies import HOOK_ORDER, POLICIES, Policy
from arag.errors import ConfigError
from arag.settings import AgentSettings, ViewSettings
from arag.tools.view import ResultView

PROFILES = ("paper", "compact")


class Profile(BaseModel):
    """What a profile file holds."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="The system prompt: a file in arag/agent/prompts, or a path.")
    final_prompt: Literal["paper", "compact"] = Field(description="What the model is told at the step limit.")
    format_help: Literal["paper", "compact"] = Field(description="How JSON actions are explained in the prompt.")
    budget_tokens: bool = Field(description="Whether the note after each step gives the tokens left too.")
    observation_label: bool = Field(description='JSON actions: a result starts "Observation from TOOL:".')
    policies: list[str] = Field(description="The policies, in the order their hooks are asked.")
    view: ViewSettings = Field(default_factory=ViewSettings, description="The tools' result view.")


class Bundle:
    """A profile with a run's switches applied: the policies to run and the view the toolkit is given."""

    def __init__(self, name: str, profile: Profile, policies: list[type[Policy]], view: ResultView) -> None:
        self.name, self.profile, self.policies, self.view = name, profile, policies, view

    @property
    def policy_names(self) -> list[str]:
        return [p.name for p in self.policies]


def load_profile(name: str) -> Profile:
    """A packaged profile by name, or a profile file by path."""
    if name in PROFILES:
        text = resources.files("arag.agent").joinpath("profiles", f"{name}.toml").read_text(encoding="utf-8")
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
    ``agent.policies``, its view overridden by ``agent.view``."""
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
            names.insert(_place(names, policy), policy)
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise ConfigError(f"profile {name}: unknown policies {unknown}; known: {', '.join(sorted(POLICIES))}")
    return Bundle(name, profile, [POLICIES[n] for n in names], result_view(profile.view, settings.view))


def _place(names: list[str], policy: str) -> int:
    """Where a policy switched on joins a bundle: before the first of its policies that comes after it in
    HOOK_ORDER; at the end when none does or when it is not in HOOK_ORDER (a policy registered by its user)."""
    if policy not in HOOK_ORDER:
        return len(names)
    rank = HOOK_ORDER.index(policy)
    return next((i for i, name in enumerate(names) if name in HOOK_ORDER and HOOK_ORDER.index(name) > rank), len(names))


def result_view(*layers: ViewSettings) -> ResultView:
    """The paper's view with each layer's set values on top, in order."""
    values: dict[str, object] = {}
    for layer in layers:
        values.update({k: v for k, v in layer.model_dump().items() if v is not None})
    renamed = {"focused_read_tokens": "focus_tokens", "inline_read_tokens": "inline_tokens"}
    view = {renamed.get(k, k): v for k, v in values.items()}
    assert set(view) <= {f.name for f in fields(ResultView)}
    return ResultView(**view)  # type: ignore[arg-type]


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    summary: str
    profiles: list[str]  # the packaged profiles that run it


def describe_policies() -> list[PolicyInfo]:
    """Every registered policy, in the compact profile's order, then the others by name."""
    bundles = {name: load_profile(name).policies for name in PROFILES}
    order = bundles["compact"] + sorted(set(POLICIES) - set(bundles["compact"]))
    return [
        PolicyInfo(name, POLICIES[name].summary, [p for p, listed in bundles.items() if name in listed])
        for name in order
        if name in POLICIES
    ]


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)
