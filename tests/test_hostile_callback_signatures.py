"""Callbacks whose signature cannot take their event's keyword arguments are refused by
`config.callbacks(...)` (not at the first `train()`), naming the event, the callable and what it
passes; every signature RLlib's callbacks are written with is accepted."""

import functools
import inspect
import math
import re
from collections import defaultdict

import pytest
from helpers import small_ppo

from callbacks import DefaultCallbacks, RLlibCallback, make_multi_callbacks
from trainer import ConfigError
from trainer.callbacks import EVENTS
from trainer.callbacks.signatures import event_keywords

THIS_FILE = "test_hostile_callback_signatures.py"


def no_arguments():
    pass


def train_result_and_a_required_extra(*, algorithm, result, extra, **kwargs):
    pass


def train_result_positional_only(algorithm, result, /, **kwargs):
    pass


class CallableWithoutKwargs:
    def __call__(self, episode):
        pass


BAD_CALLABLES = {
    "lambda with no arguments": ("on_train_result", lambda: None, "<lambda>", "no parameter"),
    "function with no arguments": ("on_sample_end", no_arguments, "no_arguments", "no parameter"),
    "lambda missing keywords": (
        "on_episode_end",
        lambda episode: None,
        "<lambda>",
        "no parameter for prev_episode_chunks, env_runner",
    ),
    "required keyword the event does not pass": (
        "on_train_result",
        train_result_and_a_required_extra,
        "train_result_and_a_required_extra",
        "it requires extra, which the event does not pass",
    ),
    "positional-only parameters": (
        "on_train_result",
        train_result_positional_only,
        "train_result_positional_only",
        "positional-only parameter(s) algorithm, result",
    ),
    "callable object without **kwargs": (
        "on_episode_step",
        CallableWithoutKwargs(),
        "CallableWithoutKwargs instance",
        "no parameter for env_runner",
    ),
    "partial binding the wrong keywords": (
        "on_evaluate_end",
        functools.partial(lambda x, y, **kw: None, 1),
        "functools.partial(",
        "it requires y, which the event does not pass",
    ),
    "a builtin whose signature is readable": (
        "on_episode_end",
        print,
        "print",
        "no parameter for episode",
    ),
    "a builtin method taking one positional argument": (
        "on_train_result",
        [].append,
        "append",
        "positional-only parameter(s) object",
    ),
    "an old-stack argument required by an Algorithm event": (
        "on_train_result",
        lambda *, algorithm, result, worker, **kw: None,
        "<lambda>",
        "it requires worker",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CALLABLES))
def test_a_callable_that_cannot_take_the_events_keywords_is_refused_naming_it(case):
    event, fn, name, problem = BAD_CALLABLES[case]
    config = small_ppo().callbacks(**{event: lambda **kwargs: None})
    before = dict(config.callbacks_on)
    with pytest.raises(ConfigError) as info:
        config.callbacks(**{event: fn})
    message = str(info.value)
    assert f"callbacks({event}=" in message and name in message
    assert problem in message
    # What the event passes is listed, so the fix is plain.
    assert ", ".join(event_keywords(event).always) in message
    if not inspect.isbuiltin(fn):
        assert THIS_FILE in message  # file:line of the callable, where it has code
    assert config.callbacks_on == before and before  # a refused call leaves it as it was


def test_in_a_list_the_bad_callable_is_named_and_nothing_is_set():
    def fine(**kwargs):
        pass

    class Mine(RLlibCallback):
        pass

    config = small_ppo()
    with pytest.raises(ConfigError, match=r"on_episode_start=.*<lambda> \(.*" + THIS_FILE):
        config.callbacks(Mine, on_episode_start=[fine, lambda: None])
    assert config.callbacks_on == {} and config.callbacks_class is RLlibCallback


class WrongEpisodeEnd(RLlibCallback):
    def on_episode_end(self, episode):
        pass


class GoodSampleEnd(RLlibCallback):
    def on_sample_end(self, *, samples, **kwargs):
        pass


def test_a_callback_class_with_a_wrong_method_signature_is_refused_naming_the_method():
    pattern = (
        r"callbacks\(callbacks_class=WrongEpisodeEnd\): .*WrongEpisodeEnd\.on_episode_end "
        rf"\(.*{THIS_FILE}:\d+\) cannot take the keyword arguments of on_episode_end: it has no "
        r"parameter for prev_episode_chunks, env_runner, metrics_logger, env, rl_module, "
        r"env_index and no \*\*kwargs\. on_episode_end passes, by keyword only: episode, "
    )
    with pytest.raises(ConfigError, match=pattern):
        small_ppo().callbacks(WrongEpisodeEnd)
    with pytest.raises(ConfigError, match=r"WrongEpisodeEnd\.on_episode_end"):
        small_ppo().callbacks([GoodSampleEnd, WrongEpisodeEnd])
    with pytest.raises(ConfigError, match=r"WrongEpisodeEnd\.on_episode_end"):
        small_ppo().callbacks(make_multi_callbacks([GoodSampleEnd, WrongEpisodeEnd]))

    class StaticWrong(RLlibCallback):
        @staticmethod
        def on_train_result(algorithm, result):
            pass

    with pytest.raises(ConfigError, match=r"StaticWrong\.on_train_result.*no parameter for"):
        small_ppo().callbacks(StaticWrong)

    class OldEventWrong(DefaultCallbacks):
        def on_workers_recreated(self, *, algorithm, worker_ids):
            pass

    with pytest.raises(ConfigError, match=r"on_workers_recreated.*worker_set, is_evaluation"):
        small_ppo().callbacks(OldEventWrong)


def test_a_handler_that_is_no_method_or_has_a_broken_signature():
    class NotAMethod(RLlibCallback):
        on_train_result = 5

    with pytest.raises(ConfigError, match=r"NotAMethod\.on_train_result is 5, not a method"):
        small_ppo().callbacks(NotAMethod)

    class BrokenSignature:
        @property
        def __signature__(self):
            raise RuntimeError("no signature for you")

        def __call__(self, **kwargs):
            pass

    class PropertyHandler(RLlibCallback):
        @property
        def on_train_result(self):
            return lambda **kwargs: None

    # Unreadable signatures are accepted (checked when the event fires, as for builtins), and
    # so is a handler the instance makes (a property).
    small_ppo().callbacks([PropertyHandler], on_train_result=BrokenSignature())


def test_a_class_set_as_an_attribute_is_checked_at_build():
    config = small_ppo()
    config.callbacks_class = WrongEpisodeEnd
    with pytest.raises(ConfigError, match=r"callbacks_class=WrongEpisodeEnd.*on_episode_end"):
        config.build()


# -- accepted -------------------------------------------------------------------------------------
def rllib_on_episode_end(  # RLlib 2.60's documented signature, as a function
    *,
    episode,
    prev_episode_chunks=None,
    env_runner=None,
    metrics_logger=None,
    env=None,
    env_index,
    rl_module=None,
    worker=None,
    base_env=None,
    policies=None,
    **kwargs,
):
    pass


class Recorder:
    def record(self, *, algorithm, metrics_logger, result):
        pass

    def __call__(self, *, samples, **kwargs):
        pass


class OldStackCallbacks(DefaultCallbacks):
    """RLlib's old-stack signatures (the ones `callbacks.old_api` adapts)."""

    def on_episode_start(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        pass

    def on_episode_step(self, *, worker, base_env, episode, env_index=None, **kwargs):
        pass

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        pass

    def on_sample_end(self, *, worker, samples, **kwargs):
        pass

    def on_sub_environment_created(self, *, worker, sub_environment, env_context, **kwargs):
        pass

    def on_workers_recreated(self, *, algorithm, worker_set, worker_ids, is_evaluation, **kw):
        pass

    def on_postprocess_trajectory(self, *, worker, episode):  # never called: not checked
        pass

    def on_train_result(self, *, algorithm, result, **kwargs):
        pass


class VariedHandlers(RLlibCallback):
    def on_algorithm_init(self, *, algorithm, metrics_logger=None, **kwargs):  # RLlib's own
        pass

    def on_train_result(self, **kwargs):
        pass

    @classmethod
    def on_sample_end(cls, *, env_runner, metrics_logger, samples, extra=3):
        pass

    @staticmethod
    def on_evaluate_start(*, algorithm, metrics_logger):
        pass

    def on_episode_step(self, *args, episode, env_runner, metrics_logger, env, rl_module,
                        env_index, debug=False):  # fmt: skip
        pass


def test_every_signature_rllib_callbacks_are_written_with_is_accepted():
    recorder = Recorder()
    config = small_ppo().callbacks(
        [OldStackCallbacks, VariedHandlers],
        on_episode_end=[
            rllib_on_episode_end,
            lambda episode, **kw: None,  # RLlib's callbacks doc
            lambda **kw: None,
            lambda *, episode, env_index, extra=None, **kw: None,  # extra defaulted parameter
        ],
        on_train_result=[recorder.record, functools.partial(lambda tag, **kw: None, "tag")],
        on_sample_end=recorder,
        on_checkpoint_loaded=lambda algorithm: None,  # RLlib passes algorithm= alone
        # No readable signature (a C function, a partial of one): accepted, unchecked.
        on_algorithm_init=[math.hypot, functools.partial(dict.update)],
    )
    assert len(config.callbacks_on["on_episode_end"]) == 4
    config.callbacks(make_multi_callbacks([OldStackCallbacks, VariedHandlers]))


def test_the_keyword_table_is_what_the_events_pass_and_rllib_style_callables_run(tmp_path):
    """A short run fires the events; each callable gets exactly the keywords `event_keywords`
    lists (the old argument names only when declared), and a callable written for RLlib's call
    of `on_checkpoint_loaded` (`algorithm=` alone) runs."""
    seen = defaultdict(set)

    def recorder_for(event):
        def record(**kwargs):
            seen[event].add(tuple(sorted(kwargs)))

        return record

    events = [
        "on_algorithm_init",
        "on_train_result",
        "on_evaluate_start",
        "on_evaluate_end",
        "on_checkpoint_loaded",
        "on_environment_created",
        "on_episode_created",
        "on_episode_start",
        "on_episode_step",
        "on_episode_end",
        "on_sample_end",
    ]
    loaded = []

    class RLlibStyleLoaded(RLlibCallback):
        def on_checkpoint_loaded(self, *, algorithm):  # RLlib's call passes algorithm= alone
            loaded.append(("class", algorithm))

    config = small_ppo(0).callbacks(
        RLlibStyleLoaded, **{event: recorder_for(event) for event in events}
    )
    config.callbacks(
        on_checkpoint_loaded=[
            recorder_for("on_checkpoint_loaded"),
            lambda algorithm: loaded.append(algorithm),
        ]
    )
    algo = config.build()
    try:
        algo.train()
        algo.evaluate()
        algo.save_to_path(str(tmp_path))
        algo.restore_from_path(str(tmp_path))
    finally:
        algo.stop()
    for event in events:
        keywords = event_keywords(event)
        expected = set(keywords.always) | (
            set(keywords.on_request) - {"worker", "base_env", "policies"}
        )
        assert seen[event] == {tuple(sorted(expected))}, event
    assert loaded == [("class", algo), algo]


def test_every_event_has_keywords_and_the_message_lists_them():
    for event in EVENTS:
        keywords = event_keywords(event)
        assert keywords.always
        assert re.match(rf"{event} passes, by keyword only: ", keywords.describe())
