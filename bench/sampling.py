"""Sampling throughput of one EnvRunner process against a plain loop, measured in the same run,
for 1, 8 and 64 sub-envs per runner, and for gymnasium's numpy-vectorized CartPole.

Baseline: gymnasium's SyncVectorEnv of N CartPole-v1 envs (autoreset NEXT_STEP, as the runner's)
stepped in one loop with the same numpy forward pass (the default 256x256 tanh policy) and
categorical sampling written plainly (softmax, cumulative sum, one uniform per row), no
bookkeeping but counting transitions (a sub-env's autoreset step after its episode ended returns
a reset observation and is no env step, for RLlib as for the runner), with one BLAS thread as the worker processes have (on this machine the default two
threads make the plain loop slower, 51k vs 78k env steps/s at 8 sub-envs, which would flatter the
runner).
Measured: 1 EnvRunner worker process (N envs, the same policy) with an `on_episode_end`
callback, driven through the public API (`env_runner_group.sample`), so the time includes
recording episodes, firing callbacks and shipping the episodes back to the main process.

Each side is measured `--repeats` times, interleaved, and the best of each is compared (as
timeit does: the best run is the one least disturbed by the rest of the machine).

With `gym_env_vectorize_mode="vector_entry_point"` (gymnasium's numpy-vectorized CartPole,
`--vector-entry-point 64 256` sub-envs), the baseline is gymnasium's own vector loop over
`gym.make_vec(..., vectorization_mode="vector_entry_point")` with the same forward pass.

With an env-to-module `MeanStdFilter` (`--mean-std 1 8` sub-envs), the same EnvRunner process
filters every observation; it is measured against the plain loop and against the unfiltered
EnvRunner, all three interleaved in the same run.

Targets: >= 0.9 of the plain loop at 1 and at 8 sub-envs (the "ratio" line is the lower of the
two), >= 0.9 of gymnasium's vector loop at 64 sub-envs ("vector_entry_point ratio") and, with
the MeanStdFilter, >= 0.9 of the plain loop ("mean_std ratio", the lower of 1 and 8 sub-envs).
With what users attach (`--attached 8` sub-envs, a 64x64 tanh policy as a small user's
model, where the runner's own work weighs most): the EnvRunner bare, with a no-op
`on_episode_step` callback, and with an env-to-module `MeanStdFilter`, each against the bare
loop (`BareLoop`: the SyncVectorEnv stepped with the same forward pass and draws and nothing
else in the loop, its autoresets counted outside it; targets >= 0.85, >= 0.85 and >= 0.8,
the "bare-loop ratios" line) and against the plain loop of the same policy; a MultiAgentEnvRunner process on MultiAgentCartPole with as many
agents, all mapped to one module, against the bare single-agent EnvRunner on the same agent
steps; all interleaved in the same run. Targets: each >= 0.9 of the plain loop ("attached
ratio", the lowest), multi-agent >= 0.85 of the single-agent runner ("multi-agent ratio").

With `--framework torch` the EnvRunner samples with RLlib's default torch PPO module (the same
layer sizes), against the same numpy plain loop.
Run: python bench/sampling.py [--steps 40000] [--repeats 5] [--num-envs 1 8 64]
     [--vector-entry-point 64 256] [--mean-std 1 8] [--attached 8] [--framework numpy|torch]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
from threadpoolctl import threadpool_limits

from trainer import PPOConfig
from trainer.algorithms.ppo.module import PolicyModule
from trainer.connectors.env_to_module import MeanStdFilter
from trainer.core.models import SpaceInfo
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

MODEL = {"fcnet_hiddens": [256, 256], "fcnet_activation": "tanh"}
#: The `--attached` rows' policy: a small user's model, where the runner's own work weighs most.
SMALL_MODEL = {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"}


def sync_vector_env(num_envs: int) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1") for _ in range(num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP,
    )


def numpy_vector_env(num_envs: int) -> gym.vector.VectorEnv:
    """gymnasium's own numpy-vectorized CartPole (one env object steps every sub-env)."""
    return gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")


class PlainLoop:
    """The plain sampling loop: `num_envs` sub-envs stepped with the policy's forward pass and
    categorical draws written plainly (`act`), counting transitions and keeping nothing else.
    `run` goes on from where the last call stopped (call it under one BLAS thread). The loops
    with something attached override `module_input` (what the module sees) or `stepped` (after
    each step): the rest of the loop is this one's."""

    def __init__(self, num_envs: int, make_env=sync_vector_env, model=MODEL) -> None:
        self.num_envs = num_envs
        self.env = make_env(num_envs)
        spaces = SpaceInfo.from_spaces(
            self.env.single_observation_space, self.env.single_action_space
        )
        self.module = PolicyModule(spaces, model, seed=0)
        self.rng = np.random.default_rng(0)
        self.obs, _ = self.env.reset(seed=0)
        # The sub-envs whose episode ended in the last step: this step is their autoreset
        # (NEXT_STEP mode), which returns a reset observation and is no transition. The runner
        # does not count it as an env step (nor does RLlib), so neither does the plain loop.
        self.resetting = np.zeros(num_envs, dtype=bool)

    def act(self, observations: np.ndarray) -> np.ndarray:
        """The forward pass over a batch of observations and one categorical draw per row
        (softmax, cumulative sum, one uniform per row)."""
        logits = self.module.dist_inputs(observations.astype(np.float32))
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        cdf = np.cumsum(probs, axis=1)
        return (cdf[:, -1:] * self.rng.random((len(logits), 1)) < cdf).argmax(axis=1)

    def module_input(self, obs: np.ndarray) -> np.ndarray:
        """What the module sees of the vector env's observations: they themselves."""
        return obs

    def stepped(self, resetting: np.ndarray) -> None:
        """After each step (`resetting`: the sub-envs whose step was their autoreset)."""

    def run(self, total_steps: int) -> int:
        """Steps until at least `total_steps` transitions; returns how many."""
        transitions = 0
        obs, resetting, num_envs = self.obs, self.resetting, self.num_envs
        while transitions < total_steps:
            actions = self.act(self.module_input(obs))
            obs, _, terminated, truncated, _ = self.env.step(actions)
            transitions += num_envs - int(np.count_nonzero(resetting))
            self.stepped(resetting)
            resetting = terminated | truncated
        self.obs, self.resetting = obs, resetting
        return transitions

    def close(self) -> None:
        self.env.close()


class BareLoop(PlainLoop):
    """The bare loop: the vector env stepped with the forward pass and draws, and nothing else
    in the loop (no counting, no hooks): the limit of any runner on these envs and this
    policy. Its transitions are counted outside the loop: each sub-env's `reset` is wrapped
    once (an instance attribute, no wrapper layer on `step`) to count the autoresets, each of
    which took a step that is no transition (as the runner counts them)."""

    def __init__(self, num_envs: int, make_env=sync_vector_env, model=MODEL) -> None:
        super().__init__(num_envs, make_env, model)
        self.resets = 0
        for sub_env in self.env.envs:
            sub_env.reset = self._counted(sub_env.reset)

    def _counted(self, reset):
        def counted_reset(**kwargs):
            self.resets += 1
            return reset(**kwargs)

        return counted_reset

    def run(self, total_steps: int) -> int:
        """Steps at least `total_steps` sub-env steps; returns the transitions among them."""
        obs, act, step = self.obs, self.act, self.env.step
        resets_before, num_steps = self.resets, -(-total_steps // self.num_envs)
        for _ in range(num_steps):
            obs = step(act(obs))[0]
        self.obs = obs
        return num_steps * self.num_envs - (self.resets - resets_before)


class StepCallbackLoop(PlainLoop):
    """The plain loop calling a no-op `on_episode_step` for each sub-env that stepped, with
    the keyword arguments RLlib's EnvRunner passes (one dict per sub-env, made once): the
    cost of the calls themselves, the ceiling of any runner that fires them."""

    def __init__(self, num_envs: int, make_env=sync_vector_env, model=MODEL) -> None:
        super().__init__(num_envs, make_env, model)
        self.event_kwargs = [
            {
                "episode": None, "env_runner": None, "metrics_logger": None, "env": self.env,
                "env_index": i, "rl_module": self.module, "worker": None, "base_env": None,
                "prev_episode_chunks": None,
            }
            for i in range(num_envs)
        ]  # fmt: skip

    def stepped(self, resetting: np.ndarray) -> None:
        for kwargs, autoreset in zip(self.event_kwargs, resetting.tolist(), strict=True):
            if not autoreset:
                on_episode_step(**kwargs)


class MeanStdFilterLoop(PlainLoop):
    """The plain loop with a MeanStdFilter written plainly in numpy, as the fewest array
    calls give it: each row normalized by the statistics after its own push (RLlib's
    semantics), from running sums and prefix sums over the step's rows (count, mean and
    sample variance in a dozen numpy calls per step), clipped at 10. The ceiling of any
    numpy filter."""

    def __init__(self, num_envs: int, make_env=sync_vector_env, model=MODEL) -> None:
        super().__init__(num_envs, make_env, model)
        self.width = self.obs.shape[1]
        self.count, self.sums = 0, np.zeros(2 * self.width)  # sum(x), sum(x * x) pushed
        self.places = np.arange(1.0, num_envs + 1.0)[:, None]

    def module_input(self, obs: np.ndarray) -> np.ndarray:
        width = self.width
        x = obs.astype(np.float64)
        running = np.cumsum(np.concatenate([x, x * x], axis=1), axis=0)
        running += self.sums
        n = self.count + self.places
        mean = running[:, :width] / n
        var = (running[:, width:] - running[:, :width] * mean) / np.maximum(n - 1.0, 1.0)
        self.count, self.sums = self.count + self.num_envs, running[-1]
        return np.clip((x - mean) / (np.sqrt(var) + 1e-6), -10.0, 10.0)


class MultiAgentLoop(PlainLoop):
    """The plain multi-agent loop: one MultiAgentCartPole of `num_agents` agents stepped with
    an action dict for the agents that act (RLlib's env: an agent whose pole fell acts no
    more, the episode ends when all have), the same forward pass and draw (`act`) over their
    stacked observations, counting agent steps."""

    def __init__(self, num_agents: int, make_env=None, model=MODEL) -> None:
        self.env = MultiAgentCartPole({"num_agents": num_agents})
        spaces = SpaceInfo.from_spaces(self.env.observation_spaces[0], self.env.action_spaces[0])
        self.module = PolicyModule(spaces, model, seed=0)
        self.rng = np.random.default_rng(0)
        self.obs, _ = self.env.reset(seed=0)

    def run(self, total_steps: int) -> int:
        agent_steps, obs = 0, self.obs
        while agent_steps < total_steps:
            agents = list(obs)
            actions = self.act(np.stack([obs[agent] for agent in agents]))
            action_dict = dict(zip(agents, actions.tolist(), strict=True))
            obs, _, terminated, truncated, _ = self.env.step(action_dict)
            agent_steps += len(agents)
            if terminated["__all__"] or truncated["__all__"]:
                obs, _ = self.env.reset()
            else:
                obs = {a: o for a, o in obs.items() if not (terminated[a] or truncated[a])}
        self.obs = obs
        return agent_steps


def baseline_steps_per_s(
    total_steps: int, num_envs: int, make_env=sync_vector_env, model=MODEL, loop_class=PlainLoop
) -> float:
    with threadpool_limits(1, user_api="blas"):
        loop = loop_class(num_envs, make_env, model)
        start = time.perf_counter()
        transitions = loop.run(total_steps)
        elapsed = time.perf_counter() - start
        loop.close()
    return transitions / elapsed


def on_episode_end(episode, **kwargs):
    episode.custom_data["length"] = len(episode)


def on_episode_step(episode, **kwargs):
    """The no-op per-step callback a user attaches (a custom metric's hook, reading nothing)."""


def mean_std_filter(env, spaces=None, device=None):
    return MeanStdFilter()


def build_runner(
    total_steps: int,
    rounds: int,
    num_envs: int,
    vectorize_mode: str = "SYNC",
    env_to_module_connector=None,
    framework: str = "numpy",
    *,
    model=MODEL,
    step_callback: bool = False,
    num_agents: int = 0,
):
    """One EnvRunner process sampling `num_envs` CartPoles (or, with `num_agents`, one
    MultiAgentCartPole of that many agents mapped to one module) in rounds of
    `total_steps // rounds` env steps."""
    callbacks = {"on_episode_end": on_episode_end}
    if step_callback:
        callbacks["on_episode_step"] = on_episode_step
    config = PPOConfig().framework(framework)
    if num_agents:
        config = config.environment(
            MultiAgentCartPole, env_config={"num_agents": num_agents}
        ).multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, *a, **kw: "p0")
    else:
        config = config.environment("CartPole-v1")
    algo = (
        config.env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=num_envs,
            rollout_fragment_length=total_steps // rounds // num_envs,
            gym_env_vectorize_mode=vectorize_mode,
            env_to_module_connector=env_to_module_connector,
        )
        # One sampling round is one train batch (PPO's validate() checks that they fit).
        .training(train_batch_size=total_steps // rounds // num_envs * num_envs)
        .rl_module(model_config=model)
        .callbacks(**callbacks)
        .debugging(seed=0)
        .build()
    )
    algo.env_runner_group.sample(min_env_steps=num_envs)  # warm up the worker
    return algo


def env_runner_steps_per_s(algo, total_steps: int, rounds: int = 4) -> float:
    start = time.perf_counter()
    sampled = 0
    for _ in range(rounds):
        episodes, _ = algo.env_runner_group.sample(min_env_steps=total_steps // rounds)
        sampled += sum(
            ep.agent_steps() if hasattr(ep, "agent_steps") else len(ep) for ep in episodes
        )
    return sampled / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40_000)
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="measurements of each side, interleaved; the best of each counts",
    )
    parser.add_argument("--num-envs", type=int, nargs="*", default=[1, 8, 64])
    parser.add_argument(
        "--vector-entry-point",
        type=int,
        nargs="*",
        default=[64, 256],
        help="sub-env counts of gymnasium's numpy-vectorized CartPole (none: skip)",
    )
    parser.add_argument(
        "--mean-std",
        type=int,
        nargs="*",
        default=[1, 8],
        help="sub-env counts of the run with a MeanStdFilter connector (none: skip)",
    )
    parser.add_argument(
        "--attached",
        type=int,
        nargs="*",
        default=[8],
        help="sub-env (and agent) counts of the rows with what users attach (none: skip)",
    )
    parser.add_argument(
        "--framework",
        choices=["numpy", "torch"],
        default="numpy",
        help="the EnvRunners' module: the numpy PolicyModule, or RLlib's default torch module "
        "(the plain loop always runs the numpy forward pass)",
    )
    args = parser.parse_args()
    ratios = []
    for num_envs in args.num_envs:
        algo = build_runner(max(args.steps, num_envs * 40), 4, num_envs, framework=args.framework)
        base_runs, our_runs = [], []
        for _ in range(args.repeats):
            base_runs.append(baseline_steps_per_s(args.steps, num_envs))
            our_runs.append(env_runner_steps_per_s(algo, args.steps))
        algo.stop()
        base, ours = max(base_runs), max(our_runs)
        if num_envs in (1, 8):
            ratios.append(ours / base)
        print(
            f"{num_envs} sub-env(s): plain loop {base:7.0f} env steps/s, EnvRunner process "
            f"(on_episode_end callback) {ours:7.0f} env steps/s: {ours / base:.2f} of the "
            "plain loop",
            flush=True,
        )
    if ratios:
        print(f"ratio {min(ratios):.2f}  (the lower of 1 and 8 sub-envs; target >= 0.9)")
    vector_ratios = {}
    for num_envs in args.vector_entry_point:
        # gymnasium's vector env of one numpy CartPole: the runner steps it as one env.
        steps = max(args.steps, num_envs * 40)
        algo = build_runner(steps, 4, num_envs, "vector_entry_point", framework=args.framework)
        base_runs, our_runs = [], []
        for _ in range(args.repeats):
            base_runs.append(baseline_steps_per_s(steps, num_envs, numpy_vector_env))
            our_runs.append(env_runner_steps_per_s(algo, steps))
        algo.stop()
        base, ours = max(base_runs), max(our_runs)
        vector_ratios[num_envs] = ours / base
        print(
            f"vector_entry_point, {num_envs} sub-envs: gymnasium's vector loop {base:8.0f} env "
            f"steps/s, EnvRunner process (on_episode_end callback) {ours:8.0f} env steps/s: "
            f"{ours / base:.2f} of gymnasium's loop",
            flush=True,
        )
    if 64 in vector_ratios:
        print(f"vector_entry_point ratio {vector_ratios[64]:.2f}  (64 sub-envs; target >= 0.9)")
    filter_ratios = []
    for num_envs in args.mean_std:
        steps = max(args.steps, num_envs * 40)
        plain = build_runner(steps, 4, num_envs, framework=args.framework)
        filtered = build_runner(
            steps, 4, num_envs, env_to_module_connector=mean_std_filter, framework=args.framework
        )
        base_runs, plain_runs, filter_runs = [], [], []
        for _ in range(args.repeats):
            base_runs.append(baseline_steps_per_s(steps, num_envs))
            plain_runs.append(env_runner_steps_per_s(plain, steps))
            filter_runs.append(env_runner_steps_per_s(filtered, steps))
        plain.stop()
        filtered.stop()
        base, ours, with_filter = max(base_runs), max(plain_runs), max(filter_runs)
        filter_ratios.append(with_filter / base)
        print(
            f"MeanStdFilter, {num_envs} sub-env(s): plain loop {base:7.0f} env steps/s, "
            f"EnvRunner process {ours:7.0f}, with MeanStdFilter {with_filter:7.0f} env steps/s: "
            f"{with_filter / base:.2f} of the plain loop, {with_filter / ours:.2f} of the "
            "EnvRunner without it",
            flush=True,
        )
    if filter_ratios:
        print(
            f"mean_std ratio {min(filter_ratios):.2f}  (the lower of the MeanStdFilter runs "
            "against the plain loop; target >= 0.9)"
        )

    if args.attached:
        attached_rows(args.attached, args.steps, args.repeats, args.framework)


#: The `--attached` cases' own plain loops: the plain loop with the same thing attached
#: (written plainly), the ceiling of any runner with it.
ATTACHED_PLAIN_LOOPS = {
    "on_episode_step callback": ("the plain loop with the calls", StepCallbackLoop),
    "MeanStdFilter": ("the plain loop with a numpy MeanStdFilter", MeanStdFilterLoop),
    "multi-agent": ("the plain multi-agent loop", MultiAgentLoop),
}


#: The `--attached` cases' targets against the bare loop.
BARE_LOOP_TARGETS = {"bare": 0.85, "on_episode_step callback": 0.85, "MeanStdFilter": 0.8}


def attached_rows(counts: list[int], steps: int, repeats: int, framework: str) -> None:
    """The EnvRunner with what users attach, against the plain loop and against the plain
    loop with the same thing attached (see the module docstring); prints a row per case and
    the lowest ratios."""
    lowest, multi_agent_ratios, own_ratios = [], [], {}
    of_bare: dict[str, list[float]] = {}
    for num_envs in counts:
        steps = max(steps, num_envs * 40)
        cases = {
            "bare": build_runner(steps, 4, num_envs, framework=framework, model=SMALL_MODEL),
            "on_episode_step callback": build_runner(
                steps, 4, num_envs, framework=framework, model=SMALL_MODEL, step_callback=True
            ),
            "MeanStdFilter": build_runner(
                steps,
                4,
                num_envs,
                env_to_module_connector=mean_std_filter,
                framework=framework,
                model=SMALL_MODEL,
            ),
            "multi-agent": build_runner(
                steps, 4, 1, framework=framework, model=SMALL_MODEL, num_agents=num_envs
            ),
        }
        loops = {"bare": BareLoop, "plain": PlainLoop} | {
            name: loop_class for name, (_, loop_class) in ATTACHED_PLAIN_LOOPS.items()
        }
        runs: dict[str, list[float]] = {
            name: [] for name in [*cases, *(f"{n} loop" for n in loops)]
        }
        try:
            for _ in range(repeats):
                for name, loop_class in loops.items():
                    runs[f"{name} loop"].append(
                        baseline_steps_per_s(
                            steps, num_envs, model=SMALL_MODEL, loop_class=loop_class
                        )
                    )
                for name, algo in cases.items():
                    runs[name].append(env_runner_steps_per_s(algo, steps))
        finally:
            for algo in cases.values():
                algo.stop()
        best = {name: max(rates) for name, rates in runs.items()}
        base, bare = best["plain loop"], best["bare loop"]
        for name in cases:
            ratio = best[name] / base
            unit = "agent" if name == "multi-agent" else "env"
            label = f"multi-agent, {num_envs} agents" if name == "multi-agent" else name
            line = (
                f"attached, {num_envs} sub-envs, 64x64 policy: {label}: {best[name]:7.0f} "
                f"{unit} steps/s, {best[name] / bare:.2f} of the bare loop ({bare:7.0f}), "
                f"{ratio:.2f} of the plain loop ({base:7.0f})"
            )
            if name in ATTACHED_PLAIN_LOOPS:
                words, _ = ATTACHED_PLAIN_LOOPS[name]
                own = best[f"{name} loop"]
                own_ratios[name] = best[name] / own
                line += (
                    f", {best[name] / own:.2f} of {words} ({own:7.0f} {unit} steps/s, itself "
                    f"{own / base:.2f} of the plain loop)"
                )
            if name == "multi-agent":
                multi_agent_ratios.append(best[name] / best["bare"])
                line += f", {best[name] / best['bare']:.2f} of the bare single-agent runner"
            else:
                lowest.append(ratio)
                of_bare.setdefault(name, []).append(best[name] / bare)
            print(line, flush=True)
    print(
        "bare-loop ratios "
        + ", ".join(
            f"{name} {min(of_bare[name]):.2f} (target >= {target})"
            for name, target in BARE_LOOP_TARGETS.items()
        )
        + "  (each case against the bare loop: env steps, forward pass and draws alone)"
    )
    print(
        f"attached ratio {min(lowest):.2f}  (the lowest of bare, on_episode_step and "
        "MeanStdFilter against the plain loop; target >= 0.9)"
    )
    print(
        f"multi-agent ratio {min(multi_agent_ratios):.2f}  (multi-agent against the bare "
        "single-agent runner on the same agent steps; target >= 0.85)"
    )
    print(
        "attached against their own plain loops: "
        + ", ".join(f"{name} {ratio:.2f}" for name, ratio in own_ratios.items())
        + "  (each case against the plain loop with the same thing attached)"
    )


if __name__ == "__main__":
    main()
