"""RLlib's component layout of a learner's state, beside this project's own.

A learner's own state (what `get_state()` returns, checkpoints hold and `set_state` takes) is
`{"module": weights, "optimizer": ..., <the learner's extra keys>}`; a multi-agent learner's is
that per module id. RLlib's Checkpointable arguments name RLlib's components instead, so a
learner asked with `components=` or `not_components=` (a name, a `"a/b"` path or a list; an
empty list excludes nothing) answers in RLlib's layout:

    {"should_module_be_updated": config.policies_to_train, "weights_seq_no": 0,
     "rl_module": {module_id: weights},        # "rl_module/<module_id>" selects modules
     "optimizer": {...} | {module_id: {...}},  # this project's optimizer state
     "learner_extra": {...} | {module_id: {...}}}  # the learner's other keys

`set_state` takes either layout. From RLlib's, only the components present change (RLlib's
rule); the rest stays as it is. A `LearnerGroup` adds RLlib's outer `{"learner": ...}`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from trainer.core.models import DEFAULT_MODULE_ID

COMPONENT_LEARNER_GROUP = "learner_group"
COMPONENT_LEARNER = "learner"
COMPONENT_RL_MODULE = "rl_module"
COMPONENT_OPTIMIZER = "optimizer"
COMPONENT_METRICS_LOGGER = "metrics_logger"
#: This project's key for a learner's state beyond RLlib's components (targets, counters, RNGs).
COMPONENT_EXTRA = "learner_extra"
#: Keys RLlib's learner state always has: they (or an `rl_module` without this project's
#: `module`) mark a state as RLlib's layout.
RLLIB_MARKERS = ("should_module_be_updated", "weights_seq_no")

Names = str | Collection[str] | None


def component_names(names: Names) -> list[str]:
    """`names` (RLlib's Checkpointable argument: a name, a list, or None) as a list."""
    if names is None:
        return []
    return [names] if isinstance(names, str) else [str(name) for name in names]


def wants(component: str, components: Names, not_components: Names) -> bool:
    """RLlib's `Checkpointable._check_component`: `component` is asked for (all are when
    `components` is None, or a path under it is named) and not excluded outright."""
    if component in component_names(not_components):
        return False
    if components is None:
        return True
    return any(
        name == component or name.startswith(component + "/")
        for name in component_names(components)
    )


def subcomponents(component: str, names: Names) -> list[str] | None:
    """RLlib's `Checkpointable._get_subcomponents`: the paths under `component/`, without that
    prefix; None when none is named."""
    below = [
        name[len(component) + 1 :]
        for name in component_names(names)
        if name.startswith(component + "/")
    ]
    return below or None


def in_rllib_layout(state: Any) -> bool:
    """Whether `state` is a learner state in RLlib's layout (not this project's)."""
    if not isinstance(state, dict):
        return False
    return any(marker in state for marker in RLLIB_MARKERS) or (
        COMPONENT_RL_MODULE in state and "module" not in state
    )


def rllib_learner_state(learner: Any, own: dict, components: Names, not_components: Names) -> dict:
    """`own` (the learner's state in this project's layout) in RLlib's, with only the asked
    components."""
    multi = hasattr(learner, "learners")
    per_module = own if multi else {DEFAULT_MODULE_ID: own}
    state: dict[str, Any] = {
        "should_module_be_updated": getattr(learner.config, "policies_to_train", None),
        "weights_seq_no": 0,
    }
    if wants(COMPONENT_RL_MODULE, components, not_components):
        chosen = subcomponents(COMPONENT_RL_MODULE, components)
        left_out = set(subcomponents(COMPONENT_RL_MODULE, not_components) or ())
        state[COMPONENT_RL_MODULE] = {
            module_id: module_state["module"]
            for module_id, module_state in per_module.items()
            if (chosen is None or str(module_id) in chosen) and str(module_id) not in left_out
        }
    for component, pick in (
        (COMPONENT_OPTIMIZER, lambda s: s.get("optimizer")),
        (
            COMPONENT_EXTRA,
            lambda s: {k: v for k, v in s.items() if k not in ("module", "optimizer")},
        ),
    ):
        if not wants(component, components, not_components):
            continue
        parts = {module_id: pick(s) for module_id, s in per_module.items()}
        parts = {module_id: part for module_id, part in parts.items() if part is not None}
        if parts:
            state[component] = parts if multi else parts[DEFAULT_MODULE_ID]
    return state


def own_learner_state(learner: Any, state: dict, current: Callable[[], dict]) -> dict:
    """`state` in this project's layout: as given, or (RLlib's layout) the learner's
    `current()` state with the components `state` holds put in. Keys RLlib's layout does not
    know (a subclass's own) are left to the subclass."""
    if not in_rllib_layout(state):
        return state
    multi = hasattr(learner, "learners")
    own = current()
    per_module = own if multi else {DEFAULT_MODULE_ID: own}
    modules = state.get(COMPONENT_RL_MODULE) or {}
    if not multi and modules and DEFAULT_MODULE_ID not in modules and len(modules) == 1:
        modules = {DEFAULT_MODULE_ID: next(iter(modules.values()))}
    for module_id, weights in modules.items():
        if str(module_id) in per_module:
            per_module[str(module_id)] = {**per_module[str(module_id)], "module": weights}
        elif module_id in per_module:
            per_module[module_id] = {**per_module[module_id], "module": weights}
        else:
            raise KeyError(
                f"set_state: the state's rl_module has {module_id!r}, which this learner does "
                f"not train (its modules: {sorted(map(str, per_module))})"
            )
    for component, key in ((COMPONENT_OPTIMIZER, "optimizer"), (COMPONENT_EXTRA, None)):
        if component not in state:
            continue
        parts = state[component] if multi else {DEFAULT_MODULE_ID: state[component]}
        for module_id, part in parts.items():
            mine = per_module[module_id]
            per_module[module_id] = {**mine, key: part} if key else {**mine, **part}
    return per_module if multi else per_module[DEFAULT_MODULE_ID]
