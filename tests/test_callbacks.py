"""Callbacks through the public API, with real worker processes and envs."""

import functools
import json
import threading
from collections import defaultdict

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from callbacks import CallbackError, DefaultCallbacks, RLlibCallback, make_multi_callbacks
from trainer import ConfigError, EnvContext, EnvRunner, MetricsLogger, SingleAgentEpisode
from trainer.metrics import DEFAULT_STATS_CLS_LOOKUP
from trainer.metrics.stats import MeanStats


def make_recorder(log_path):
    """A callback class that appends one JSON line per EnvRunner event to `log_path` (the class
    is local, so cloudpickle sends it by value, path included)."""

    class Recorder(RLlibCallback):
        def _write(self, event, env_runner, **fields):
            with open(log_path, "a") as f:
                f.write(
                    json.dumps({"event": event, "worker": env_runner.worker_index, **fields}) + "\n"
                )

        def _episode_event(
            self, event, episode, env_runner, metrics_logger, env, rl_module, env_index, **kwargs
        ):
            types_ok = (
                isinstance(episode, SingleAgentEpisode)
                and isinstance(env_runner, EnvRunner)
                and isinstance(metrics_logger, MetricsLogger)
                and isinstance(env, gym.vector.SyncVectorEnv)
                and rl_module is env_runner.module
                and isinstance(env_index, int)
            )
            self._write(
                event,
                env_runner,
                episode=episode.id_,
                env_index=env_index,
                len=len(episode),
                num_obs=len(episode.get_observations()),
                done=episode.is_done,
                types_ok=types_ok,
                in_evaluation=env_runner.config.in_evaluation,
                **kwargs,
            )

        def on_environment_created(self, *, env_runner, metrics_logger, env, env_context, **kwargs):
            self._write(
                "on_environment_created",
                env_runner,
                types_ok=isinstance(env_context, EnvContext)
                and env_context.worker_index == env_runner.worker_index
                and isinstance(env, gym.vector.SyncVectorEnv),
            )

        def on_episode_created(self, **kw):
            self._episode_event("on_episode_created", **kw)

        def on_episode_start(self, **kw):
            self._episode_event("on_episode_start", **kw)

        def on_episode_step(self, **kw):
            self._episode_event("on_episode_step", **kw)

        def on_episode_end(self, *, prev_episode_chunks, **kw):
            self._episode_event(
                "on_episode_end",
                prev_chunks=len(prev_episode_chunks),
                prev_len=sum(len(c) for c in prev_episode_chunks),
                **kw,
            )

        def on_sample_end(self, *, env_runner, metrics_logger, samples, **kwargs):
            self._write(
                "on_sample_end",
                env_runner,
                num_samples=len(samples),
                types_ok=all(isinstance(s, SingleAgentEpisode) for s in samples),
            )

    return Recorder


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow
@pytest.mark.parametrize("num_env_runners", [0, 2])
def test_env_runner_events_fire_in_order_with_the_documented_kwargs(tmp_path, num_env_runners):
    log_path = tmp_path / "events.jsonl"
    algo = (
        small_ppo(num_env_runners)
        .env_runners(num_envs_per_env_runner=2)
        .callbacks(make_recorder(str(log_path)))
        .build()
    )
    for _ in range(3):
        algo.train()
    algo.stop()
    records = read_log(log_path)
    workers = sorted({r["worker"] for r in records})
    assert workers == ([0] if num_env_runners == 0 else [1, 2])
    assert all(r["types_ok"] for r in records)
    assert not any(r.get("in_evaluation") for r in records)

    by_worker = defaultdict(list)
    for r in records:
        by_worker[r["worker"]].append(r)
    for events in by_worker.values():
        # The env comes first; every sample() ends with on_sample_end (one per train() here).
        assert events[0]["event"] == "on_environment_created"
        assert events[-1]["event"] == "on_sample_end"
        assert sum(r["event"] == "on_sample_end" for r in events) == 3
        # Per episode: created < start < step ... < end, with the data logged before each event.
        per_episode = defaultdict(list)
        for r in events:
            if "episode" in r:
                per_episode[r["episode"]].append(r)
        finished = 0
        awaiting_reset = defaultdict(int)
        for episode_events in per_episode.values():
            names = [r["event"] for r in episode_events]
            assert names[0] == "on_episode_created" and episode_events[0]["num_obs"] == 0
            if names == ["on_episode_created"]:
                # Created after its sub-env's final step as sampling stopped: the reset (and
                # on_episode_start) come with the next sample(). At most one per sub-env.
                awaiting_reset[episode_events[0]["env_index"]] += 1
                continue
            assert names[1] == "on_episode_start" and episode_events[1]["num_obs"] == 1
            steps = [r for r in episode_events if r["event"] == "on_episode_step"]
            assert names[2 : 2 + len(steps)] == ["on_episode_step"] * len(steps)
            # Each step event sees one more step in the episode chunk (chunks restart at 1).
            lengths = [r["len"] for r in steps]
            assert all(b == a + 1 or b == 1 for a, b in zip(lengths, lengths[1:], strict=False))
            if names[-1] == "on_episode_end":
                finished += 1
                end = episode_events[-1]
                assert end["done"] and steps[-1]["done"]
                assert names == ["on_episode_created", "on_episode_start"] + [
                    "on_episode_step"
                ] * len(steps) + ["on_episode_end"]
                assert end["len"] + end["prev_len"] == len(steps)
            else:
                assert "on_episode_end" not in names
        assert all(count == 1 for count in awaiting_reset.values())
        assert finished > 5


def test_episodes_spanning_sample_calls_report_their_earlier_chunks(tmp_path):
    log_path = tmp_path / "events.jsonl"
    # 20 steps per sample() call: CartPole episodes are longer, so they are cut into chunks.
    algo = (
        small_ppo(0, train_batch_size=20, minibatch_size=20)
        .env_runners(rollout_fragment_length=20)
        .callbacks(make_recorder(str(log_path)))
        .build()
    )
    for _ in range(6):
        algo.train()
    algo.stop()
    ends = [r for r in read_log(log_path) if r["event"] == "on_episode_end"]
    assert ends and any(r["prev_chunks"] > 0 for r in ends)


def test_callback_instances_are_per_process_and_algorithm_side_instances_are_exposed():
    class Counter(RLlibCallback):
        def __init__(self):
            super().__init__()
            self.episodes = 0
            self.iterations = 0

        def on_episode_end(self, *, metrics_logger, **kwargs):
            self.episodes += 1
            # Each runner reports its own running count; merged with reduce="max".
            metrics_logger.log_value("my_episode_count", self.episodes, reduce="max")

        def on_train_result(self, *, result, **kwargs):
            self.iterations += 1
            result["callback_iterations"] = self.iterations

    algo = small_ppo(2).callbacks(Counter).build()
    for _ in range(2):
        result = algo.train()
    per_runner_counts = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner._callbacks.instances[0].episodes, local_env_runner=False
    )
    algo.stop()
    assert result["callback_iterations"] == 2
    assert [type(c) for c in algo.callbacks] == [Counter] and algo.callbacks[0].iterations == 2
    # Each runner counted only its own episodes; together they are all the episodes.
    assert len(per_runner_counts) == 2 and all(c > 0 for c in per_runner_counts)
    assert sum(per_runner_counts) == result["env_runners"]["num_episodes_lifetime"]
    assert result["env_runners"]["my_episode_count"] == max(per_runner_counts)


class Tagged(RLlibCallback):
    """A callback class that takes a constructor argument (made through a factory)."""

    def __init__(self, tag):
        super().__init__()
        self.tag = tag

    def on_episode_end(self, *, metrics_logger, **kwargs):
        metrics_logger.log_value(f"episodes_{self.tag}", 1, reduce="sum")

    def on_train_result(self, *, result, **kwargs):
        result[f"trained_{self.tag}"] = True


def _make_lambda_tagged():
    return Tagged("lambda")


def test_a_callable_returning_a_callback_is_called_in_each_process_as_in_rllib():
    """RLlib's `callbacks(callbacks_class=...)` takes any callable returning an RLlibCallback:
    a functools.partial of a class, a function. Each EnvRunner process and the Algorithm call
    it for their own instance."""
    config = small_ppo(2).callbacks([functools.partial(Tagged, "partial"), _make_lambda_tagged])
    with config.build() as algo:
        result = algo.train()
        tags = algo.env_runner_group.foreach_env_runner(
            lambda runner: [c.tag for c in runner._callbacks.instances], local_env_runner=False
        )
    assert tags == [["partial", "lambda"]] * 2
    assert result["trained_partial"] and result["trained_lambda"]
    assert result["env_runners"]["episodes_partial"] == result["env_runners"]["episodes_lambda"]
    assert result["env_runners"]["episodes_partial"] > 0


def test_a_callable_that_returns_no_callback_is_refused_at_build():
    with pytest.raises(ConfigError, match=r"callbacks_class=.*<lambda>.*returned 3 \(a int\)"):
        small_ppo(1).callbacks(lambda: 3).build()

    class BadSignature(RLlibCallback):
        def on_episode_end(self, episode):  # RLlib passes keywords only
            pass

    with pytest.raises(ConfigError, match="BadSignature.on_episode_end"):
        small_ppo(1).callbacks(lambda: BadSignature()).build()


def test_custom_metrics_from_all_runners_merge_into_env_runner_results():
    def log_len(episode, metrics_logger, env_runner, **kw):
        metrics_logger.log_value("episode_steps_total", len(episode), reduce="sum")
        metrics_logger.log_value("runner_index_max", env_runner.worker_index, reduce="max")

    # Seeded: an untrained policy's CartPole episode may outlast a runner's 100 steps (then
    # that runner ends none in the iteration); with this seed each runner ends some.
    algo = small_ppo(2).callbacks(on_episode_end=log_len).debugging(seed=0).build()
    result = algo.train()
    algo.stop()
    env_runners = result["env_runners"]
    assert env_runners["runner_index_max"] == 2
    # Episodes end within one sample() call here (CartPole is short while untrained)...
    assert env_runners["episode_steps_total"] > 0
    assert env_runners["episode_steps_total"] <= env_runners["num_env_steps_sampled_lifetime"]


def test_chain_order_classes_then_callables_for_env_runner_events_too(tmp_path):
    log_path = str(tmp_path / "order.txt")

    def writer(tag):
        def write(**kwargs):
            with open(log_path, "a") as f:
                f.write(tag + "\n")

        return write

    class A(RLlibCallback):
        def on_sample_end(self, **kwargs):
            writer("A")()

    class B(RLlibCallback):
        def on_sample_end(self, **kwargs):
            writer("B")()

    algo = (
        small_ppo(1)
        .callbacks(callbacks_class=[B, A], on_sample_end=[writer("f1"), writer("f2")])
        .build()
    )
    algo.train()
    algo.stop()
    with open(log_path) as f:
        assert f.read().split() == ["B", "A", "f1", "f2"]


def test_make_multi_callbacks_and_default_callbacks_alias(tmp_path):
    log_path = str(tmp_path / "multi.txt")

    class First(DefaultCallbacks):
        def on_sample_end(self, **kwargs):
            with open(log_path, "a") as f:
                f.write("first\n")

    class Second(RLlibCallback):
        def on_sample_end(self, **kwargs):
            with open(log_path, "a") as f:
                f.write("second\n")

    assert DefaultCallbacks is RLlibCallback
    algo = small_ppo(1).callbacks(make_multi_callbacks([First, Second])).build()
    algo.train()
    algo.stop()
    with open(log_path) as f:
        assert f.read().split() == ["first", "second"]


def test_a_callback_raising_in_a_worker_names_event_callback_runner_and_traceback():
    class Boom(RLlibCallback):
        def on_episode_step(self, *, env_runner, **kwargs):
            if env_runner.worker_index == 2:
                1 / 0  # noqa: B018

    algo = small_ppo(2).callbacks(Boom).fault_tolerance(restart_failed_env_runners=False).build()
    with pytest.raises(CallbackError) as info:
        algo.train()
    algo.stop()
    error = info.value
    assert error.event == "on_episode_step"
    assert "Boom.on_episode_step" in error.callback_name
    assert error.env_runner_index == 2
    message = str(error)
    assert "ZeroDivisionError" in message and "EnvRunner 2" in message
    assert "1 / 0" in error.remote_traceback  # the user's source line, from the worker


@pytest.mark.slow
def test_a_callback_the_logger_rejects_is_a_callback_error_not_a_broken_env():
    class BadReduce(RLlibCallback):
        def on_episode_end(self, *, metrics_logger, **kwargs):
            metrics_logger.log_value("actions", 1.0, reduce="median_of_everything")

    # Restarted once (the budget), failing again: given up with the callback's error.
    algo = small_ppo(1).callbacks(BadReduce).fault_tolerance(max_num_env_runner_restarts=1).build()
    with pytest.raises(CallbackError) as info:
        algo.train()
    algo.stop()
    error = info.value
    assert isinstance(error, ValueError)  # the original exception type, still catchable
    assert (error.event, error.env_runner_index, error.error_type) == (
        "on_episode_end",
        1,
        "ValueError",
    )
    assert "BadReduce.on_episode_end" in error.callback_name
    assert "could not be found in stats_cls_lookup" in str(error)
    note = " ".join(getattr(error, "__notes__", []))
    assert "EnvRunner 1 was not restarted: it was restarted 1 time " in note


def test_callbacks_log_with_rllib_2_60_reduce_kinds_and_a_custom_stats_class():
    class MedianStats(MeanStats):  # local: cloudpickle sends it to the workers by value
        stats_cls_identifier = "median"

        def _np_reduce_fn(self, values):
            return np.nanmedian(values)

    def log_kinds(episode, metrics_logger, **kwargs):
        metrics_logger.log_value("lens", len(episode), reduce="item_series")
        metrics_logger.log_value("steps_total", len(episode), reduce="lifetime_sum")
        metrics_logger.log_value(
            "len_percentiles", len(episode), reduce="percentiles", window=50, percentiles=[0, 100]
        )
        metrics_logger.log_value("len_median", len(episode), reduce="median")
        metrics_logger.log_value("last_len", len(episode), reduce="ema", ema_coeff=1.0)

    lookup = {**DEFAULT_STATS_CLS_LOOKUP, "median": MedianStats}
    algo = (
        small_ppo(2)
        .callbacks(on_episode_end=log_kinds)
        .reporting(custom_stats_cls_lookup=lookup)
        .build()
    )
    assert algo.config.stats_cls_lookup["median"] is MedianStats
    first, second = algo.train(), algo.train()
    algo.stop()
    lens = second["env_runners"]["lens"]
    # The iteration's episodes, from both runners (a series starts over each iteration).
    assert isinstance(lens, list) and len(lens) == second["env_runners"]["num_episodes"]
    total = sum(first["env_runners"]["lens"]) + sum(lens)
    assert second["env_runners"]["steps_total"] == total  # lifetime: never counted twice
    percentiles = second["env_runners"]["len_percentiles"]
    assert percentiles == {0: min(lens), 100: max(lens)}
    assert min(lens) <= second["env_runners"]["len_median"] <= max(lens)
    assert second["env_runners"]["last_len"] in lens or min(lens) <= (
        second["env_runners"]["last_len"]
    ) <= max(lens)
    with pytest.raises(ConfigError, match="custom_stats_cls_lookup"):
        small_ppo(0).reporting(custom_stats_cls_lookup={"median": dict})


def test_a_lambda_raising_is_reported_with_its_location():
    algo = small_ppo(0).callbacks(on_episode_end=lambda episode, **kw: {}["missing"]).build()
    with pytest.raises(CallbackError) as info:
        algo.train()
    algo.stop()
    assert info.value.event == "on_episode_end"
    assert "<lambda>" in info.value.callback_name and "test_callbacks.py" in (
        info.value.callback_name
    )
    assert "KeyError" in str(info.value)


def test_a_main_process_callback_raising_is_reported():
    def bad(algorithm, result, **kwargs):
        raise ValueError("no good")

    algo = small_ppo(0).callbacks(on_train_result=bad).build()
    with pytest.raises(CallbackError, match="no good") as info:
        algo.train()
    algo.stop()
    assert info.value.event == "on_train_result" and info.value.env_runner_index is None
    assert "in the main process" in str(info.value)


def test_unpicklable_callback_fails_at_build_naming_it():
    lock = threading.Lock()
    config = small_ppo(2).callbacks(on_episode_end=lambda episode, **kw: lock.locked())
    with pytest.raises(ConfigError, match=r"on_episode_end=.*<lambda>.*cannot be sent"):
        config.build()


def test_callbacks_config_rejects_instances_unknown_events_and_non_callables():
    class Mine(RLlibCallback):
        pass

    with pytest.raises(ConfigError, match="pass the class, not an instance"):
        small_ppo().callbacks(Mine())
    with pytest.raises(ConfigError, match="pass an RLlibCallback subclass, or a callable"):
        small_ppo().callbacks(3)
    with pytest.raises(ConfigError, match="on_episode_ends.*Did you mean 'on_episode_end'"):
        small_ppo().callbacks(on_episode_ends=print)
    with pytest.raises(ConfigError, match="must be a callable"):
        small_ppo().callbacks(on_episode_end=[print, 3])
    with pytest.raises(ConfigError, match="must subclass callbacks.RLlibCallback"):
        small_ppo().callbacks(dict)


def test_on_algorithm_init_and_on_train_result_see_the_algorithm_and_may_mutate_result():
    seen = {}

    class Init(RLlibCallback):
        def on_algorithm_init(self, *, algorithm, metrics_logger, **kwargs):
            seen["init"] = (algorithm.training_iteration, isinstance(metrics_logger, MetricsLogger))

        def on_train_result(self, *, algorithm, metrics_logger, result, **kwargs):
            result["extra"] = algorithm.training_iteration

    algo = small_ppo(0).callbacks(Init).build()
    assert seen["init"] == (0, True)
    assert algo.train()["extra"] == 1
    algo.stop()
