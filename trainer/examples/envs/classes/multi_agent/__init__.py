"""RLlib's multi-agent example envs (`ray.rllib.examples.envs.classes.multi_agent`): importable,
refused when constructed (multi-agent envs are not supported yet; see
`trainer.examples.envs.classes._multi_agent_unsupported`). The single-agent bandit envs of this
package (`bandit_envs_discrete`, `bandit_envs_recommender_system`) run."""

# `make_multi_agent` is importable from here, as in RLlib (whose package imports it too).
from trainer.examples.envs.classes._multi_agent_unsupported import (  # noqa: F401
    MULTI_AGENT_UNSUPPORTED,
    make_multi_agent,
    named_multi_agent_env,
)
from trainer.examples.envs.classes.multi_agent.guess_the_number_game import GuessTheNumberGame
from trainer.examples.envs.classes.multi_agent.two_step_game import (
    TwoStepGame,
    TwoStepGameWithGroupedAgents,
)

__all__ = [
    "GuessTheNumberGame",
    "TwoStepGame",
    "TwoStepGameWithGroupedAgents",
]

MultiAgentCartPole = named_multi_agent_env("MultiAgentCartPole", "CartPole-v1")
MultiAgentMountainCar = named_multi_agent_env("MultiAgentMountainCar", "MountainCarContinuous-v0")
MultiAgentPendulum = named_multi_agent_env("MultiAgentPendulum", "Pendulum-v1")
MultiAgentStatelessCartPole = named_multi_agent_env(
    "MultiAgentStatelessCartPole", "StatelessCartPole"
)
MultiAgentCartPoleWithDictObservationSpace = named_multi_agent_env(
    "MultiAgentCartPoleWithDictObservationSpace", "CartPoleWithDictObservationSpace"
)
MultiAgentNestedSpaceRepeatAfterMeEnv = named_multi_agent_env(
    "MultiAgentNestedSpaceRepeatAfterMeEnv", "NestedSpaceRepeatAfterMeEnv"
)
