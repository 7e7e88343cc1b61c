"""PPO on CartPole-v1 under chaos: every iteration a random EnvRunner is SIGKILLed at a random
moment, and every env step crashes with probability 0.001 (`trainer.testing.FaultInjectionEnv`,
re-created in place with `restart_failed_sub_environments=True`). Training must still reach
`episode_return_mean >= 450`, with one runner restart per kill and no orphan processes.

Settings: RLlib's tuned example (as bench/cartpole_ppo.py), 2 EnvRunners. Baseline, measured in
the same run: the same training (same seed) without faults. Prints the wall time of both and
their ratio, kills and restarts, sub-env restarts, and the time from each kill to the restarted
runner's first env step (wall clock across processes).

Target (issue 6): reaches 450; restarts == kills; no orphans; median kill-to-sampling < 1 s.
A kill drawn later than the iteration lasted happens right after it, so every iteration has one.

With `--backend ray` (issue 19) the EnvRunners are Ray actors on a local Ray instance (or the
cluster at `--ray-address`), the baseline too; kills alternate between `ray.kill` of the actor
and SIGKILL of its process, and "no orphans" means every actor the algorithm had is dead after
`stop()`. Target: reaches 450, restarts == kills.

Run: python bench/chaos.py [--seed 0] [--backend processes|ray] [--ray-address ADDRESS]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time

from callbacks import RLlibCallback
from trainer import PPOConfig
from trainer.testing import FaultInjectionEnv, assert_no_env_runner_processes, kill_env_runner

MAX_ITERATIONS = 150


class FirstStepAfterRestart(RLlibCallback):
    """In a restarted runner process: appends "index time" to `path` at its first env step."""

    path = ""

    def __init__(self):
        self.reported = False

    def on_episode_step(self, *, env_runner, **kwargs):
        if not self.reported and env_runner.env_context.recreated_worker:
            self.reported = True
            with open(self.path, "a") as handle:
                handle.write(f"{env_runner.worker_index} {time.time()}\n")


def config(seed: int, chaos: bool, backend: str) -> PPOConfig:
    config = (
        PPOConfig()
        .env_runners(num_env_runners=2, backend=backend)
        .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01)
        .rl_module(
            model_config={
                "fcnet_hiddens": [32],
                "fcnet_activation": "linear",
                "vf_share_layers": True,
            }
        )
        .debugging(seed=seed)
    )
    if not chaos:
        return config.environment("CartPole-v1")
    return (
        config.environment(FaultInjectionEnv, env_config={"env": "CartPole-v1", "p_crash": 0.001})
        .fault_tolerance(restart_failed_sub_environments=True)
        .callbacks(FirstStepAfterRestart)
    )


def kill_runner(algo, index: int, how: str) -> int:
    """Kills EnvRunner `index`: "signal" SIGKILLs its process, "ray" is `ray.kill` of its actor.
    Returns its pid; raises ValueError if it is not running (being restarted)."""
    if how == "signal":
        return kill_env_runner(algo, index)
    import ray

    handle = algo.env_runner_group.remote_runner(index)
    if not handle.is_alive():
        raise ValueError(f"EnvRunner {index} is not running")
    ray.kill(handle.actor)
    return handle.pid


def wait_until_dead(handle, timeout: float = 5.0) -> None:
    if hasattr(handle, "process"):
        handle.process.wait(timeout=timeout)
        return
    deadline = time.monotonic() + timeout
    while handle.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)


def assert_no_actors_alive(actors: list) -> None:
    import ray

    for actor in actors:
        try:
            ray.get(actor.answer.remote(None), timeout=30)
        except ray.exceptions.RayActorError:
            continue
        raise AssertionError(f"an actor of the algorithm is still alive after stop(): {actor}")


def train(seed: int, chaos: bool, backend: str) -> dict:
    rng = random.Random(seed)
    kills: list[tuple[int, float, int]] = []  # (runner index, time, pid)
    ways = ["ray", "signal"] if backend == "ray" else ["signal"]
    actors = []  # every Ray actor the algorithm had (to check none outlives stop())
    start = time.perf_counter()
    algo = config(seed, chaos, backend).build()
    iteration_time = 1.0
    result = {}
    try:
        for _ in range(MAX_ITERATIONS):
            killer = None
            if chaos:
                fired = threading.Event()

                def kill(fired=fired):
                    fired.set()
                    # A runner that is running (not one being restarted right now).
                    while True:
                        index = rng.choice([1, 2])
                        killed_at = time.time()
                        try:
                            if backend == "ray":
                                actors.append(algo.env_runner_group.remote_runner(index).actor)
                            how = ways[len(kills) % len(ways)]
                            kills.append((index, killed_at, kill_runner(algo, index, how)))
                            return
                        except ValueError:
                            time.sleep(0.01)

                killer = threading.Timer(rng.uniform(0, iteration_time), kill)
                killer.start()
            result = algo.train()
            iteration_time = result["time_this_iter_s"]
            if killer is not None:
                killer.cancel()
                killer.join()
                if not fired.is_set():
                    kill()  # the iteration was quicker than the drawn moment: kill between
                    #         iterations instead, so every iteration has its kill
            if result["env_runners"]["episode_return_mean"] >= 450:
                break
        group = algo.env_runner_group
        # A kill that landed after the last train() returned: restart it now, as the next
        # train() would, so every kill is accounted for.
        for index, _, pid in kills[-1:]:
            if group.remote_pids()[index] == pid:
                wait_until_dead(group.remote_runner(index))
        group.handle_failures({e.worker_index: e for e in group.collect_exited()})
        restarts = group.num_remote_worker_restarts()
        if backend == "ray":
            actors += [group.remote_runner(i).actor for i in (1, 2)]
    finally:
        algo.stop()
    assert_no_env_runner_processes()
    assert_no_actors_alive(actors)
    return {
        "seconds": time.perf_counter() - start,
        "result": result,
        "kills": kills,
        "restarts": restarts,
    }


def kill_to_first_step(kills: list[tuple[int, float, int]], path: str) -> list[float]:
    """For each kill, seconds until the next first step of a restarted runner of that index."""
    with open(path) as handle:
        steps = [(int(i), float(t)) for i, t in (line.split() for line in handle)]
    delays = []
    for index, killed_at, _ in kills:
        after = [t for i, t in steps if i == index and t > killed_at]
        if after:
            delays.append(min(after) - killed_at)
    return delays


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", choices=["processes", "ray"], default="processes")
    parser.add_argument("--ray-address", default=None)
    args = parser.parse_args()
    if args.backend == "ray":
        import ray

        ray.init(address=args.ray_address, include_dashboard=False, configure_logging=False)
    with tempfile.TemporaryDirectory() as directory:
        FirstStepAfterRestart.path = os.path.join(directory, "first_steps.txt")
        open(FirstStepAfterRestart.path, "w").close()
        baseline = train(args.seed, chaos=False, backend=args.backend)
        chaos = train(args.seed, chaos=True, backend=args.backend)
        delays = kill_to_first_step(chaos["kills"], FirstStepAfterRestart.path)
    result = chaos["result"]
    tolerance = result["fault_tolerance"]
    reached = result["env_runners"]["episode_return_mean"]
    print(f"backend: {args.backend}")
    print(
        f"without faults: {baseline['seconds']:5.1f} s, "
        f"{baseline['result']['training_iteration']} iterations"
    )
    print(
        f"under chaos:    {chaos['seconds']:5.1f} s, {result['training_iteration']} iterations "
        f"({chaos['seconds'] / baseline['seconds']:.2f}x), episode_return_mean {reached:.1f} "
        f"(target >= 450: {'yes' if reached >= 450 else 'NO'})"
    )
    print(
        f"kills {len(chaos['kills'])}, runner restarts {chaos['restarts']} "
        f"(equal: {'yes' if len(chaos['kills']) == chaos['restarts'] else 'NO'}), "
        f"sub-env restarts {tolerance['num_sub_environment_restarts']}, "
        f"env steps lost {tolerance['num_env_steps_lost']}, orphans: none"
    )
    if delays:
        print(
            f"kill -> restarted runner's first env step: median {statistics.median(delays):.2f} s, "
            f"max {max(delays):.2f} s over {len(delays)} kills (target median < "
            f"{'2 s, issue 19' if args.backend == 'ray' else '1 s'})"
        )


if __name__ == "__main__":
    main()
