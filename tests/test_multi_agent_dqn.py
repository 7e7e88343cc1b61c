"""DQN on multi-agent configs: a DQNLearner and a replay buffer per module (RLlib's
MultiAgent(Prioritized)EpisodeReplayBuffer in "independent" mode), with EnvRunner processes,
RLlib's learning-start count, policies_to_train, prioritized replay per module, checkpoints
with the buffer, and RLlib's tuned multi-agent DQN example."""

import numpy as np
import pytest
from multi_agent_envs import TakeTurns

from trainer import DQNConfig
from trainer.errors import ConfigError
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.replay_buffers import (
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
)
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


def _two_policies(buffer="MultiAgentPrioritizedEpisodeReplayBuffer", num_env_runners=0, **train):
    """MultiAgentCartPole, agent i acting with policy p{i}."""
    return (
        DQNConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_env_runners=num_env_runners)
        .training(replay_buffer_config={"type": buffer}, **train)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **kw: f"p{aid}")
        .debugging(seed=3)
    )


def _runner_weights(algo):
    return algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.get_weights(), local_env_runner=False
    )


def two_policies_with_env_runner_processes(seed: int = 3, epsilon_steps: int = 4000):
    """Two DQN policies, 2 EnvRunner processes sampling 4-step fragments, 1000 env steps an
    iteration: within 12 iterations the summed return reaches 150 and 3 times the first
    iteration's (bench/learning_targets.py)."""
    config = _two_policies(
        num_env_runners=2,
        num_steps_sampled_before_learning_starts=500,
        epsilon=[(0, 1.0), (epsilon_steps, 0.05)],
        target_network_update_freq=200,
        lr=1e-3,
    )
    return (
        config.env_runners(rollout_fragment_length=4)
        .reporting(min_sample_timesteps_per_iteration=1000)
        .debugging(seed=seed)
    )


@pytest.mark.slow
def test_two_policies_learn_with_env_runner_processes():
    """3 iterations: each policy's Q-values rise from what the first 500 updates made of them
    toward the returns of CartPole's +1 steps (the return itself rises after ~5 iterations:
    bench/learning_targets.py)."""
    algo = two_policies_with_env_runner_processes().build()
    try:
        first = algo.train()
        assert set(first["learners"]) == {"p0", "p1", "__all_modules__"}
        for module_id in ("p0", "p1"):
            assert {"qf_loss", "qf_mean", "td_error_mean"} <= set(first["learners"][module_id])
        results = [first, algo.train(), algo.train()]
        result = results[-1]
        for module_id in ("p0", "p1"):
            q_means = [r["learners"][module_id]["qf_mean"] for r in results]
            # Seeds 0-2: 2.75-3.8 times the first iteration's.
            assert q_means[-1] >= 2 * q_means[0] > 0, (module_id, q_means)
        assert set(result["env_runners"]["module_episode_returns_mean"]) == {"p0", "p1"}
        # The EnvRunner processes act with the learners' weights.
        weights = algo.get_weights()
        for runner_weights in _runner_weights(algo):
            for module_id in ("p0", "p1"):
                for name, value in weights[module_id].items():
                    assert np.array_equal(runner_weights[module_id][name], value)
        # Each module's buffer holds its own agent's steps only.
        buffer = algo.local_replay_buffer
        assert isinstance(buffer, MultiAgentPrioritizedEpisodeReplayBuffer)
        assert sorted(buffer.get_module_ids()) == ["p0", "p1"]
        for module_id, agent_id in (("p0", 0), ("p1", 1)):
            module_buffer = buffer.module_buffers[module_id]
            assert module_buffer.get_num_timesteps() == buffer.get_num_timesteps(module_id) > 0
            assert {ep.agent_id for ep in module_buffer.episodes} == {agent_id}
            assert {ep.module_id for ep in module_buffer.episodes} == {module_id}
        stored_agent_steps = buffer.get_num_timesteps("p0") + buffer.get_num_timesteps("p1")
        assert stored_agent_steps == buffer.get_num_agent_timesteps()
        # Per-module buffer metrics under RLlib's names.
        added = result["replay_buffer"]["num_module_steps_added_lifetime"]
        assert set(added) == {"p0", "p1"} and all(v > 0 for v in added.values())
    finally:
        algo.stop()


def test_learning_starts_after_the_steps_rllib_counts():
    """`num_steps_sampled_before_learning_starts` counts env steps, or every agent's steps
    with count_steps_by="agent_steps" (RLlib's DQN): with two agents acting, learning starts
    after about half the env steps."""

    def learning_by_iteration(count_steps_by):
        config = (
            _two_policies(num_steps_sampled_before_learning_starts=60)
            .env_runners(rollout_fragment_length=10)
            # One training step (one fragment sampled) per iteration.
            .reporting(min_sample_timesteps_per_iteration=1)
            .multi_agent(count_steps_by=count_steps_by)
        )
        algo = config.build()
        rows = []
        try:
            for _ in range(12):
                result = algo.train()
                agent_steps = result["env_runners"]["num_agent_steps_sampled_lifetime"]
                counted = (
                    sum(agent_steps.values())
                    if count_steps_by == "agent_steps"
                    else result["num_env_steps_sampled_lifetime"]
                )
                env_steps = result["num_env_steps_sampled_lifetime"]
                rows.append((counted, "p0" in result.get("learners", {}), env_steps))
        finally:
            algo.stop()
        return rows

    first_learning = {}
    for count_steps_by in ("env_steps", "agent_steps"):
        rows = learning_by_iteration(count_steps_by)
        # Updates run exactly in the iterations that end with 60 or more counted steps.
        assert all(learned == (counted >= 60) for counted, learned, _ in rows), rows
        first_learning[count_steps_by] = next(steps for _, learned, steps in rows if learned)
    # (With agent_steps the fragments count agent steps too: 10 of them are about 5 env steps.)
    assert first_learning["env_steps"] == 60
    assert first_learning["agent_steps"] < 40


@pytest.mark.slow
def test_a_policy_left_out_of_policies_to_train_keeps_its_weights():
    config = _two_policies(num_env_runners=1, num_steps_sampled_before_learning_starts=100)
    config = config.multi_agent(policies_to_train={"p0"}).reporting(
        min_sample_timesteps_per_iteration=300
    )
    algo = config.build()
    try:
        before = algo.get_weights()
        result = algo.train()
        after = algo.get_weights()
        assert "p0" in result["learners"] and "p1" not in result["learners"]
        assert any(not np.array_equal(before["p0"][k], after["p0"][k]) for k in after["p0"])
        assert all(np.array_equal(before["p1"][k], after["p1"][k]) for k in after["p1"])
        # p1 still acts (and its agent's steps are stored), with its unchanged weights.
        assert algo.local_replay_buffer.get_num_timesteps("p1") > 0
        runner_weights = _runner_weights(algo)[0]
        assert all(np.array_equal(runner_weights["p1"][k], after["p1"][k]) for k in after["p1"])
    finally:
        algo.stop()


@pytest.mark.slow
def test_prioritized_replay_sets_each_modules_own_priorities():
    config = _two_policies(num_steps_sampled_before_learning_starts=100).reporting(
        min_sample_timesteps_per_iteration=300
    )
    algo = config.build()
    try:
        algo.train()
        buffer = algo.local_replay_buffer
        for module_id in ("p0", "p1"):
            module_buffer = buffer.module_buffers[module_id]
            nodes = module_buffer._indices.nodes[module_buffer._live_rows()]
            priorities = module_buffer._sum_segment[nodes]
            # New steps come in at the module's largest priority so far; the replayed ones
            # got their |TD error| (** alpha): so not all priorities are alike.
            assert len(np.unique(np.round(priorities, 9))) > 10
            assert module_buffer._max_priority == buffer._module_to_max_priority[module_id]
        # The two modules' priorities are their own.
        assert buffer._module_to_max_priority["p0"] != buffer._module_to_max_priority["p1"]
    finally:
        algo.stop()


@pytest.mark.slow
def test_the_uniform_multi_agent_buffer_trains_too():
    config = _two_policies(
        buffer="MultiAgentEpisodeReplayBuffer", num_steps_sampled_before_learning_starts=100
    ).reporting(min_sample_timesteps_per_iteration=200)
    algo = config.build()
    try:
        result = algo.train()
        assert type(algo.local_replay_buffer) is MultiAgentEpisodeReplayBuffer
        assert {"p0", "p1"} <= set(result["learners"])
        assert np.isfinite(result["learners"]["p0"]["qf_loss"])
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_checkpoint_holds_each_modules_buffer(tmp_path):
    config = _two_policies(
        num_steps_sampled_before_learning_starts=100, store_buffer_in_checkpoints=True
    ).reporting(min_sample_timesteps_per_iteration=200)
    algo = config.build()
    try:
        algo.train()
        algo.save_to_path(str(tmp_path))
        buffer = algo.local_replay_buffer
        weights = algo.get_weights()
        counts = {m: buffer.get_num_timesteps(m) for m in ("p0", "p1")}
        env_steps = buffer.get_num_timesteps()
        module_states = {m: buffer.module_buffers[m].get_state() for m in ("p0", "p1")}
    finally:
        algo.stop()
    restored = config.build()
    try:
        restored.restore_from_path(str(tmp_path))
        buffer = restored.local_replay_buffer
        assert buffer.get_num_timesteps() == env_steps
        assert {m: buffer.get_num_timesteps(m) for m in ("p0", "p1")} == counts
        for module_id in ("p0", "p1"):
            state = buffer.module_buffers[module_id].get_state()
            assert np.array_equal(state["_priorities"], module_states[module_id]["_priorities"])
            for name, value in weights[module_id].items():
                assert np.array_equal(restored.get_weights()[module_id][name], value)
        # Training goes on from the restored buffers.
        result = restored.train()
        assert {"p0", "p1"} <= set(result["learners"])
        assert buffer.get_added_timesteps() > env_steps
        # The restored episodes went on from where they were: each agent step is stored
        # once, in its module's buffer.
        assert buffer.get_num_agent_timesteps() == sum(
            buffer.get_num_timesteps(m) for m in ("p0", "p1")
        )
    finally:
        restored.stop()


def test_a_buffer_type_that_does_not_fit_the_agents_is_refused():
    with pytest.raises(ConfigError, match=r"type='PrioritizedEpisodeReplayBuffer' does not fit"):
        _two_policies(buffer="PrioritizedEpisodeReplayBuffer").validate()
    single = DQNConfig().environment("CartPole-v1")
    single.training(replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer"})
    with pytest.raises(ConfigError, match=r"'type': 'EpisodeReplayBuffer'"):
        single.validate()


def test_agents_acting_in_turns_reach_their_module_buffers_whole():
    """Chunks cut while an agent waits for its next observation (its action hangs at the
    cut): each module's buffer gets the agent's steps as the whole episode holds them, with
    the reward carried to the agent's next step."""
    config = (
        DQNConfig()
        .environment(TakeTurns, env_config={"length": 5})
        .training(replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer"})
        .multi_agent(
            policies={"pa", "pb"}, policy_mapping_fn=lambda agent_id, *a, **kw: f"p{agent_id}"
        )
        .debugging(seed=1)
    )
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    buffer = MultiAgentEpisodeReplayBuffer(capacity=1000)
    complete = {}
    try:
        for i in range(12):
            # Episodes of 5 env steps in fragments of 2 and 3: each is cut after "a"'s
            # second turn, while "b"'s action hangs.
            for chunk in runner.sample(num_timesteps=2 + i % 2, random_actions=True):
                buffer.add(chunk)
                if chunk.id_ in complete:
                    complete[chunk.id_].concat_episode(chunk)
                else:
                    complete[chunk.id_] = chunk
    finally:
        runner.stop()
    assert len(complete) == 6 and all(episode.is_done for episode in complete.values())
    for module_id, agent_id in (("pa", "a"), ("pb", "b")):
        module_buffer = buffer.module_buffers[module_id]
        stored = {episode.id_: episode for episode in module_buffer.episodes}
        whole = {
            episode.agent_episodes[agent_id].id_: episode.agent_episodes[agent_id]
            for episode in complete.values()
        }
        assert set(stored) == set(whole)
        for episode_id, agent_episode in whole.items():
            kept = stored[episode_id]
            assert len(kept) == len(agent_episode) > 0 and kept.is_done
            assert np.allclose(kept.get_observations(), np.array(agent_episode.get_observations()))
            assert list(kept.get_actions()) == list(agent_episode.get_actions())
            assert list(kept.get_rewards()) == list(agent_episode.get_rewards())
    # "b"'s steps carry 0.5 from "a"'s turn on top of its own reward (1 + its action).
    b_rewards = np.concatenate(
        [episode.get_rewards() for episode in buffer.module_buffers["pb"].episodes]
    )
    assert set(b_rewards.tolist()) <= {1.5, 2.5}
    assert buffer.get_num_agent_timesteps() == sum(
        buffer.get_num_timesteps(m) for m in ("pa", "pb")
    )
