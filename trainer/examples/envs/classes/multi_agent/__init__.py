"""RLlib's multi-agent example envs (`ray.rllib.examples.envs.classes.multi_agent`): importable,
refused when constructed (multi-agent envs are not supported yet; see
`trainer.examples.envs.classes._multi_agent_unsupported`). The single-agent bandit envs of this
package (`bandit_envs_discrete`, `bandit_envs_recommender_system`) run."""

# `make_multi_agent` is importable from here, as in RLlib (whose package imports it too).
from trainer.examples.envs.classes._multi_agent_unsupported import (  # noqa: F401
    MULTI_AGENT_UNSUPPORTED,
    make_multi_agent,
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

MultiAgentCartPole = make_multi_agent("CartPole-v1")
MultiAgentMountainCar = make_multi_agent("MountainCarContinuous-v0")
MultiAgentPendulum = make_multi_agent("Pendulum-v1")
MultiAgentStatelessCartPole = make_multi_agent("StatelessCartPole")
MultiAgentCartPoleWithDictObservationSpace = make_multi_agent(
    "CartPoleWithDictObservationSpace")
MultiAgentNestedSpaceRepeatAfterMeEnv = make_multi_agent("NestedSpaceRepeatAfterMeEnv")
