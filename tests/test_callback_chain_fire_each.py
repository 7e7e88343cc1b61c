"""`CallbackChain.fire_each`: one event for several sub-envs (a sampling step's
`on_episode_step`) fires as `fire_with` once per sub-env would: every callback in chain order
for the first sub-env, then the next; a raising callback becomes a `CallbackError` naming it."""

from __future__ import annotations

import pytest

from callbacks import CallbackError, RLlibCallback
from trainer.callbacks.chain import CallbackChain


def test_fire_each_calls_every_callback_per_sub_env_in_chain_order():
    calls: list = []

    class First(RLlibCallback):
        def on_episode_step(self, *, env_index, **kwargs):
            calls.append(("First", env_index))

    def second(*, env_index, **kwargs):
        calls.append(("second", env_index))

    chain = CallbackChain([First], {"on_episode_step": [second]}, env_runner_index=1)
    chain.fire_each("on_episode_step", [{"env_index": 0}, {"env_index": 1}])
    assert calls == [("First", 0), ("second", 0), ("First", 1), ("second", 1)]


@pytest.mark.parametrize("others", [0, 1])
def test_fire_each_names_the_callback_that_raised_and_stops_there(others):
    calls: list = []

    def counting(*, env_index, **kwargs):
        calls.append(env_index)

    def failing(*, env_index, **kwargs):
        if env_index == 1:
            raise KeyError("missing")

    chain = CallbackChain(
        (), {"on_episode_step": [counting] * others + [failing]}, env_runner_index=2
    )
    with pytest.raises(CallbackError) as info:
        chain.fire_each("on_episode_step", [{"env_index": i} for i in range(3)])
    assert info.value.event == "on_episode_step" and "failing" in info.value.callback_name
    assert info.value.env_runner_index == 2 and info.value.error_type == "KeyError"
    assert "missing" in info.value.remote_traceback
    assert calls == [0, 1][: 2 * others]  # (nothing after the raise)
