"""`ProtobufCartPoleObservationDecoder`: an env-to-module connector piece that turns
`CartPoleWithProtobufObservationSpace`'s serialized observations back into CartPole's four
numbers (RLlib's example connector)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.connector_v2 import ConnectorV2
from trainer.examples.envs.classes.utils.cartpole_observations_proto import CartPoleObservation


class ProtobufCartPoleObservationDecoder(ConnectorV2):
    """Decodes each episode's last observation (a uint8 array holding a `CartPoleObservation`
    message) into CartPole-v1's float32 `[x, x_veloc, angle, angle_veloc]`, in place, so the
    module sees (and the learner trains on) plain CartPole observations.

    Add it through the config:

        config.env_runners(
            env_to_module_connector=lambda env, spaces, device:
                ProtobufCartPoleObservationDecoder())

    Input space: a 1D uint8 Box (the bytes). Output space: `Box(-inf, inf, (4,), float32)`.
    """

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space:
        if not (
            isinstance(input_observation_space, gym.spaces.Box)
            and len(input_observation_space.shape) == 1
            and input_observation_space.dtype == np.uint8
        ):
            raise ValueError(
                f"ProtobufCartPoleObservationDecoder: the observation space is "
                f"{input_observation_space}; it decodes serialized protobuf messages, a 1D "
                "uint8 Box (e.g. CartPoleWithProtobufObservationSpace's)"
            )
        return gym.spaces.Box(float("-inf"), float("inf"), (4,), np.float32)

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list,
        explore: bool | None = None,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        for episode in self.single_agent_episode_iterator(episodes=episodes):
            message = CartPoleObservation()
            message.ParseFromString(np.asarray(episode.get_observations(-1)).tobytes())
            decoded = np.array(
                [message.x_pos, message.x_veloc, message.angle_pos, message.angle_veloc], np.float32
            )
            episode.set_observations(new_data=decoded, at_indices=-1)
        return batch
