"""Sub-env restarts in the MultiAgentEnvRunner (`restart_failed_sub_environments=True`): a
MultiAgentEnv that raises in `step()` or `reset()` is re-created, its episode dropped (its
steps count as lost), the other sub-envs go on; without the setting the error ends the sample.
MultiAgentCartPoleCrashing (RLlib's example env) crashes at a fixed step of each episode."""

from __future__ import annotations

import pytest

from callbacks import RLlibCallback
from trainer import PPOConfig
from trainer.errors import EnvError
from trainer.examples.envs.classes.cartpole_crashing import MultiAgentCartPoleCrashing
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner
from trainer.runners.multi_agent_sub_env_guard import MultiAgentSubEnvGuard


class _Ends(RLlibCallback):
    ended: list = []

    def on_episode_end(self, *, episode, **kwargs):
        type(self).ended.append(episode.env_steps())


def _config(restart: bool = True, num_envs: int = 2, **env_config):
    return (
        PPOConfig()
        .environment(
            MultiAgentCartPoleCrashing,
            env_config={"num_agents": 2, "p_crash": 0.0, **env_config},
        )
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}"
        )
        .env_runners(num_envs_per_env_runner=num_envs)
        .fault_tolerance(restart_failed_sub_environments=restart)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .callbacks(_Ends)
        .debugging(seed=2)
    )


def _runner(config) -> MultiAgentEnvRunner:
    return MultiAgentEnvRunner(config, worker_index=1, num_workers=1)


def test_a_sub_env_that_raises_in_step_is_recreated_and_its_episode_dropped():
    _Ends.ended = []
    # Each sub-env raises at the 5th step of every episode: 4 good steps, then a restart.
    runner = _runner(_config(crash_after_n_steps=5))
    try:
        first_envs = list(runner.env.envs)
        assert all(isinstance(env, MultiAgentSubEnvGuard) for env in first_envs)
        chunks = runner.sample(num_timesteps=40)
        metrics = runner.get_metrics()
        # Steps that raised are not env steps: 5 rounds of 4 good steps in both sub-envs.
        assert metrics["num_env_steps_sampled"].peek() == 40
        assert metrics["num_sub_environment_restarts_lifetime"].peek() == 8
        assert metrics["num_env_steps_lost_lifetime"].peek() == 32
        # The dropped episodes end without on_episode_end and are not returned; what is
        # returned holds only real steps: every agent observed at every step.
        assert _Ends.ended == []
        assert [chunk.env_steps() for chunk in chunks] == [4, 4]
        for chunk in chunks:
            for agent in chunk.agent_episodes.values():
                assert len(agent) == 4 and len(agent.get_observations()) == 5
        assert all(new is not old for new, old in zip(runner.env.envs, first_envs, strict=True))
        # The re-created sub-envs know they were re-created (their CartPoles' EnvContext).
        assert all(env.unwrapped.envs[0].config.recreated_worker for env in runner.env.envs)
    finally:
        runner.stop()


def test_the_other_sub_envs_keep_their_episodes():
    runner = _runner(_config(num_envs=2))
    try:
        runner.sample(num_timesteps=6)
        broken, healthy = runner.env.envs
        broken_episode, healthy_episode = runner._episodes

        def crash(action_dict):
            raise EnvError("simulated crash of sub-env 0")

        broken.env.step = crash
        chunks = runner.sample(num_timesteps=2)
        # Sub-env 0's step raised (no env step, its episode dropped, a new one started in the
        # re-created sub-env); sub-env 1 stepped on in the same episode (its chunk continues
        # the one returned before).
        ids = [chunk.id_ for chunk in chunks]
        assert healthy_episode.id_ in ids and broken_episode.id_ not in ids
        assert runner.env.envs[0] is not broken and runner.env.envs[1] is healthy
        assert runner.get_metrics()["num_sub_environment_restarts_lifetime"].peek() == 1
    finally:
        runner.stop()


def test_without_restarts_the_env_error_ends_the_sample():
    runner = _runner(_config(restart=False, crash_after_n_steps=3))
    try:
        assert not isinstance(runner.env.envs[0], MultiAgentSubEnvGuard)
        with pytest.raises(EnvError, match="Simulated env crash"):
            runner.sample(num_timesteps=20)
    finally:
        runner.stop()


def test_a_sub_env_that_cannot_even_reset_fails_the_runner():
    runner = _runner(_config(num_envs=1, p_crash_reset=1.0))
    try:
        with pytest.raises(RuntimeError, match="raised again right after it was re-created"):
            runner.sample(num_timesteps=5)
    finally:
        runner.stop()


def test_ppo_trains_through_multi_agent_sub_env_crashes():
    config = _config(p_crash=0.01).training(train_batch_size=400, minibatch_size=100, num_epochs=1)
    algo = config.build()
    try:
        for _ in range(2):
            result = algo.train()
        fault_tolerance = result["fault_tolerance"]
        assert fault_tolerance["num_sub_environment_restarts"] > 0
        assert fault_tolerance["num_env_steps_lost"] > 0
        assert fault_tolerance["num_remote_worker_restarts"] == 0
        assert result["num_env_steps_sampled_lifetime"] >= 800
        assert set(result["learners"]) >= {"p0", "p1"}
    finally:
        algo.stop()


def test_complete_episodes_sampling_drops_a_sub_env_that_fails_while_finishing():
    _Ends.ended = []
    config = _config(crash_after_n_steps=5).env_runners(
        batch_mode="complete_episodes", rollout_fragment_length=3
    )
    runner = _runner(config)
    try:
        # 3 steps per sub-env are asked for; while the episodes finish, both sub-envs raise at
        # their 5th step: they are re-created and start no new episode, so the sample ends
        # with no complete episode instead of waiting for one.
        assert runner.sample() == []
        metrics = runner.get_metrics()
        assert metrics["num_sub_environment_restarts_lifetime"].peek() == 2
        assert metrics["num_env_steps_sampled"].peek() == 8
        assert _Ends.ended == []
        # The next sample starts new episodes in the re-created sub-envs.
        chunks = runner.sample(num_timesteps=4)
        assert [chunk.env_t_started for chunk in chunks] == [0, 0]
    finally:
        runner.stop()
