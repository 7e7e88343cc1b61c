"""`CartPoleWithProtobufObservationSpace`: CartPole whose observations are serialized protobuf
messages (RLlib's example env). Decode them with `ProtobufCartPoleObservationDecoder`
(`trainer.examples.connectors.classes.protobuf_cartpole_observation_decoder`). Needs `protobuf`."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv

from trainer.examples.envs.classes.utils.cartpole_observations_proto import CartPoleObservation


class CartPoleWithProtobufObservationSpace(CartPoleEnv):
    """CartPole whose observation is a `CartPoleObservation` message's bytes, as a uint8 array:
    `Box(0, 255, (36,), uint8)` (four tagged doubles). A connector or wrapper has to turn it back
    into numbers before a network can use it.

    As in RLlib, the length is that of a message with all four values non-zero: proto3 leaves a
    field that is exactly 0.0 out, so such an observation would be shorter.
    """

    def __init__(self, config: dict | None = None):
        super().__init__()
        length = len(self._to_protobuf(np.ones(4)))
        self.observation_space = gym.spaces.Box(0, 255, (length,), np.uint8)

    def reset(self, **kwargs):
        observation, info = super().reset(**kwargs)
        return self._to_protobuf(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return self._to_protobuf(observation), reward, terminated, truncated, info

    @staticmethod
    def _to_protobuf(observation: np.ndarray) -> np.ndarray:
        x_pos, x_veloc, angle_pos, angle_veloc = (float(v) for v in observation)
        message = CartPoleObservation(
            x_pos=x_pos, x_veloc=x_veloc, angle_pos=angle_pos, angle_veloc=angle_veloc
        )
        return np.frombuffer(message.SerializeToString(), np.uint8)
