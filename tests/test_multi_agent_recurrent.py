"""Recurrent torch modules and `PrevActionsPrevRewards` in multi-agent runs, as RLlib 2.60 runs
them: each agent's step starts from the state its own episode recorded, chunks that continue an
episode start from their lookback's state, the modules' learners train on the agents' sequences,
and each agent's observation carries its own last actions and rewards."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import continued_after_restore

from tests.test_torch_lstm import replay_states
from trainer import PPOConfig
from trainer.compat.rllib_utils import Columns
from trainer.connectors.env_to_module import FlattenObservations, PrevActionsPrevRewards
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.examples.envs.classes.multi_agent import (
    MultiAgentCartPole,
    MultiAgentStatelessCartPole,
)
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner
from trainer.runners.multi_agent_observations import AgentHistory

#: Separate policy and value LSTMs: the tests read the actor's state.
LSTM_MODEL = {
    "use_lstm": True,
    "lstm_cell_size": 8,
    "fcnet_hiddens": [16],
    "max_seq_len": 5,
    "vf_share_layers": False,
}


def two_policies(config: PPOConfig) -> PPOConfig:
    return config.multi_agent(
        policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: f"p{agent_id}"
    )


def lstm_config(num_env_runners: int = 0, env=MultiAgentStatelessCartPole) -> PPOConfig:
    config = (
        PPOConfig()
        .environment(env, env_config={"num_agents": 2})
        .framework("torch")
        .env_runners(
            num_env_runners=num_env_runners, num_envs_per_env_runner=2, rollout_fragment_length=40
        )
        .training(train_batch_size=160, minibatch_size=40, num_epochs=2, lr=0.001)
        .rl_module(model_config=LSTM_MODEL)
        .debugging(seed=5)
    )
    return two_policies(config)


def initial_state(module) -> dict:
    return {
        key: {k: v.unsqueeze(0) for k, v in value.items()}
        for key, value in module.get_initial_state().items()
    }


def check_agent_states(runner) -> int:
    """Samples three times and replays each agent's chunk with its module: its recorded state
    outs must be the module's, from the initial state at the agent's first step and from the
    state of the chunk's lookback step otherwise. Returns the agent chunks checked that
    continue an episode."""
    continued = 0
    for _ in range(3):
        for episode in runner.sample(num_timesteps=50):
            for agent_episode in episode.agent_episodes.values():
                module = runner.module[agent_episode.module_id]
                recorded = agent_episode.get_extra_model_outputs(Columns.STATE_OUT)
                if agent_episode.t_started == 0:
                    state = initial_state(module)
                else:
                    before = agent_episode.get_extra_model_outputs(
                        Columns.STATE_OUT, -1, neg_index_as_lookback=True
                    )
                    state = {
                        key: {k: torch.as_tensor(v)[None] for k, v in value.items()}
                        for key, value in before.items()
                    }
                    continued += 1
                replayed = replay_states(module, agent_episode, state)
                np.testing.assert_allclose(
                    np.stack(replayed), recorded["actor"]["h"][:, 0], atol=1e-5
                )
    return continued


@pytest.mark.slow
def test_each_agent_carries_its_own_state_across_steps_and_chunks():
    runner = MultiAgentEnvRunner(lstm_config(), worker_index=1, num_workers=1)
    try:
        assert runner.module["p0"].is_stateful()
        assert check_agent_states(runner) >= 4
    finally:
        runner.stop()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_runner_processes_carry_agent_states_and_the_learners_train_sequences(tmp_path):
    algo = lstm_config(num_env_runners=1).build()
    try:
        continued = algo.env_runner_group.foreach_env_runner(
            check_agent_states, local_env_runner=False
        )
        assert continued and continued[0] >= 4
        before = {m: algo.get_module(m).get_state() for m in ("p0", "p1")}
        result = algo.train()
        for module_id in ("p0", "p1"):
            learner = result["learners"][module_id]
            assert learner["num_env_steps_trained"] > 0, learner
            after = algo.get_module(module_id).get_state()
            assert any(not np.array_equal(after[k], before[module_id][k]) for k in after)
        # Mid-episode: the runner's episodes under way carry their agents' states.
        path = algo.save_to_path(tmp_path / "checkpoint")
        expected = algo.train()
    finally:
        algo.stop()
    restored = lstm_config(num_env_runners=1).build()
    try:
        restored.restore_from_path(path)
        resumed = restored.train()
    finally:
        restored.stop()
    assert (
        resumed["env_runners"]["episode_return_mean"]
        == expected["env_runners"]["episode_return_mean"]
    )


def recurrent_multi_agent_cartpole(
    seed: int = 0, train_batch_size: int = 2000, lr: float = 3e-4
) -> PPOConfig:
    """Two LSTM policies on 2-agent CartPole, one EnvRunner process. With a batch of 2000 the
    summed return passes 200 within 6 iterations (bench/learning_targets.py)."""
    return two_policies(
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .framework("torch")
        .env_runners(num_env_runners=1)
        .training(lr=lr, num_epochs=6, vf_loss_coeff=0.01, train_batch_size=train_batch_size)
        .rl_module(
            model_config={
                "use_lstm": True,
                "max_seq_len": 20,
                "lstm_cell_size": 32,
                "vf_share_layers": True,
            }
        )
    ).debugging(seed=seed)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_recurrent_multi_agent_ppo_starts_learning_cartpole():
    """4 iterations of 500 env steps at lr 1e-3: the summed return rises from random play's
    (about 45 for two agents) to well above it."""
    algo = recurrent_multi_agent_cartpole(seed=0, train_batch_size=500, lr=1e-3).build()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(4)]
    finally:
        algo.stop()
    # Seeds 0-2: from 40-49 to 152-172 (3.1-4.2 times the first iteration's).
    assert returns[-1] >= max(100, 2 * returns[0]), returns


def test_use_lstm_in_a_module_spec_runs_on_torch_when_no_framework_was_chosen():
    """RLlib's default framework is torch: a multi-agent spec asking for an LSTM gets one
    (RLlib's rock-paper-scissors example with --use-lstm)."""
    from trainer.core.multi_rl_module import MultiRLModuleSpec
    from trainer.core.rl_module import RLModuleSpec

    config = two_policies(
        PPOConfig().environment(MultiAgentCartPole, env_config={"num_agents": 2})
    ).rl_module(
        rl_module_spec=MultiRLModuleSpec(
            rl_module_specs={"p0": RLModuleSpec(model_config=LSTM_MODEL), "p1": RLModuleSpec()}
        )
    )
    assert config.uses_torch and "use_lstm=True" in config.torch_reason


# -- PrevActionsPrevRewards(multi_agent=True) ----------------------------------------------------
def test_agent_history_sums_an_agents_rewards_until_it_acts_again():
    history = AgentHistory(length=2)
    history.record_step({"a": 1}, {"a": 1.0, "b": 5.0})  # b has not acted: its reward is not kept
    history.record_step({"b": 0}, {"a": 2.0, "b": 3.0})  # a waits: its reward joins its action
    history.record_step({"a": 2, "b": 1}, {"a": 0.5, "b": -1.0})
    history.record_step({"a": 0}, {"a": 4.0})
    assert history.of("a") == ([2, 0], [0.5, 4.0])
    assert history.of("b") == ([0, 1], [3.0, -1.0])
    assert history.of("c") == ([], [])
    history.clear()
    assert history.of("a") == ([], [])


class TurnsEnv(MultiAgentEnv):
    """Two agents take turns for six steps; each step's reward goes to both agents (the waiting
    one's sums up until it acts again)."""

    def __init__(self, config=None):
        super().__init__()
        self.agents = self.possible_agents = ["x", "y"]
        self.observation_spaces = {a: gym.spaces.Box(0.0, 10.0, (1,), np.float32) for a in "xy"}
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in "xy"}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {"x": np.zeros(1, np.float32)}, {}

    def step(self, action_dict):
        self.t += 1
        mover = "y" if self.t % 2 else "x"
        reward = float(self.t)
        done = self.t >= 6
        return (
            {mover: np.full(1, self.t, np.float32)},
            {"x": reward, "y": reward},
            {"__all__": done},
            {"__all__": False},
            {},
        )


def turns_with_history() -> PPOConfig:
    """TurnsEnv, one shared policy, each agent's last 2 actions and last reward added to its
    observations (flattened)."""
    return (
        PPOConfig()
        .environment(TurnsEnv)
        .env_runners(
            env_to_module_connector=lambda env, spaces=None, device=None: [
                PrevActionsPrevRewards(multi_agent=True, n_prev_actions=2, n_prev_rewards=1),
                FlattenObservations(multi_agent=True),
            ]
        )
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda *args, **kwargs: "shared")
        .debugging(seed=1)
    )


def test_prev_actions_prev_rewards_gives_each_agent_its_own_history():
    config = turns_with_history()
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    try:
        dict_space = PrevActionsPrevRewards(
            n_prev_actions=2, n_prev_rewards=1
        ).recompute_output_observation_space(
            TurnsEnv().observation_spaces["x"], gym.spaces.Discrete(3)
        )
        assert runner.spaces["shared"][0].shape == (gym.spaces.flatdim(dict_space),)
        (episode,) = runner.sample(num_episodes=1)
    finally:
        runner.stop()
    for agent_id in "xy":
        agent = episode.agent_episodes[agent_id]
        observations = agent.get_observations()
        actions, rewards = list(agent.get_actions()), list(agent.get_rewards())
        # The observations each action was taken on (an agent that waits as the episode
        # ends gets its last observation again, without a new history).
        for t, observation in enumerate(observations[: len(actions)]):
            prev_actions = [0] * max(0, 2 - t) + actions[max(0, t - 2) : t]
            expected = {
                PrevActionsPrevRewards.ORIG_OBS_KEY: gym.spaces.unflatten(dict_space, observation)[
                    PrevActionsPrevRewards.ORIG_OBS_KEY
                ],
                PrevActionsPrevRewards.PREV_ACTIONS_KEY: np.concatenate(
                    [
                        np.eye(3, dtype=np.float32)[a] if k >= 2 - t else np.zeros(3, np.float32)
                        for k, a in enumerate(prev_actions)
                    ]
                ),
                PrevActionsPrevRewards.PREV_REWARDS_KEY: np.asarray(
                    [rewards[t - 1] if t else 0.0], np.float32
                ),
            }
            np.testing.assert_allclose(
                observation, gym.spaces.flatten(dict_space, expected), err_msg=f"{agent_id} {t}"
            )
    # An action's reward: the agent's rewards until it acts again (x acts at steps 1, 3, 5).
    assert list(episode.agent_episodes["x"].get_rewards()) == [3.0, 7.0, 11.0]


def test_a_restored_runner_continues_each_agents_history():
    """The agents' last actions and rewards are part of the runner's state: a runner restored
    mid-episode gives its agents the histories the original would have."""
    config = turns_with_history()
    (expected, *_), (again, *_) = continued_after_restore(
        lambda: MultiAgentEnvRunner(config, worker_index=1, num_workers=1), 4, 2
    )
    assert expected.env_t_started == again.env_t_started == 4 and expected.is_done
    for agent_id in "xy":
        np.testing.assert_array_equal(
            again.agent_episodes[agent_id].get_observations(),
            expected.agent_episodes[agent_id].get_observations(),
        )


def test_prev_actions_prev_rewards_multi_agent_refuses_a_single_agent_env_and_bad_counts():
    piece = PrevActionsPrevRewards(multi_agent=True)
    with pytest.raises(ValueError, match="single-agent"):
        piece.recompute_output_observation_space(
            gym.spaces.Box(0.0, 1.0, (2,)), gym.spaces.Discrete(2)
        )
    with pytest.raises(ValueError, match="n_prev_actions=-1"):
        PrevActionsPrevRewards(n_prev_actions=-1)
