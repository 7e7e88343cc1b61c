"""RLlib 2.60's test-utility checks (`ray.rllib.utils.test_utils`) on this project's Algorithm
and result dicts: stop and success rules, the shape of `train()` results, action computation,
reproducibility of seeded runs, batch identity and the spaces an algorithm supports.

Re-exported by `trainer.testing`, where RLlib's scripts and tests import them from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete, MultiBinary, MultiDiscrete
from gymnasium.spaces import Dict as GymDict
from gymnasium.spaces import Tuple as GymTuple

from trainer.examples.envs.classes.random_env import RandomEnv
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    EVALUATION_RESULTS,
    FAULT_TOLERANCE_STATS,
    LEARNER_RESULTS,
    TIMERS,
    TRAINING_ITERATION,
)
from trainer.metrics.stats import Stats, StatsBase
from trainer.result_grid import metric_value

DEFAULT_MODULE_ID = "default_policy"
ALL_MODULES = "__all_modules__"
#: RLlib's metric of how many gradient updates the trained policy is ahead of the sampler's.
DIFF_NUM_GRAD_UPDATES_VS_SAMPLER_POLICY = "diff_num_grad_updates_vs_sampler_policy"


def _result_rows(tune_results: Any) -> list[Any]:
    """The per-iteration rows of `tune_results`: a ResultGrid-like object (`get_dataframe()`),
    a result dict, or an iterable of result dicts (or of objects with `.metrics`)."""
    if hasattr(tune_results, "get_dataframe"):
        return [
            row.to_dict() if hasattr(row, "to_dict") else row
            for _, row in tune_results.get_dataframe().iterrows()
        ]
    if isinstance(tune_results, Mapping):
        return [tune_results]
    if isinstance(tune_results, Iterable):
        return [getattr(item, "metrics", item) for item in tune_results]
    raise TypeError(
        f"check_learning_achieved(tune_results={type(tune_results).__name__}): "
        "give a ResultGrid, a result dict or a list of result dicts"
    )


def _row_value(row: Mapping, key: str) -> Any:
    # Dataframe rows spell nested keys flat ("env_runners/episode_return_mean").
    return metric_value(row, key)


def check_learning_achieved(
    tune_results: Any,
    min_value: float,
    evaluation: bool | None = None,
    metric: str = f"{ENV_RUNNER_RESULTS}/episode_return_mean",
) -> None:
    """Raises ValueError unless the best value of `metric` over all rows of `tune_results`
    reaches `min_value`. `evaluation=True` reads `evaluation/<metric>`, False `<metric>`,
    None the evaluation value where a row has one."""
    recorded = []
    for row in _result_rows(tune_results):
        eval_value = _row_value(row, f"{EVALUATION_RESULTS}/{metric}")
        if evaluation or (evaluation is None and eval_value is not None):
            recorded.append(eval_value)
        else:
            recorded.append(_row_value(row, metric))
    values = [v for v in recorded if v is not None and not np.isnan(v)]
    if not values or max(values) < min_value:
        raise ValueError(f"`{metric}` of {min_value} not reached!")
    print(f"`{metric}` of {min_value} reached! ok")


def check_off_policyness(
    results: dict, upper_limit: float, lower_limit: float = 0.0
) -> float | None:
    """The off-policy'ness of an update (how many gradient updates the trained module is ahead
    of the one that sampled), checked to lie in [lower_limit, upper_limit] (AssertionError
    otherwise). Read from `learners/default_policy/diff_num_grad_updates_vs_sampler_policy`
    (or RLlib's old `info/learner/default_policy/...`); None when the results hold no such
    value, as in RLlib. The learners here sync their weights to the EnvRunners before every
    sample, so they log none (every batch is sampled by the current weights)."""
    value = None
    for path in (f"{LEARNER_RESULTS}/{DEFAULT_MODULE_ID}", f"info/learner/{DEFAULT_MODULE_ID}"):
        stats = metric_value(results, path)
        if isinstance(stats, Mapping) and DIFF_NUM_GRAD_UPDATES_VS_SAMPLER_POLICY in stats:
            value = stats[DIFF_NUM_GRAD_UPDATES_VS_SAMPLER_POLICY]
            break
    if value is None:
        return None
    if not lower_limit <= value <= upper_limit:
        raise AssertionError(
            f"`off_policy_ness` ({value}) is outside the given bounds "
            f"({lower_limit} - {upper_limit})!"
        )
    return value


def _check_learner_stats(learner_results: Mapping, *, where: str) -> None:
    assert len(learner_results) == 0 or DEFAULT_MODULE_ID in learner_results, (
        f"'{DEFAULT_MODULE_ID}' not found in {where} ({learner_results})!"
    )
    for module_id, stats in learner_results.items():
        if module_id == ALL_MODULES:
            continue
        for key, value in stats.items():
            if key.endswith(("_min", "_max")) or key.startswith(("min_", "max_")):
                assert np.isscalar(value), f"'{key}' value not a scalar ({value})!"


def _check_config(train_results: Mapping) -> None:
    # The results here hold no "config" (RLlib's do); where one is added it must be a dict.
    if "config" in train_results:
        assert isinstance(train_results["config"], dict), "`config` in results not a python dict!"


def check_train_results_new_api_stack(train_results: dict) -> dict:
    """Asserts that `train_results` (an `Algorithm.train()` result) has the new stack's layout:
    `env_runners`, `fault_tolerance`, `learners`, `timers` and `training_iteration` at the
    top, `learners` holding "default_policy" (unless empty), and every `*_min` / `*_max`
    learner stat a scalar. Returns `train_results`."""
    for key in (
        ENV_RUNNER_RESULTS,
        FAULT_TOLERANCE_STATS,
        LEARNER_RESULTS,
        TIMERS,
        TRAINING_ITERATION,
    ):
        assert key in train_results, f"'{key}' not found in `train_results` ({train_results})!"
    _check_config(train_results)
    _check_learner_stats(
        train_results[LEARNER_RESULTS], where=f"train_results['{LEARNER_RESULTS}']"
    )
    return train_results


def check_train_results(train_results: dict) -> dict:
    """RLlib's old-stack variant of `check_train_results_new_api_stack`: asserts the keys an
    old-stack script reads. The results here answer the old episode keys of
    `result["env_runners"]` (`episode_reward_mean`, ...) as aliases; the learner stats
    are under `learners` (the old stack's `info/learner` does not exist here). Returns
    `train_results`."""
    for key in (
        ENV_RUNNER_RESULTS,
        "iterations_since_restore",
        "time_this_iter_s",
        TIMERS,
        "time_total_s",
        TRAINING_ITERATION,
        LEARNER_RESULTS,
    ):
        assert key in train_results, f"'{key}' not found in `train_results` ({train_results})!"
    env_runners = train_results[ENV_RUNNER_RESULTS]
    if env_runners.get("num_episodes", 1):
        for key in (
            "episode_len_mean",
            "episode_reward_max",
            "episode_reward_mean",
            "episode_reward_min",
        ):
            assert key in env_runners, (
                f"'{key}' not found in `train_results[ENV_RUNNER_RESULTS]` ({env_runners})!"
            )
    _check_config(train_results)
    _check_learner_stats(
        train_results[LEARNER_RESULTS], where=f"train_results['{LEARNER_RESULTS}']"
    )
    return train_results


def _sample_observation(space: gym.Space) -> Any:
    obs = space.sample()
    # As RLlib: keep Box samples small, so that unbounded spaces give usable inputs.
    return np.clip(obs, -1.0, 1.0) if isinstance(space, Box) else obs


def check_compute_single_action(
    algorithm: Any, include_state: bool = False, include_prev_action_reward: bool = False
) -> None:
    """Calls `algorithm.compute_single_action` in every combination of `explore`,
    `unsquash_action` and `clip_action`, with an observation and with `input_dict`, and
    raises ValueError when an action leaves the action space (with clipping or unsquashing,
    or for a non-Box space), a normalized Box action looks unnormalized (|a| > 15), or the
    greedy actions of the two call forms differ. The modules here are feed-forward and take
    no previous action and reward: `include_state` adds nothing to the calls, and
    `include_prev_action_reward=True` is an error."""
    if include_prev_action_reward:
        raise ValueError(
            "check_compute_single_action(include_prev_action_reward=True): "
            "compute_single_action here takes no prev_action / prev_reward (the "
            "modules are feed-forward); use False"
        )
    # The env's own spaces (before the env-to-module connectors), as RLlib takes them.
    group = algorithm.env_runner_group
    env_spaces = group.env_spaces or group.local_env_runner.env_spaces
    obs_space, action_space = env_spaces[0], env_spaces[1]
    config = algorithm.config
    for explore in (True, False):
        for unsquash in (True, False, None):
            for clip in (False,) if unsquash else (True, False, None):
                obs = _sample_observation(obs_space)
                action = algorithm.compute_single_action(
                    obs, explore=explore, unsquash_action=unsquash, clip_action=clip
                )
                if not explore:
                    same = algorithm.compute_single_action(
                        input_dict={"obs": obs},
                        explore=False,
                        unsquash_action=unsquash,
                        clip_action=clip,
                    )
                    check(action, same)
                effective_unsquash = config.normalize_actions if unsquash is None else unsquash
                effective_clip = config.clip_actions if clip is None else clip
                if not action_space.contains(action) and (
                    effective_clip or effective_unsquash or not isinstance(action_space, Box)
                ):
                    raise ValueError(
                        f"Returned action ({action}) of algorithm {algorithm} "
                        f"not in Env's action_space {action_space}"
                    )
                if (
                    isinstance(action_space, Box)
                    and not effective_unsquash
                    and config.normalize_actions
                    and np.any(np.abs(action) > 15.0)
                ):
                    raise ValueError(
                        f"Returned action ({action}) of algorithm {algorithm} "
                        "should be in normalized space, but seems too large/small "
                        "for that!"
                    )


def check_inference_w_connectors(policy: Any, env_name: str, max_steps: int = 100) -> None:
    """Runs one episode (at most `max_steps` steps) of `gym.make(env_name)` with actions from
    `policy` (an Algorithm here: the old stack's Policy does not exist), each computed through
    the EnvRunner's env-to-module connectors by `compute_single_action`; raises ValueError
    when an action is not in the env's action space."""
    env = gym.make(env_name)
    try:
        obs, _ = env.reset()
        terminated = truncated = False
        steps = 0
        while not terminated and not truncated and steps < max_steps:
            action = policy.compute_single_action(obs)
            if not env.action_space.contains(action):
                raise ValueError(
                    f"check_inference_w_connectors: action {action!r} of {policy} "
                    f"is not in {env_name}'s action space {env.action_space}"
                )
            obs, _, terminated, truncated, _ = env.step(action)
            steps += 1
    finally:
        env.close()


def check_same_batch(batch1: Any, batch2: Any) -> None:
    """Asserts that two batches are (almost) identical: mappings of columns (a train batch,
    a dict of episode data) key for key with `check()`, `unroll_id` only where both have one;
    batches with `policy_batches` (RLlib's MultiAgentBatch form) also by `count` and module.
    Other types raise ValueError."""
    assert type(batch1) is type(batch2), (
        f"Input batches are of different types {type(batch1)} and {type(batch2)}"
    )

    def check_columns(first: Mapping, second: Mapping, module_id: str | None = None) -> None:
        unroll_1, unroll_2 = first.get("unroll_id"), second.get("unroll_id")
        if unroll_1 is not None and unroll_2 is not None:
            assert unroll_1 == unroll_2
        keys_1 = {key for key in first if key != "unroll_id"}
        keys_2 = {key for key in second if key != "unroll_id"}
        difference = keys_1.symmetric_difference(keys_2)
        where = f"for policy with ID {module_id} " if module_id else ""
        assert not difference, (
            f"SampleBatches {where}don't share information on the "
            f"following information: \n{difference}"
        )
        for key in keys_1:
            check(first[key], second[key])

    if hasattr(batch1, "policy_batches"):
        assert batch1.count == batch2.count
        ids_1, ids_2 = set(batch1.policy_batches), set(batch2.policy_batches)
        assert ids_1 == ids_2, (
            "MultiAgentBatches don't share the following information: "
            f"\n{ids_1.symmetric_difference(ids_2)}."
        )
        for module_id in ids_1:
            check_columns(
                batch1.policy_batches[module_id], batch2.policy_batches[module_id], module_id
            )
    elif isinstance(batch1, Mapping):
        check_columns(batch1, batch2)
    else:
        raise ValueError("Unsupported batch type " + str(type(batch1)))


#: Result keys that measure time, not behaviour (they differ between identical runs).
_TIMING_KEYS = ("time", "duration", "timer", "throughput", "_s", "timestamp", "date")


def _behaviour(results: Mapping) -> dict:
    """The parts of a result a seeded run must reproduce: the env runners' episode stats and
    the learner stats, without timings."""
    out = {}
    for section in (ENV_RUNNER_RESULTS, LEARNER_RESULTS):
        flat = {}
        stack = [(section, results.get(section, {}))]
        while stack:
            prefix, value = stack.pop()
            if isinstance(value, Mapping):
                stack += [(f"{prefix}/{k}", v) for k, v in value.items()]
            elif not any(word in prefix.rsplit("/", 1)[-1] for word in _TIMING_KEYS):
                flat[prefix] = value
        out.update(flat)
    return out


def check_reproducibilty(
    algo_class: type, algo_config: Any, *, fw_kwargs: dict[str, Any], training_iteration: int = 1
) -> None:
    """Asserts that `algo_class` trained twice from `algo_config` with seed 42 gives the same
    episode stats, learner stats and weights after `training_iteration` iterations, with 0
    and with 2 EnvRunners (2 envs each). `fw_kwargs` (RLlib's framework choice) is taken and
    not used: the modules here are numpy."""
    del fw_kwargs
    for num_env_runners in (0, 2):
        config = (
            algo_config.copy(copy_frozen=False) if hasattr(algo_config, "copy") else algo_config
        )
        config = config.debugging(seed=42).env_runners(
            num_env_runners=num_env_runners, num_envs_per_env_runner=2
        )
        print(f"Testing reproducibility of {algo_class.__name__} with {num_env_runners} workers")
        runs = []
        for _ in range(2):
            algo = algo_class(config=config.copy(copy_frozen=False))
            try:
                result = {}
                for _ in range(training_iteration):
                    result = algo.train()
                runs.append((_behaviour(result), algo.get_weights()))
            finally:
                algo.stop()
        (behaviour_1, weights_1), (behaviour_2, weights_2) = runs
        check(behaviour_1, behaviour_2)
        check(weights_1, weights_2)


#: RLlib's spaces to test (the same names and spaces as RLlib 2.60's check).
ACTION_SPACES_TO_TEST: dict[str, gym.Space] = {
    "discrete": Discrete(5),
    "continuous": Box(-1.0, 1.0, (5,), dtype=np.float32),
    "int_actions": Box(0, 3, (2, 3), dtype=np.int32),
    "multidiscrete": MultiDiscrete([1, 2, 3, 4]),
    "tuple": GymTuple([Discrete(2), Discrete(3), Box(-1.0, 1.0, (5,), dtype=np.float32)]),
    "dict": GymDict(
        {
            "action_choice": Discrete(3),
            "parameters": Box(-1.0, 1.0, (1,), dtype=np.float32),
            "yet_another_nested_dict": GymDict({"a": GymTuple([Discrete(2), Discrete(3)])}),
        }
    ),
}
OBSERVATION_SPACES_TO_TEST: dict[str, gym.Space] = {
    "multi_binary": MultiBinary([3, 10, 10]),
    "discrete": Discrete(5),
    "continuous": Box(-1.0, 1.0, (5,), dtype=np.float32),
    "vector2d": Box(-1.0, 1.0, (5, 5), dtype=np.float32),
    "image": Box(-1.0, 1.0, (84, 84, 1), dtype=np.float32),
    "tuple": GymTuple([Discrete(10), Box(-1.0, 1.0, (5,), dtype=np.float32)]),
    "dict": GymDict({"task": Discrete(10), "position": Box(-1.0, 1.0, (5,), dtype=np.float32)}),
}
#: The spaces RLlib 2.60 tests on its new stack (it skips the others with a warning).
NEW_STACK_OBSERVATION_SPACES = ("multi_binary", "discrete", "continuous", "image", "tuple", "dict")
NEW_STACK_ACTION_SPACES = ("discrete", "continuous")


def check_supported_spaces(
    alg: str,
    config: Any,
    train: bool = True,
    check_bounds: bool = False,
    frameworks: tuple[str, ...] | None = None,
    use_gpu: bool = False,
) -> dict[tuple[str, str], str]:
    """Builds `config` (an AlgorithmConfig of algorithm `alg`) on RLlib's `RandomEnv` with each
    action space RLlib tests (with a Discrete observation space) and each observation space
    (with Discrete actions), the new stack's subsets, and trains one iteration if `train`.
    A space the algorithm refuses at build (a ValueError, e.g. DQN on Box actions) counts as
    "unsupported"; any other error is raised. Returns {(action name, observation name):
    "ok" | "unsupported"}. `frameworks` and `use_gpu` are taken and not used (numpy
    modules, no GPU)."""
    del frameworks, use_gpu
    statuses: dict[tuple[str, str], str] = {}

    def do_check(a_name: str, o_name: str) -> None:
        trial = config.copy(copy_frozen=False).environment(
            RandomEnv,
            env_config={
                "action_space": ACTION_SPACES_TO_TEST[a_name],
                "observation_space": OBSERVATION_SPACES_TO_TEST[o_name],
                "reward_space": Box(1.0, 1.0, shape=(), dtype=np.float32),
                "p_terminated": 1.0,
                "check_action_bounds": check_bounds,
            },
        )
        print(f"=== Testing {alg} action_space={a_name} obs_space={o_name} ===")
        started = time.perf_counter()
        try:
            algo = trial.build()
        except ValueError as error:
            statuses[(a_name, o_name)] = "unsupported"
            print(f"Test: unsupported ({error}), ran in {time.perf_counter() - started:.2f}s")
            return
        try:
            if train:
                algo.train()
        finally:
            algo.stop()
        statuses[(a_name, o_name)] = "ok"
        print(f"Test: ok, ran in {time.perf_counter() - started:.2f}s")

    for a_name in NEW_STACK_ACTION_SPACES:
        do_check(a_name, "discrete")
    for o_name in NEW_STACK_OBSERVATION_SPACES:
        do_check("discrete", o_name)
    return statuses


__all__ = [
    "check_compute_single_action",
    "check_inference_w_connectors",
    "check_learning_achieved",
    "check_off_policyness",
    "check_reproducibilty",
    "check_same_batch",
    "check_supported_spaces",
    "check_train_results",
    "check_train_results_new_api_stack",
]


def check(
    x: Any,
    y: Any,
    decimals: int = 5,
    atol: float | None = None,
    rtol: float | None = None,
    false: bool = False,
) -> None:
    """RLlib's test helper: asserts that `x` and `y` (numbers, arrays, or dicts, lists and tuples
    of them) are equal, floats within `atol`/`rtol` (default: `decimals` places); with
    `false=True`, asserts that they differ."""
    try:
        _check_equal(x, y, decimals, atol, rtol)
    except AssertionError:
        if false:
            return
        raise
    if false:
        raise AssertionError(f"check(false=True): {x!r} equals {y!r}")


def _as_array(value: Any) -> Any:
    """A torch tensor as a numpy array (detached, on the CPU: RLlib's `check` compares a
    module's parameters, which require grad, with arrays); anything else as it is."""
    if type(value).__module__.startswith("torch") and callable(getattr(value, "detach", None)):
        return value.detach().cpu().numpy()
    return value


def _check_equal(x: Any, y: Any, decimals: int, atol: float | None, rtol: float | None) -> None:
    x, y = _as_array(x), _as_array(y)
    # Stats objects (a non-root MetricsLogger's reduce() results) compare by their value.
    if isinstance(x, (StatsBase, Stats)):
        x = x.peek()
    if isinstance(y, (StatsBase, Stats)):
        y = y.peek()
    if isinstance(x, dict):
        # Every key of `x` must be in `y`; keys only `y` has are not compared (RLlib's check
        # drops each of x's keys from its copy of x's keys, not y's, so it accepts them).
        missing = [key for key in x if key not in y] if isinstance(y, dict) else list(x)
        assert isinstance(y, dict) and not missing, f"keys differ: {x!r} vs {y!r}"
        for key in x:
            _check_equal(x[key], y[key], decimals, atol, rtol)
    elif isinstance(x, (list, tuple)) and not np.isscalar(y) and not isinstance(y, np.ndarray):
        assert isinstance(y, (list, tuple)) and len(x) == len(y), f"{x!r} vs {y!r}"
        for a, b in zip(x, y, strict=True):
            _check_equal(a, b, decimals, atol, rtol)
    elif isinstance(x, (bool, np.bool_)):
        assert bool(x) is bool(y), f"{x!r} is not {y!r}"
    elif isinstance(x, str) or x is None:
        assert x == y, f"{x!r} != {y!r}"
    elif _clearly_close(x, y, decimals, atol, rtol):
        return
    elif atol is None and rtol is None:
        np.testing.assert_almost_equal(x, y, decimal=decimals)
    else:
        np.testing.assert_allclose(x, y, atol=atol or 0.0, rtol=rtol or 1e-7)


#: The number types `_clearly_close` compares itself (as numpy would, in float64).
_PLAIN_NUMBERS = frozenset({int, float, np.float64, np.int64})


def _clearly_close(x: Any, y: Any, decimals: int, atol: float | None, rtol: float | None) -> bool:
    """Whether two finite plain numbers pass `_check_equal`'s numpy assertion with room to
    spare (within half its tolerance, so no rounding can change the outcome): then numpy's
    assertion, ~100 times slower per pair of numbers, need not run (RLlib's replay buffer
    tests check hundreds of thousands of them). Anything else, or a difference near the
    tolerance, is left to numpy, which decides and words the failure."""
    if type(x) not in _PLAIN_NUMBERS or type(y) not in _PLAIN_NUMBERS:
        return False
    a, b = float(x), float(y)
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    if atol is None and rtol is None:  # assert_almost_equal's: |a - b| < 1.5 * 10**-decimals
        tolerance = 1.5 * 10.0 ** (-decimals)
    else:  # assert_allclose's: |a - b| <= atol + rtol * |b|
        tolerance = (atol or 0.0) + (rtol or 1e-7) * abs(b)
    return abs(a - b) <= 0.5 * tolerance


class ModelChecker:
    """RLlib's `ModelChecker`: builds a model config's network per framework (`add`), runs a
    batch of one input filled with one random value through it, then again after setting
    every weight to that value (`_set_to_dummy_weights`), and `check()` compares the builds'
    parameter counts and those second outputs. Only torch builds here, so `check()` compares
    torch builds with each other."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.param_counts: dict[str, Any] = {}
        self.output_values: dict[str, Any] = {}
        self.random_fill_input_value = float(np.random.uniform(-0.01, 0.01))
        self.models: dict[str, Any] = {}

    def add(self, framework: str = "torch", obs: bool = True, state: Any = False) -> Any:
        """Builds the config for `framework` and returns its outputs for the filled input
        (`{"obs": x}` with `obs`, a tensor otherwise; with `state`, a time axis of one and a
        zero `state_in` of each shape `state` maps to)."""
        import torch  # the model configs build torch networks (the `torch` extra)

        model = self.models[framework] = self.config.build(framework=framework)
        shape = [1] + ([1] if state else []) + [int(d) for d in self.config.input_dims]
        value = self.random_fill_input_value
        inputs: Any = torch.full(shape, value, dtype=torch.float32)
        if obs:
            inputs = {"obs": inputs}
        if state:
            inputs["state_in"] = {
                key: torch.zeros([1, *(int(d) for d in np.asarray(dims))])
                for key, dims in state.items()
            }
        outputs = model(inputs)
        model._set_to_dummy_weights(value_sequence=(value,))
        comparable = model(inputs)
        self.param_counts[framework] = model.get_num_parameters()
        self.output_values[framework] = _to_numpy_tree(comparable)
        return outputs

    def check(self) -> None:
        """Raises AssertionError where two added builds differ in their parameter counts or
        their dummy-weight outputs (to 0.0005)."""
        main = next(iter(self.models))
        for counts in self.param_counts.values():
            check(counts, self.param_counts[main])
        for values in self.output_values.values():
            check(values, self.output_values[main], atol=0.0005)


def _to_numpy_tree(value: Any) -> Any:
    """`value` (nested dicts of tensors) as numpy arrays (None stays None)."""
    if isinstance(value, Mapping):
        return {key: _to_numpy_tree(v) for key, v in value.items()}
    if value is None:
        return None
    return value.detach().cpu().numpy()
