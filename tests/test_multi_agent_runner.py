"""The MultiAgentEnvRunner and multi-agent PPO through the public API: exact step counts,
agents acting in turns, one forward pass per module, RLlib's metric keys and callback events,
training with EnvRunner processes, policies_to_train, checkpoints."""

import gc

import numpy as np
import pytest
from multi_agent_envs import CartPoles, TakeTurns

from callbacks import RLlibCallback
from trainer import PPOConfig
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


def _two_policies(env=CartPoles, num_agents=2, **env_runners):
    return (
        PPOConfig()
        .environment(env, env_config={"num_agents": num_agents})
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}"
        )
        .env_runners(**env_runners)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=3)
    )


def _turns_config(**multi_agent):
    return (
        PPOConfig()
        .environment(TakeTurns)
        .multi_agent(
            policies={"pa", "pb"},
            policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}",
            **multi_agent,
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
    )


def _runner(config, **kwargs):
    return MultiAgentEnvRunner(config, worker_index=1, num_workers=1, **kwargs)


def test_seeded_runners_start_from_the_same_weights():
    """A seeded config's runners build each policy's module alike (their draws are then
    alike too, before any weights come from a learner)."""
    first, second = _runner(_two_policies()), _runner(_two_policies())
    try:
        weights = first.get_weights(), second.get_weights()
        assert weights[0].keys() == {"p0", "p1"}
        for module_id, module_weights in weights[0].items():
            for name, values in module_weights.items():
                np.testing.assert_array_equal(values, weights[1][module_id][name])
        # (Each module its own draws: seeded by its id.)
        p0, p1 = (
            np.concatenate([np.ravel(v) for v in weights[0][m].values()]) for m in ("p0", "p1")
        )
        assert not np.array_equal(p0, p1)
    finally:
        first.stop()
        second.stop()


@pytest.mark.parametrize("num_envs", [1, 3])
def test_sampling_timesteps_counts_env_steps_as_rllib(num_envs):
    runner = _runner(_two_policies(num_envs_per_env_runner=num_envs))
    try:
        for num_timesteps in (10, 31):
            episodes = runner.sample(num_timesteps=num_timesteps)
            env_steps = sum(episode.env_steps() for episode in episodes)
            assert num_timesteps <= env_steps < num_timesteps + num_envs
            assert all(isinstance(episode, MultiAgentEpisode) for episode in episodes)
    finally:
        runner.stop()


def test_count_steps_by_agent_steps_counts_each_acting_agent():
    config = _two_policies(num_envs_per_env_runner=1).multi_agent(count_steps_by="agent_steps")
    runner = _runner(config)
    try:
        episodes = runner.sample(num_timesteps=40)
        agent_steps = sum(episode.agent_steps() for episode in episodes)
        env_steps = sum(episode.env_steps() for episode in episodes)
        assert 40 <= agent_steps <= 41  # two agents per env step while both stand
        assert env_steps < agent_steps
    finally:
        runner.stop()


def test_agents_acting_in_turns_get_their_carried_rewards():
    runner = _runner(_turns_config())
    try:
        episodes = runner.sample(num_episodes=3)
        assert len(episodes) == 3
        for episode in episodes:
            assert episode.is_done and episode.env_steps() == 6
            a, b = episode.agent_episodes["a"], episode.agent_episodes["b"]
            assert len(a) == len(b) == 3  # each acted on every other env step
            actions = np.concatenate([a.get_actions(), b.get_actions()])
            # every env step paid 1 + action to its actor, and all but the first 0.5 to the
            # other agent
            total = 6 + 5 * 0.5 + float(actions.sum())
            assert episode.get_return() == pytest.approx(total)
            assert a.get_return() + b.get_return() == pytest.approx(total)
            assert a.module_id == "pa" and b.module_id == "pb"
    finally:
        runner.stop()


def test_each_module_runs_one_forward_pass_over_all_its_rows():
    config = (
        PPOConfig()
        .environment(CartPoles, env_config={"num_agents": 3})
        .multi_agent(
            policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared"
        )
        .env_runners(num_envs_per_env_runner=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    runner = _runner(config)
    module = runner.module["shared"]
    batch_sizes = []
    forward = module.dist_inputs

    def counting(obs):
        batch_sizes.append(len(obs))
        return forward(obs)

    module.dist_inputs = counting
    try:
        runner.sample(num_timesteps=2)  # one step of both sub-envs, right after the reset
        assert batch_sizes == [6]  # 2 sub-envs x 3 agents in one pass
    finally:
        runner.stop()


def test_metrics_have_rllibs_multi_agent_keys():
    runner = _runner(_turns_config())
    try:
        runner.sample(num_episodes=2)
        metrics = runner.get_metrics()

        def peek(*path):
            value = metrics
            for key in path:
                value = value[key]
            return value.peek()

        assert peek("num_env_steps_sampled") == 12
        assert peek("num_episodes") == 2
        # agent steps: the agents in each result (one per step, both at the last)
        assert peek("num_agent_steps_sampled", "a") + peek("num_agent_steps_sampled", "b") == 14
        assert peek("num_module_steps_sampled", "pa") == peek("num_agent_steps_sampled", "a")
        returns = peek("agent_episode_returns_mean", "a") + peek("agent_episode_returns_mean", "b")
        assert returns == pytest.approx(peek("episode_return_mean"))
        assert peek("module_episode_returns_mean", "pa") == pytest.approx(
            peek("agent_episode_returns_mean", "a")
        )
        assert peek("episode_len_mean") == 6
    finally:
        runner.stop()


class _Events(RLlibCallback):
    seen: list = []

    def on_episode_created(self, *, episode, rl_module, **kwargs):
        type(self).seen.append(("created", type(episode).__name__, sorted(rl_module.keys())))

    def on_episode_start(self, *, episode, **kwargs):
        type(self).seen.append(("start", episode.env_steps()))

    def on_episode_step(self, *, episode, **kwargs):
        type(self).seen.append(("step", episode.env_steps()))

    def on_episode_end(self, *, episode, **kwargs):
        type(self).seen.append(("end", episode.env_steps(), episode.is_done))


def test_episode_callbacks_receive_the_multi_agent_episode_in_order():
    _Events.seen = []
    runner = _runner(_turns_config().callbacks(_Events))
    try:
        runner.sample(num_episodes=1)
    finally:
        runner.stop()
    first = _Events.seen[: 2 + 6 + 1]
    assert first == [
        ("created", "MultiAgentEpisode", ["pa", "pb"]),
        ("start", 0),
        *[("step", t) for t in range(1, 7)],
        ("end", 6, True),
    ]


@pytest.mark.slow
def test_ppo_trains_each_policy_with_env_runner_processes():
    config = _two_policies(num_env_runners=2).training(
        train_batch_size=400, minibatch_size=100, num_epochs=2, lr=1e-3
    )
    algo = config.build()
    try:
        before = algo.get_weights()
        result = algo.train()
        assert {"p0", "p1"} <= set(result["learners"])
        assert set(result["env_runners"]["module_episode_returns_mean"]) == {"p0", "p1"}
        after = algo.get_weights()
        for module_id in ("p0", "p1"):
            assert any(
                not np.array_equal(before[module_id][k], after[module_id][k])
                for k in after[module_id]
            )
        # the runners act with the learners' weights
        for runner_weights in algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.get_weights(), local_env_runner=False
        ):
            for module_id in ("p0", "p1"):
                for name, value in after[module_id].items():
                    assert np.array_equal(runner_weights[module_id][name], value)
    finally:
        algo.stop()


def test_a_policy_left_out_of_policies_to_train_keeps_its_weights():
    config = _two_policies(num_env_runners=1).multi_agent(policies_to_train={"p0"})
    config = config.training(train_batch_size=200, minibatch_size=100, num_epochs=1)
    algo = config.build()
    try:
        before = algo.get_weights()
        result = algo.train()
        after = algo.get_weights()
        assert "p0" in result["learners"] and "p1" not in result["learners"]
        assert all(np.array_equal(before["p1"][k], after["p1"][k]) for k in after["p1"])
        runner_weights = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.get_weights(), local_env_runner=False
        )[0]
        assert all(np.array_equal(runner_weights["p1"][k], after["p1"][k]) for k in after["p1"])
        # (The worker's replies unpickle with the cyclic collector paused, then on again.)
        assert gc.isenabled()
    finally:
        algo.stop()


def test_a_multi_agent_checkpoint_restores_every_module(tmp_path):
    config = _two_policies(num_env_runners=0).training(
        train_batch_size=200, minibatch_size=100, num_epochs=1
    )
    algo = config.build()
    try:
        algo.train()
        algo.save_to_path(str(tmp_path))
        weights = algo.get_weights()
    finally:
        algo.stop()
    restored = config.build()
    try:
        restored.restore_from_path(str(tmp_path))
        for module_id in ("p0", "p1"):
            for name, value in weights[module_id].items():
                assert np.array_equal(restored.get_weights()[module_id][name], value)
        assert restored.iteration == 1
    finally:
        restored.stop()


def test_a_multi_agent_algorithm_answers_per_module():
    config = _two_policies(num_env_runners=0).training(
        train_batch_size=200, minibatch_size=100, num_epochs=1
    )
    algo = config.build()
    try:
        assert set(algo.get_weights()) == {"p0", "p1"}
        assert set(algo.get_weights(["p1"])) == {"p1"}
        assert set(algo.learner_group.get_weights()) == {"p0", "p1"}
        module = algo.get_module("p1")
        out = module.forward_inference({"obs": np.zeros((3, 4), np.float32)})
        assert out["action_dist_inputs"].shape == (3, 2)
        action = algo.compute_single_action(np.zeros(4, np.float32), policy_id="p0", explore=False)
        assert action in (0, 1)
        with pytest.raises(KeyError, match="p7"):
            algo.get_module("p7")
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_multi_agent_run_evaluates_on_its_own_runners():
    config = (
        _turns_config()
        .env_runners(num_env_runners=1)
        .training(train_batch_size=60, minibatch_size=30, num_epochs=1)
        .evaluation(evaluation_interval=1, evaluation_num_env_runners=1, evaluation_duration=2)
    )
    algo = config.build()
    try:
        evaluation = algo.train()["evaluation"]["env_runners"]
        assert evaluation["num_episodes"] == 2
        assert evaluation["episode_len_mean"] == 6
        assert set(evaluation["module_episode_returns_mean"]) == {"pa", "pb"}
    finally:
        algo.stop()


@pytest.mark.parametrize("random_actions", [True, False])
def test_chunks_cut_mid_turn_keep_each_agents_hanging_action(random_actions):
    """Agents in turns, sampled in uneven pieces: each cut falls between an agent's action and
    its next observation somewhere; every chunk is whole and every step is returned once."""
    config = _turns_config().environment(TakeTurns, env_config={"length": 9})
    runner = _runner(config)
    try:
        total = 0
        for i in range(40):
            episodes = runner.sample(num_timesteps=1 + i % 4, random_actions=random_actions)
            for episode in episodes:
                episode.validate()
            total += sum(episode.env_steps() for episode in episodes)
        assert total == sum(1 + i % 4 for i in range(40))
    finally:
        runner.stop()
