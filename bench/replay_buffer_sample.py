"""DQN's replay path on a full 50k-step CartPole buffer: microseconds per call of
- `add()` of a one-step chunk of an ongoing episode (what each DQN training step adds),
- `sample_transitions(32, ...)` + `update_priorities()` (what each DQN update draws),
- `sample(32, ..., sample_episodes=True)` (RLlib's episode list, for comparison),
for the prioritized and the uniform buffer, n_step 1 and 3. Medians of 5 runs of 200 calls.

Run: python bench/replay_buffer_sample.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from replay_buffer_state import NUM_STEPS, fill

from trainer.env.episode import SingleAgentEpisode
from trainer.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer

CALLS = 200


def median_us(func, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(CALLS):
            func()
        times.append((time.perf_counter() - start) / CALLS * 1e6)
    return statistics.median(times)


def one_step_chunks(count: int) -> list[SingleAgentEpisode]:
    """`count` successive one-step chunks of one ongoing episode."""
    chunks = []
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.zeros(4, np.float32))
    for t in range(count):
        episode.add_env_step(np.full(4, t + 1, np.float32), t % 2, 1.0)
        chunks.append(episode)
        episode = episode.cut()
    return chunks


def main() -> None:
    for cls in (PrioritizedEpisodeReplayBuffer, EpisodeReplayBuffer):
        buffer = cls(capacity=NUM_STEPS, seed=0)
        fill(buffer)
        chunks = iter(one_step_chunks(5 * CALLS))
        add_us = median_us(lambda buffer=buffer, chunks=chunks: buffer.add(next(chunks)))
        print(f"{cls.__name__}: {len(buffer)} steps in {buffer.get_num_episodes()} episodes")
        print(f"  add() of a one-step chunk:                      {add_us:8.1f} us")
        prioritized = isinstance(buffer, PrioritizedEpisodeReplayBuffer)
        for n_step in (1, 3):

            def transitions(buffer=buffer, n_step=n_step, prioritized=prioritized):
                buffer.sample_transitions(32, n_step=n_step, gamma=0.99, beta=0.4)
                if prioritized:
                    buffer.update_priorities(np.random.random(32))

            def episodes(buffer=buffer, n_step=n_step, prioritized=prioritized):
                buffer.sample(32, n_step=n_step, gamma=0.99, beta=0.4, sample_episodes=True)
                if prioritized:
                    buffer.update_priorities(np.random.random(32))

            print(
                f"  n_step={n_step}: sample_transitions(32) + update: "
                f"{median_us(transitions):8.1f} us;  sample(32, sample_episodes=True) + "
                f"update: {median_us(episodes):8.1f} us"
            )


if __name__ == "__main__":
    main()
