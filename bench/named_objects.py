"""What a shared named counter costs when every env step of 2 EnvRunners increments it (the
advanced-API doc's global coordination example), against the same sampling without a counter,
measured in the same run: env steps per second of `EnvRunnerGroup.sample` on CartPole-v1, with
`counter.inc(1)` (waits for each call) and with `counter.inc.remote(1)` (Ray's spelling, does not
wait; each runner waits for its calls before it answers). Also checks the count is exact, and
times starting the server (the first `create_named_object`).

Run: python bench/named_objects.py [--steps 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

from trainer import PPOConfig, create_named_object, get_named_object, shutdown_named_objects


class Counter:
    def __init__(self):
        self.count = 0

    def inc(self, n):
        self.count += n

    def get(self):
        return self.count


class CountingCartPole(gym.Wrapper):
    def __init__(self, config):
        super().__init__(gym.make("CartPole-v1"))
        self.mode = config.get("mode")
        self.counter = get_named_object("global_counter") if self.mode else None

    def step(self, action):
        if self.mode == "wait":
            self.counter.inc(1)
        elif self.mode == "remote":
            self.counter.inc.remote(1)
        return self.env.step(action)


def steps_per_s(mode: str | None, steps: int) -> tuple[float, int, int]:
    """(env steps per second, steps sampled, counter value)."""
    counter = create_named_object("global_counter", Counter) if mode else None
    config = (
        PPOConfig()
        .environment(CountingCartPole, env_config={"mode": mode})
        .env_runners(num_env_runners=2, num_envs_per_env_runner=4)
    )
    with config.build() as algo:
        group = algo.env_runner_group
        group.sample(min_env_steps=2000)  # warm up
        start_count = counter.get() if counter else 0
        start = time.perf_counter()
        episodes, _ = group.sample(min_env_steps=steps)
        elapsed = time.perf_counter() - start
        sampled = sum(len(ep) for ep in episodes)
        count = counter.get() - start_count if counter else sampled
    shutdown_named_objects()
    return sampled / elapsed, sampled, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    create_named_object("probe", Counter)
    print(f"server start (first create_named_object): {time.perf_counter() - start:.3f} s")
    shutdown_named_objects()

    rates: dict[str, list[float]] = {"none": [], "wait": [], "remote": []}
    for _ in range(args.repeats):
        for mode in rates:
            rate, sampled, count = steps_per_s(None if mode == "none" else mode, args.steps)
            assert count == sampled, f"{mode}: counted {count} of {sampled} steps"
            rates[mode].append(rate)
    baseline = statistics.median(rates["none"])
    print(f"no counter: {baseline:,.0f} env steps/s (median of {args.repeats})")
    for mode, label in (("wait", "counter.inc(1)"), ("remote", "counter.inc.remote(1)")):
        rate = statistics.median(rates[mode])
        print(
            f"{label:>22}: {rate:,.0f} env steps/s = {rate / baseline:.2f} of the baseline; "
            "count exact"
        )


if __name__ == "__main__":
    main()
