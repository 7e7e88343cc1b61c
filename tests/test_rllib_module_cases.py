"""What RLlib 2.60's unit tests of modules, learners and metrics need through the launcher: its
example scripts imported as modules from the Ray wheel, `legacy_stats.Stats`, `SampleBatch` /
`MultiAgentBatch` as containers of columns, and APPO's learner updated on such a batch."""

from __future__ import annotations

import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from trainer.algorithms.appo.appo_learner import trajectory_batch_from_columns
from trainer.compat.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch, SampleBatch
from trainer.errors import RLlibNotAvailable
from trainer.launcher import finder

# -- RLlib's example scripts, imported as modules -------------------------------------------
SCRIPT = """
    import ray.rllib.algorithms.ppo as ppo_package
    from ray.rllib.examples.envs.classes.multi_agent import MultiAgentCartPole

    RAN_AS = __name__
    if __name__ == "__main__":
        raise SystemExit("the script's main part ran")
"""


@pytest.fixture
def fake_wheel(tmp_path, monkeypatch):
    """A Ray wheel folder holding one example script with no counterpart here."""
    script = tmp_path / "ray" / "rllib" / "examples" / "multi_agent" / "localrl_probe_script.py"
    script.parent.mkdir(parents=True)
    script.write_text(textwrap.dedent(SCRIPT))
    monkeypatch.setattr(finder, "_ray_wheel_dir", lambda: str(tmp_path / "ray"))
    yield script
    sys.modules.pop("ray.rllib.examples.multi_agent.localrl_probe_script", None)


def test_an_example_script_of_the_wheel_imports_as_a_module_under_the_launcher(hook, fake_wheel):
    from ray.rllib.examples.multi_agent import localrl_probe_script as probe

    from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

    assert probe.RAN_AS == "ray.rllib.examples.multi_agent.localrl_probe_script"
    assert probe.__file__ == str(fake_wheel)
    assert probe.MultiAgentCartPole is MultiAgentCartPole  # its ray.rllib imports are ours
    assert isinstance(probe.ppo_package, finder.RLlibStandIn)


def test_an_example_script_without_the_wheel_stays_a_missing_module(hook, monkeypatch):
    monkeypatch.setattr(finder, "_ray_wheel_dir", lambda: None)
    with pytest.raises(ModuleNotFoundError, match="ships its examples as scripts"):
        import ray.rllib.examples.multi_agent.localrl_probe_script  # noqa: F401


def test_an_example_module_the_wheel_lacks_says_rllib_lacks_it_too(hook):
    """RLlib 2.60's self_play_footsies.py imports a module its wheel does not ship."""
    if finder._ray_wheel_dir() is None:
        pytest.skip("needs the installed Ray wheel (the test extra) to look in")
    with pytest.raises(ModuleNotFoundError, match="nor does the installed Ray wheel have it"):
        import ray.rllib.examples.algorithms.ppo.multi_agent_footsies_ppo  # noqa: F401


# -- legacy_stats ----------------------------------------------------------------------------
def test_legacy_stats_are_served_and_their_states_load_into_a_logger(hook):
    from ray.rllib.utils.metrics.legacy_stats import Stats
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from trainer.metrics.legacy_stats import Stats as OurStats

    assert Stats is OurStats
    states = {
        "m": Stats([1.0, 2.0, 3.0], reduce="mean", window=10).get_state(),
        "n--lo": Stats([4.0, 2.0], reduce="min", window=5).get_state(),
        "total": Stats([1.0, 2.0], reduce="sum", clear_on_reduce=False).get_state(),
    }
    logger = MetricsLogger(root=False)
    logger.set_state({"stats": states})
    assert logger.peek("m") == 2.0 and logger.peek(("n", "lo")) == 2.0
    assert logger.peek("total") == 0.0  # a lifetime sum's total is kept on the root only


# -- SampleBatch and MultiAgentBatch ----------------------------------------------------------
def test_sample_batch_is_a_dict_of_columns_that_counts_its_rows():
    batch = SampleBatch({"obs": np.zeros((5, 3)), "rewards": [1, 2, 3, 4, 5], "infos": [{}] * 5})
    assert batch.count == len(batch) == batch.env_steps() == batch.agent_steps() == 5
    assert isinstance(batch["rewards"], np.ndarray)  # a list column becomes an array
    assert set(batch.keys()) == {"obs", "rewards", "infos"}
    assert batch[1:3].count == 2 and list(batch[1:3]["rewards"]) == [2, 3]
    copy = batch.copy()
    copy["obs"][0, 0] = 1.0
    assert batch["obs"][0, 0] == 0.0
    assert SampleBatch({"seq_lens": [2, 3], "obs": np.zeros((5, 1))}).count == 5
    with pytest.raises(KeyError, match="terminateds"):
        SampleBatch(dones=[True])
    with pytest.raises(RLlibNotAvailable, match="SampleBatch.right_zero_pad") as refused:
        batch.right_zero_pad(max_seq_len=4)
    assert "old API stack" in str(refused.value)


def test_as_multi_agent_gives_a_multi_agent_batch_of_the_default_policy():
    batch = SampleBatch({"obs": np.zeros((4, 2))})
    multi = batch.as_multi_agent()
    assert multi.policy_batches == {DEFAULT_POLICY_ID: batch} and multi[DEFAULT_POLICY_ID] is batch
    assert multi.env_steps() == len(multi) == 4 and multi.as_multi_agent() is multi
    both = MultiAgentBatch({"a": batch, "b": batch[:2]}, env_steps=4)
    assert both.agent_steps() == 6 and both.copy().policy_batches["b"].count == 2
    with pytest.raises(TypeError, match="module's batch"):
        MultiAgentBatch({"a": [1, 2]}, 2)
    with pytest.raises(RLlibNotAvailable, match="MultiAgentBatch.timeslices"):
        both.timeslices(1)


# -- APPO's learner on a column batch ---------------------------------------------------------
def test_column_batch_becomes_trajectory_chunks_as_rllibs_time_major_loss_reads_it():
    # Two segments of 4 rows: a step that terminates mid-segment, then a bootstrap row
    # (loss_mask False) in the second.
    columns = {
        "obs": np.arange(8, dtype=np.float32)[:, None],
        "actions": np.zeros(8, dtype=np.float32),
        "rewards": np.ones(8),
        "terminateds": np.array([0, 1, 0, 0, 0, 0, 0, 0], dtype=np.float32),
        "action_logp": np.zeros(8),
        "loss_mask": np.array([1, 1, 1, 1, 1, 1, 0, 1], dtype=bool),
    }
    batch = trajectory_batch_from_columns(columns, 4, lambda obs: obs, discrete_actions=True)
    # Every row is an observation, and the last step's next one is the first row's.
    assert list(batch.obs[:, 0]) == [0, 1, 2, 3, 4, 5, 6, 7, 0]
    assert list(batch.is_step) == [True] * 6 + [False, True, False]
    assert list(batch.terminated) == [False, True, False, False, False, False, False]
    # Chunks end at termination, at each segment's end and before a bootstrap row.
    assert list(batch.chunk_end) == [False, True, False, True, False, True, True]
    assert batch.actions.dtype == np.int64
    with pytest.raises(ValueError, match="rollout_fragment_length=3"):
        trajectory_batch_from_columns(columns, 3, lambda obs: obs)


def test_appo_learner_group_updates_on_a_multi_agent_batch_of_tensors():
    torch = pytest.importorskip("torch")
    from trainer.algorithms.appo.config import APPOConfig

    rows = 10
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(rollout_fragment_length=rows)
        .training(model={"fcnet_hiddens": [8]})
    )
    learner_group = config.build_learner_group(env=gym.make("CartPole-v1"))
    rng = np.random.default_rng(0)
    columns = {
        "obs": rng.uniform(size=(rows, 4)).astype(np.float32),
        "actions": rng.integers(2, size=rows).astype(np.float32),
        "rewards": np.ones(rows, dtype=np.float32),
        "terminateds": np.array([0] * (rows - 1) + [1], dtype=np.float32),
        "action_logp": np.full(rows, np.log(0.5), dtype=np.float32),
        "loss_mask": np.ones(rows),
    }
    batch = SampleBatch({key: torch.as_tensor(value) for key, value in columns.items()})
    before = learner_group.get_weights()
    (results,) = learner_group.update(batch=batch.as_multi_agent())
    assert results["num_env_steps_trained"] == rows and np.isfinite(results["total_loss"])
    after = learner_group.get_weights()
    changed = [
        not np.allclose(before[DEFAULT_POLICY_ID][key], value)
        for key, value in after[DEFAULT_POLICY_ID].items()
    ]
    assert any(changed)


# -- a user's module under DQN's default exploration -----------------------------------------
def test_dqns_default_exploration_leaves_a_users_box_module_to_its_own_sampling():
    """DQN's default EpsilonGreedy is for its own Q-module; a user's module of a Box action
    space (RLlib's test_multi_rl_module builds a MultiAgentEnvRunner so) samples from its own
    distribution, while an EpsilonGreedy the user names still refuses the Box space."""
    from trainer.algorithms.dqn import DQNConfig
    from trainer.core.exploration import (
        EpsilonGreedy,
        NeedsDiscreteActions,
        StochasticSampling,
        module_exploration,
    )

    config = DQNConfig()
    box = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    default = config.get_exploration_config()
    assert default["type"] in ("EpsilonGreedy", EpsilonGreedy)
    chosen = "type" in config.exploration_config
    assert not chosen
    made = module_exploration(default, box, type_chosen=chosen)
    assert type(made) is StochasticSampling
    assert type(module_exploration(default, gym.spaces.Discrete(2), type_chosen=chosen)) is (
        EpsilonGreedy
    )
    named = DQNConfig().env_runners(exploration_config={"type": "EpsilonGreedy"})
    with pytest.raises(NeedsDiscreteActions, match="needs a Discrete action space"):
        module_exploration(
            named.get_exploration_config(), box, type_chosen="type" in named.exploration_config
        )
