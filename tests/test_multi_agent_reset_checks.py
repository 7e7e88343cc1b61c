"""`MultiAgentEpisode.check_reset` checks a reset's observations against the agents' spaces as
`Box.contains` (through `SingleAgentEpisode._check_space`) checks each: where every agent has a
`Box` of one shape and dtype it tells them at once, and a reset it refuses raises what the check
of the first observation out of its space raises."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from trainer.env.episode import SingleAgentEpisode
from trainer.env.multi_agent_episode import MultiAgentEpisode


def _boxes(num: int, dtype: type = np.float32) -> dict:
    """`num` agents' Boxes of one shape and dtype with different bounds (separate objects, as
    `make_multi_agent`'s copies have)."""
    return {
        i: gym.spaces.Box(-1.0 - i, 1.0 + i, (3,), dtype) if dtype is np.float32 else
        gym.spaces.Box(-1 - i, 1 + i, (3,), dtype)
        for i in range(num)
    }  # fmt: skip


def _per_agent_error(spaces: dict, observations: dict) -> str | None:
    """The message the per-agent check raises for `observations`, or None if all fit."""
    for agent_id, observation in observations.items():
        try:
            SingleAgentEpisode._check_space(spaces.get(agent_id), observation, "observation")
        except ValueError as error:
            return str(error)
    return None


def _check(spaces: dict, observations: dict) -> str | None:
    try:
        MultiAgentEpisode(observation_space=spaces).check_reset(observations, {})
    except ValueError as error:
        return str(error)
    return None


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_check_reset_accepts_and_refuses_as_each_agents_check(dtype):
    rng = np.random.default_rng(0)
    spaces = _boxes(5, dtype)
    for _ in range(300):
        # Mostly inside the bounds; now and then one agent's value out of its own bounds
        # (inside another agent's), or exactly on a bound.
        observations = {}
        for agent_id, space in spaces.items():
            value = rng.uniform(space.low, space.high)
            if rng.random() < 0.1:
                value[rng.integers(3)] = space.high[0] + rng.choice([0.0, 0.5, 1.0])
            observations[agent_id] = value.astype(dtype)
        assert _check(spaces, observations) == _per_agent_error(spaces, observations)


def test_a_refused_reset_names_the_first_observation_out_of_its_space():
    spaces = _boxes(4)
    observations = {i: np.zeros(3, np.float32) for i in spaces}
    observations[2] = np.full(3, 3.5, np.float32)  # out of agent 2's box (-3, 3)
    observations[3] = np.full(3, 9.0, np.float32)  # out of agent 3's too
    message = _per_agent_error(spaces, observations)
    assert message is not None and "3.5" in message
    with pytest.raises(ValueError, match=re.escape(message)):
        MultiAgentEpisode(observation_space=spaces).check_reset(observations, {})


@pytest.mark.parametrize(
    "case",
    [
        "wrong dtype",
        "wrong shape",
        "a list",
        "nan",
        "agent without space",
        "Box subclass",
        "spaces of two dtypes",
    ],
)
def test_resets_the_boxes_do_not_tell_at_once_are_checked_agent_by_agent(case):
    spaces = _boxes(3)
    observations: dict = {i: np.zeros(3, np.float32) for i in spaces}
    if case == "wrong dtype":
        observations[1] = np.zeros(3, np.float64)
    elif case == "wrong shape":
        observations[1] = np.zeros(4, np.float32)
    elif case == "a list":
        observations[1] = [0.0, 0.0, 0.0]
    elif case == "nan":
        observations[1] = np.array([0.0, np.nan, 0.0], np.float32)
    elif case == "agent without space":
        observations["other"] = np.full(3, 100.0, np.float32)
    elif case == "Box subclass":

        class AnyBox(gym.spaces.Box):
            def contains(self, x):  # type: ignore[no-untyped-def]
                return True

        spaces[1] = AnyBox(-1.0, 1.0, (3,), np.float32)
        observations[1] = np.full(3, 5.0, np.float32)
    elif case == "spaces of two dtypes":
        spaces[1] = gym.spaces.Box(-(2**62), 2**62, (3,), np.int64)
        observations[1] = np.full(3, 2**62, np.int64)
    assert _check(spaces, observations) == _per_agent_error(spaces, observations)
