"""A recurrent module samples by column what the per-step loop samples.

With a recurrent (stateful) torch module the EnvRunner still records by column
(`EnvRunner._sample_columnar`): every episode has its object, which gets each step with the
module's state out as the per-step loop records it (the next step's state, previous action and
reward are read from it), and a chunk keeps its last step as the successor's lookback.
The per-step loop (`tests/step_loop_reference.py`) is the reference; both must
give the same episodes (state outs included), metrics and connector state.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.step_loop_reference import count_rollouts, use_step_loop
from tests.test_columnar_connectors import MODES, PIPELINES
from tests.test_columnar_sampling import _columns, _config, _InfoEnv, _metric

pytest.importorskip("torch")

LSTM_MODEL = {"use_lstm": True, "lstm_cell_size": 4, "fcnet_hiddens": [8], "max_seq_len": 4}
MODES = {**MODES, "timesteps": ({}, {"num_timesteps": 37})}


def _sample(config, columnar, calls, **sample_kwargs):
    algo = config.build()
    runner = algo.env_runner_group.local_env_runner
    assert runner._uses_stateful_module()
    if not columnar:
        use_step_loop(runner)
    rollouts = count_rollouts(runner)
    episodes = [runner.sample(**sample_kwargs) for _ in range(calls)]
    assert len(rollouts) == (calls if columnar else 0)
    result = (episodes, runner.get_metrics(), runner.get_connector_state())
    algo.stop()
    return result


def _flat(prefix: str, tree) -> dict:
    """A nested dict's leaves by their joined keys."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    return {k: v for key in tree for k, v in _flat(f"{prefix}/{key}", tree[key]).items()}


def _assert_same_episodes(a: list, b: list) -> None:
    """Value for value and dtype for dtype, the state outs (a dict of arrays) and the
    lookback (the step before a chunk) included."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        cx, cy = _columns(x), _columns(y)
        assert cx.keys() == cy.keys()
        states = cx.pop("extra:state_out"), cy.pop("extra:state_out")
        cx.update(_flat("state", states[0]))
        cy.update(_flat("state", states[1]))
        for columns in (cx, cy):
            episode = x if columns is cx else y
            columns["lookback"] = episode.observations.lookback
            if episode.observations.lookback:  # the step before the chunk
                columns["before"] = episode.get_observations(-1, neg_index_as_lookback=True)
                columns["action before"] = episode.get_actions(-1, neg_index_as_lookback=True)
        for key in cx:
            if isinstance(cx[key], np.ndarray):
                assert cx[key].dtype == cy[key].dtype, key
                np.testing.assert_array_equal(cx[key], cy[key], err_msg=key)
            else:
                assert cx[key] == cy[key], key


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("pipeline", [None, "mean_std", "reader"])
@pytest.mark.parametrize("prev", [False, True])
def test_a_recurrent_module_samples_by_column_what_the_per_step_loop_samples(mode, pipeline, prev):
    settings, sample_kwargs = MODES[mode]
    model = {**LSTM_MODEL, "lstm_use_prev_action": prev, "lstm_use_prev_reward": prev}
    config = (
        _config(_InfoEnv, 3)
        .framework("torch")
        .rl_module(model_config=model)
        .env_runners(
            env_to_module_connector=None if pipeline is None else PIPELINES[pipeline], **settings
        )
    )
    slow, slow_metrics, slow_state = _sample(config, False, 3, **sample_kwargs)
    fast, fast_metrics, fast_state = _sample(config, True, 3, **sample_kwargs)
    for slow_call, fast_call in zip(slow, fast, strict=True):
        _assert_same_episodes(slow_call, fast_call)
    for key in ("episode_return_mean", "num_env_steps_sampled_lifetime"):
        assert _metric(slow_metrics, key) == _metric(fast_metrics, key), key
    assert repr(slow_state) == repr(fast_state)
