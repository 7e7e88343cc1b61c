"""`local_replay_buffer.get_state()` + `ormsgpack.packb` of a 50k-transition CartPole buffer, as
the callbacks doc's example does on every second iteration.

The buffer is filled with real CartPole-v1 episodes (random actions). Baseline, measured in the
same run: copying the stored episodes' raw arrays (`np.copy` of every column of every episode),
the least any snapshot of the data costs. Prints milliseconds of each and the ratio.

Target (issue 3): get_state() + packb under 50 ms.   Run: python bench/replay_buffer_state.py
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import ormsgpack

from trainer.env.episode import SingleAgentEpisode
from trainer.replay_buffers import PrioritizedEpisodeReplayBuffer

NUM_STEPS = 50_000


def fill(buffer: PrioritizedEpisodeReplayBuffer) -> None:
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    while len(buffer) < NUM_STEPS:
        episode = SingleAgentEpisode()
        episode.add_env_reset(obs)
        done = False
        while not done:
            action = int(rng.integers(2))
            obs, reward, terminated, truncated, _ = env.step(action)
            episode.add_env_step(
                obs, action, float(reward), terminated=terminated, truncated=truncated
            )
            done = terminated or truncated
        buffer.add([episode.to_numpy()])
        obs, _ = env.reset()


def best_ms(func, repeats: int = 7) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    buffer = PrioritizedEpisodeReplayBuffer(capacity=NUM_STEPS, seed=0)
    fill(buffer)
    columns = [
        column.data
        for episode in buffer.episodes
        for column in (episode.observations, episode.actions, episode.rewards)
    ]
    baseline = best_ms(lambda: [np.copy(data) for data in columns])
    packed = ormsgpack.packb(buffer.get_state(), option=ormsgpack.OPT_SERIALIZE_NUMPY)
    ours = best_ms(
        lambda: ormsgpack.packb(buffer.get_state(), option=ormsgpack.OPT_SERIALIZE_NUMPY)
    )
    print(
        f"buffer: {len(buffer)} transitions in {buffer.get_num_episodes()} episodes, packed "
        f"{len(packed) / 1e6:.1f} MB"
    )
    print(f"baseline  copy of the raw arrays:      {baseline:6.2f} ms")
    print(
        f"get_state() + ormsgpack.packb:         {ours:6.2f} ms  ({ours / baseline:.1f}x the "
        "copy; target < 50 ms)"
    )


if __name__ == "__main__":
    main()
