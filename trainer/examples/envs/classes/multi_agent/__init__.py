"""RLlib's multi-agent example envs (`ray.rllib.examples.envs.classes.multi_agent`).

The `MultiAgent*` classes are `make_multi_agent` of single-agent envs: built as
`cls({"num_agents": n, ...})`, agents 0..n-1. The single-agent bandit envs of this package
(`bandit_envs_discrete`, `bandit_envs_recommender_system`) are here too, as in RLlib.
"""

from __future__ import annotations

from typing import TypeVar

from trainer.env.multi_agent_env import MultiAgentEnv, make_multi_agent
from trainer.examples.envs.classes.cartpole_with_dict_observation_space import (
    CartPoleWithDictObservationSpace,
)
from trainer.examples.envs.classes.multi_agent.guess_the_number_game import GuessTheNumberGame
from trainer.examples.envs.classes.multi_agent.two_step_game import (
    TwoStepGame,
    TwoStepGameWithGroupedAgents,
)
from trainer.examples.envs.classes.nested_space_repeat_after_me_env import (
    NestedSpaceRepeatAfterMeEnv,
)
from trainer.examples.envs.classes.stateless_cartpole import StatelessCartPole

# As RLlib's package: these three are its `__all__` (kept for backward compatibility there).
__all__ = [
    "GuessTheNumberGame",
    "TwoStepGame",
    "TwoStepGameWithGroupedAgents",
]


EnvClass = TypeVar("EnvClass", bound=type[MultiAgentEnv])


def module_level_env_class(cls: EnvClass, name: str, module: str = __name__) -> EnvClass:
    """`cls` (a `make_multi_agent` class) named `name` as an attribute of `module`: its errors
    and reprs say `name`, and it pickles by reference (worker processes import it) instead of
    by value."""
    cls.__name__ = cls.__qualname__ = name
    cls.__module__ = module
    return cls


MultiAgentCartPole = module_level_env_class(make_multi_agent("CartPole-v1"), "MultiAgentCartPole")
MultiAgentMountainCar = module_level_env_class(
    make_multi_agent("MountainCarContinuous-v0"), "MultiAgentMountainCar"
)
MultiAgentPendulum = module_level_env_class(make_multi_agent("Pendulum-v1"), "MultiAgentPendulum")
MultiAgentStatelessCartPole = module_level_env_class(
    make_multi_agent(lambda config: StatelessCartPole(config)), "MultiAgentStatelessCartPole"
)
MultiAgentCartPoleWithDictObservationSpace = module_level_env_class(
    make_multi_agent(lambda config: CartPoleWithDictObservationSpace(config)),
    "MultiAgentCartPoleWithDictObservationSpace",
)
MultiAgentNestedSpaceRepeatAfterMeEnv = module_level_env_class(
    make_multi_agent(lambda config: NestedSpaceRepeatAfterMeEnv(config)),
    "MultiAgentNestedSpaceRepeatAfterMeEnv",
)
