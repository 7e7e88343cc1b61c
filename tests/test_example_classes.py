"""RLlib's example classes (`ray.rllib.examples.*` -> `trainer.examples.*`): each env passes
gymnasium's env checker, keeps RLlib's dynamics and rewards, and several train through PPO with
real EnvRunner processes; the protobuf CartPole runs end to end through its decoder connector;
the hierarchical multi-agent envs hand control between levels; the envs that need absent
packages fail with a clear message."""

import os
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from callbacks import RLlibCallback
from trainer import ConfigError, DQNConfig, PPOConfig, SingleAgentEpisode
from trainer.connectors import FlattenObservations
from trainer.examples.connectors.classes.add_other_agents_row_index_to_xy_pos import (
    AddOtherAgentsRowIndexToXYPos,
)
from trainer.examples.connectors.classes.count_based_curiosity import CountBasedCuriosity
from trainer.examples.connectors.classes.euclidian_distance_based_curiosity import (
    EuclidianDistanceBasedCuriosity,
)
from trainer.examples.envs.classes import (
    action_mask_env,
    cartpole_sparse_rewards,
    cartpole_with_dict_observation_space,
    cartpole_with_large_observation_space,
    cliff_walking_wall_env,
    correlated_actions_env,
    d4rl_env,
    debug_counter_env,
    deterministic_envs,
    dm_control_suite,
    env_using_remote_actor,
    env_with_subprocess,
    fast_image_env,
    gpu_requiring_env,
    look_and_push,
    mock_env,
    nested_space_repeat_after_me_env,
    parametric_actions_cartpole,
    recommender_system_envs_with_recsim,
    repeat_after_me_env,
    repeat_initial_obs_env,
    simple_rpg,
    six_room_env,
    stateless_cartpole,
    stateless_pendulum,
    ten_step_error_env,
    transformed_action_space_env,
    windy_maze_env,
)
from trainer.examples.envs.classes.multi_agent import (
    bandit_envs_discrete,
    bandit_envs_recommender_system,
)
from trainer.examples.envs.env_rendering_and_recording import EnvRenderCallback, resize

try:  # the protobuf CartPole's messages need protobuf (in the test extra)
    from trainer.examples.connectors.classes.protobuf_cartpole_observation_decoder import (
        ProtobufCartPoleObservationDecoder,
    )
    from trainer.examples.envs.classes import cartpole_with_protobuf_observation_space
except ModuleNotFoundError as missing:
    if not (missing.name or "").startswith("google"):
        raise
    ProtobufCartPoleObservationDecoder = cartpole_with_protobuf_observation_space = None
needs_protobuf = pytest.mark.skipif(
    ProtobufCartPoleObservationDecoder is None,
    reason="needs protobuf (the test extra: pip install -e '.[test]')",
)

# Every single-agent env, as (constructor, arguments). RLlib's own versions of the first four
# pass gymnasium's checker; the others here pass it too (they call `super().reset(seed=seed)`,
# draw from the env's generator and return data inside their declared spaces).
CHECKED_ENVS = {
    "CartPoleWithDictObservationSpace": (
        cartpole_with_dict_observation_space.CartPoleWithDictObservationSpace,
        (),
    ),
    "CartPoleWithProtobufObservationSpace": (
        lambda: cartpole_with_protobuf_observation_space.CartPoleWithProtobufObservationSpace(),
        (),
    ),
    "StatelessCartPole": (stateless_cartpole.StatelessCartPole, ()),
    "StatelessPendulum": (stateless_pendulum.StatelessPendulum, ({"g": 9.8},)),
    "CartPoleSparseRewards": (cartpole_sparse_rewards.CartPoleSparseRewards, ()),
    "CartPoleWithLargeObservationSpace": (
        cartpole_with_large_observation_space.CartPoleWithLargeObservationSpace,
        (),
    ),
    "CliffWalkingWallEnv": (cliff_walking_wall_env.CliffWalkingWallEnv, ()),
    "CorrelatedActionsEnv": (correlated_actions_env.CorrelatedActionsEnv, ()),
    "DebugCounterEnv": (debug_counter_env.DebugCounterEnv, ({"start_at_t": 3},)),
    "FastImageEnv": (fast_image_env.FastImageEnv, ({},)),
    "LookAndPush": (look_and_push.LookAndPush, ()),
    "MockEnv": (mock_env.MockEnv, (10,)),
    "MockEnv2": (mock_env.MockEnv2, (10,)),
    "MockEnv3": (mock_env.MockEnv3, (10,)),
    "NestedSpaceRepeatAfterMeEnv": (
        nested_space_repeat_after_me_env.NestedSpaceRepeatAfterMeEnv,
        (),
    ),
    "RepeatAfterMeEnv": (repeat_after_me_env.RepeatAfterMeEnv, ()),
    "RepeatAfterMeEnv-continuous": (repeat_after_me_env.RepeatAfterMeEnv, ({"continuous": True},)),
    "RepeatInitialObsEnv": (repeat_initial_obs_env.RepeatInitialObsEnv, ()),
    "SimpleRPG": (simple_rpg.SimpleRPG, ({},)),
    "SixRoomEnv": (six_room_env.SixRoomEnv, ({"map": "medium"},)),
    "TenStepErrorEnv": (ten_step_error_env.TenStepErrorEnv, ({},)),
    "WindyMazeEnv": (windy_maze_env.WindyMazeEnv, ({},)),
    "GPURequiringEnv": (gpu_requiring_env.GPURequiringEnv, ()),
    "SimpleContextualBandit": (bandit_envs_discrete.SimpleContextualBandit, ()),
    "LinearDiscreteEnv": (bandit_envs_discrete.LinearDiscreteEnv, ({"feature_dim": 3},)),
    "WheelBanditEnv": (bandit_envs_discrete.WheelBanditEnv, ()),
    "ParametricRecSys": (bandit_envs_recommender_system.ParametricRecSys, ()),
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=needs_protobuf) if "Protobuf" in name else name
        for name in sorted(CHECKED_ENVS)
    ],
)
def test_env_passes_gymnasium_env_checker(name):
    cls, args = CHECKED_ENVS[name]
    env = cls(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checker's advice (infinite bounds, no spec)
        check_env(env, skip_render_check=True)


def _rollout(env, actions, seed=0):
    observation, _ = env.reset(seed=seed)
    steps = []
    for action in actions:
        steps.append(env.step(action))
    return observation, steps


@needs_protobuf
def test_cartpole_variants_carry_cartpoles_observations():
    _, plain = _rollout(gym.make("CartPole-v1").unwrapped, [0, 1, 1])
    _, stateless = _rollout(stateless_cartpole.StatelessCartPole(), [0, 1, 1])
    _, nested = _rollout(
        cartpole_with_dict_observation_space.CartPoleWithDictObservationSpace(), [0, 1, 1]
    )
    _, large = _rollout(
        cartpole_with_large_observation_space.CartPoleWithLargeObservationSpace(), [0, 1, 1]
    )
    _, proto = _rollout(
        cartpole_with_protobuf_observation_space.CartPoleWithProtobufObservationSpace(), [0, 1, 1]
    )
    decoder = ProtobufCartPoleObservationDecoder(
        input_observation_space=gym.spaces.Box(0, 255, (36,), np.uint8)
    )
    for p, s, n, big, pb in zip(plain, stateless, nested, large, proto, strict=True):
        obs = p[0]
        np.testing.assert_allclose(s[0], obs[[0, 2]])
        np.testing.assert_allclose(n[0]["x-pos"], obs[[0]])
        np.testing.assert_allclose(n[0]["angular-pos"]["value"], obs[2])
        np.testing.assert_allclose(n[0]["velocs"][0], obs[[1]])
        np.testing.assert_allclose(big[0]["actually-useful-stuff"], obs)
        episode = SingleAgentEpisode(observations=[pb[0]], len_lookback_buffer=0)
        decoder(rl_module=None, batch={}, episodes=[episode])
        np.testing.assert_allclose(episode.get_observations(-1), obs, rtol=1e-6)
        assert p[1:4] == s[1:4] == n[1:4] == pb[1:4]
    assert decoder.observation_space == gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    with pytest.raises(ValueError, match="1D uint8 Box"):
        ProtobufCartPoleObservationDecoder(
            input_observation_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        )


def test_sparse_rewards_pay_the_return_on_termination_and_restore_state():
    env = cartpole_sparse_rewards.CartPoleSparseRewards()
    env.reset(seed=3)
    snapshot = env.get_state()
    rewards, terminated, truncated = [], False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, _ = env.step(0)
        rewards.append(reward)
    assert rewards[:-1] == [0] * (len(rewards) - 1) and rewards[-1] == len(rewards)
    restored = env.set_state(snapshot)
    assert restored["action_mask"].tolist() == [1, 1] and env.running_reward == 0
    assert env.step(0)[1] == 0  # back at the start: the pole stands again


def test_grid_worlds_and_counters_pay_rllibs_rewards():
    cliff = cliff_walking_wall_env.CliffWalkingWallEnv()
    assert cliff.reset()[0] == 36
    assert cliff.step(cliff_walking_wall_env.ACTION_RIGHT)[0] == 36  # the wall
    _, steps = _rollout(cliff, [0] + [1] * 11 + [2])
    assert [s[0] for s in steps[-2:]] == [35, 47]
    assert sum(s[1] for s in steps) == -12 + 10 and steps[-1][2]

    rooms = six_room_env.SixRoomEnv({"time_limit": 3})
    assert rooms.reset()[0] == 14  # (1, 1) on a 13-wide map
    _, steps = _rollout(rooms, [0, 3, 3])  # up into the wall, then right twice
    assert [s[0] for s in steps] == [14, 15, 16] and steps[-1][1:4] == (-0.01, False, True)

    counter = debug_counter_env.DebugCounterEnv({"start_at_t": 2})
    _, steps = _rollout(counter, [0] * 15)
    assert [s[1] for s in steps[:4]] == [0.0, 1.0, 2.0, 0.0]
    assert [s[3] for s in steps] == [False] * 14 + [True]
    assert steps[-1][0].tolist() == [17.0]


def test_memory_envs_reward_remembering():
    env = repeat_after_me_env.RepeatAfterMeEnv({"repeat_delay": 2, "episode_len": 10})
    shown = [0, 0, env.reset(seed=1)[0]]  # the tokens, after RLlib's two zeros of padding
    total, done = 0.0, False
    while not done:
        observation, reward, done, _, _ = env.step(shown[-3])  # the token 2 steps back
        shown.append(observation)
        total += reward
    # The episode ends on the step that finds its history (padding and the token shown
    # before the step) longer than episode_len: 2 + 9 > 10.
    assert total == len(shown) - 3 == 9
    env.reset(seed=1)
    assert env.step(1)[1] == -1.0  # the first target is the padding's 0

    env = repeat_initial_obs_env.RepeatInitialObsEnv(episode_len=5)
    token = env.reset(seed=4)[0]
    steps = [env.step(token) for _ in range(5)]
    assert [s[1] for s in steps] == [1] * 5 and steps[-1][2] and steps[0][0] == 0
    assert env.step(1 - token)[1] == -1

    push = look_and_push.LookAndPush()
    for seed in range(6):
        push.reset(seed=seed)
        case = push.step(0)[0]  # look: reveals the hidden case
        for _ in range(3):
            push.step(1)
        observation, reward, terminated, truncated, _ = push.step(case)
        assert (observation, reward, terminated, truncated) == (
            4,
            10.0 if case else -10.0,
            True,
            False,
        )
    assert look_and_push.OneHot(push).reset(seed=0)[0].tolist() == [0, 0, 1, 0, 0]


def test_action_masks_and_parametric_actions_refuse_invalid_actions():
    env = parametric_actions_cartpole.ParametricActionsCartPole(6)
    observation, _ = env.reset(seed=0)
    for _ in range(5):
        valid = np.flatnonzero(observation["action_mask"])
        assert len(valid) == 2 and env.observation_space.contains(observation)
        np.testing.assert_array_equal(
            np.flatnonzero(observation["avail_actions"].any(axis=1)), valid
        )
        observation, reward, *_ = env.step(int(valid[0]))
        assert reward == 1.0
    with pytest.raises(ValueError, match="not one of the non-zero action embeddings"):
        env.step(int(np.flatnonzero(observation["action_mask"] == 0)[0]))

    fixed = parametric_actions_cartpole.ParametricActionsCartPoleNoEmbeddings(5)
    observation, _ = fixed.reset(seed=0)
    assert fixed.observation_space.contains(observation)
    with pytest.raises(ValueError):
        fixed.step(int(np.flatnonzero(observation["valid_avail_actions_mask"] == 0)[0]))

    masked = action_mask_env.ActionMaskEnv({"action_space": gym.spaces.Discrete(4)})
    observation, _ = masked.reset()
    invalid = np.flatnonzero(observation["action_mask"] == 0)
    if len(invalid):
        with pytest.raises(ValueError, match="Invalid action"):
            masked.step(int(invalid[0]))
    with pytest.raises(ValueError, match="must be Discrete"):
        action_mask_env.ActionMaskEnv({"action_space": gym.spaces.Box(-1, 1, (2,))})


def test_bandits_and_correlated_actions_pay_rllibs_rewards():
    bandit = bandit_envs_discrete.SimpleContextualBandit()
    for seed in range(4):
        context = bandit.reset(seed=seed)[0][0]
        best = 0 if context == 1.0 else 2
        assert bandit.step(best)[1:5] == (10, True, False, {"regret": 0})

    wheel = bandit_envs_discrete.WheelBanditEnv({"std": 0.0})
    for seed in range(10):
        wheel.reset(seed=seed)
        _, reward, _, _, info = wheel.step(0)  # arm 0 pays mu_1; the best arm 1.2 or 50
        assert reward == 1.2
        assert info["regret"] == pytest.approx(0.0 if info["opt_action"] == 0 else 48.8)

    correlated = correlated_actions_env.CorrelatedActionsEnv()
    obs = correlated.reset(seed=0)[0][0]
    a1 = int(np.clip(np.round(1.0 - obs), 0, 2))
    a2 = np.array([-(obs + a1)], np.float32)
    assert correlated.step((a1, a2))[1] == pytest.approx(-abs(1.0 - (obs + a1)), abs=1e-6)


def test_ten_step_error_env_fails_in_its_second_episode():
    env = ten_step_error_env.TenStepErrorEnv({})
    env.reset(seed=0)
    steps = [env.step(env.action_space.sample()) for _ in range(10)]
    assert steps[-1][2] and not any(s[2] for s in steps[:-1])
    assert env.reset()[1] == {"last_eps_errored": True}
    for _ in range(9):
        env.step(env.action_space.sample())
    with pytest.raises(Exception, match="Test error"):
        env.step(env.action_space.sample())


def test_transformed_action_space_maps_actions_linearly():
    env = transformed_action_space_env.TransformedActionPendulum({"low": -15.0, "high": 5.0})
    assert env.action_space == gym.spaces.Box(-15.0, 5.0, (1,), np.float32)
    np.testing.assert_allclose(env.action(np.array([-15.0])), [-2.0])
    np.testing.assert_allclose(env.action(np.array([5.0])), [2.0])
    default = transformed_action_space_env.transform_action_space(
        lambda config: gym.make("Pendulum-v1")
    )({})
    np.testing.assert_allclose(default.action(np.array([0.0])), [0.0])


def test_deterministic_creators_and_mock_vector_envs():
    first = deterministic_envs.create_cartpole_deterministic({"seed": 5})
    second = deterministic_envs.create_cartpole_deterministic({"seed": 5})
    np.testing.assert_array_equal(first.unwrapped.state, second.unwrapped.state)
    assert deterministic_envs.create_pendulum_deterministic({}).spec.id == "Pendulum-v1"

    vectorized = mock_env.VectorizedMockEnv(episode_length=2, num_envs=3)
    assert vectorized.vector_reset() == ([0, 0, 0], [{}, {}, {}])
    vectorized.vector_step([0, 1, 0])
    observations, rewards, terminated, truncated, _ = vectorized.vector_step([0, 1, 0])
    assert rewards == [1.0] * 3 and terminated == [True] * 3
    assert len(vectorized.get_sub_environments()) == 3

    pretending = mock_env.MockVectorEnv(episode_length=2, mocked_num_envs=4)
    observations, _ = pretending.vector_reset(seeds=[0])
    assert len(observations) == 4
    pretending.vector_step([0] * 4)
    results = pretending.vector_step([0] * 4)
    assert all(len(batch) == 4 for batch in results) and any(results[3])

    frames = mock_env.MockEnv2(3)
    frames.reset(seed=0)
    assert frames.render().shape == (300, 400, 3)


def test_simple_rpg_observations_are_repeated_structures():
    env = simple_rpg.SimpleRPG({})
    observation, _ = env.reset(seed=0)
    assert 1 <= len(observation) <= simple_rpg.MAX_PLAYERS
    assert all(len(player["items"]) <= simple_rpg.MAX_ITEMS for player in observation)
    assert not env.observation_space.contains([observation[0]] * (simple_rpg.MAX_PLAYERS + 1))
    assert env.step(0)[1:3] == (1, True)


def test_recommender_env_budget_ends_the_episode():
    env = bandit_envs_recommender_system.ParametricRecSys(
        num_docs_to_select_from=4,
        slate_size=2,
        num_docs_in_db=10,
        num_users_in_db=2,
        user_time_budget=3.0,
    )
    env.reset(seed=0)
    for _ in range(200):
        observation, reward, done, _, _ = env.step(np.array([0, 1]))
        assert env.observation_space.contains(observation) and 0.0 <= reward <= 100.0
        if done:
            break
    assert done and env.current_user_budget <= 0.0


def test_env_with_subprocess_deletes_its_close_file(tmp_path):
    files = {f"tmp_file{i}": str(tmp_path / f"file{i}") for i in range(1, 5)}
    for path in files.values():
        open(path, "w").close()
    env = env_with_subprocess.EnvWithSubprocess(files)
    try:
        assert env.subproc.poll() is None  # the child runs
        env.close()
        assert not os.path.exists(files["tmp_file3"]) and os.path.exists(files["tmp_file4"])
    finally:
        env.subproc.kill()
        env.subproc.wait(timeout=10)


def test_hierarchical_six_room_env_hands_control_between_levels():
    env = six_room_env.HierarchicalSixRoomEnv({"num_low_level_agents": 2, "time_limit": 40})
    assert env.possible_agents == ["high_level_agent", "low_level_agent_0", "low_level_agent_1"]
    obs, _ = env.reset()
    assert obs == {"high_level_agent": 14}  # field (1, 1) of a 13-column map
    # Target (1, 2) for low-level agent 1: it acts next, observing (position, target).
    obs, rewards, terminateds, _, _ = env.step({"high_level_agent": (15, 1)})
    assert obs == {"low_level_agent_1": (14, 15)} and not terminateds["__all__"]
    assert rewards["high_level_agent"] == pytest.approx(1 / (9**2 + 13**2) ** 0.5 - 1.0)
    obs, rewards, _, _, _ = env.step({"low_level_agent_1": 0})  # up: a wall, no move
    assert obs == {"low_level_agent_1": (14, 15)} and rewards == {"low_level_agent_1": -0.01}
    obs, rewards, _, _, _ = env.step({"low_level_agent_1": 3})  # right: the target
    assert obs == {"high_level_agent": 15}
    assert rewards == {"high_level_agent": 1.0, "low_level_agent_1": 1.0}
    with pytest.raises(ValueError, match="exactly the low-level agent it picked acts"):
        env.step({"low_level_agent_0": 1, "low_level_agent_1": 1})


def test_hierarchical_windy_maze_env_makes_a_new_low_level_agent_per_goal():
    env = windy_maze_env.HierarchicalWindyMazeEnv({})
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["high_level_agent"] and infos == {"high_level_agent": {}}
    for goal_number in (1, 2):
        obs, rewards, _, _, _ = env.step({"high_level_agent": 1})
        agent = f"low_level_{goal_number}"
        assert list(obs) == [agent] and obs[agent][1] == 1 and rewards == {agent: 0}
        for _ in range(24):
            obs, rewards, terminateds, _, _ = env.step({agent: 0})  # stay: reward 0
            assert rewards == {agent: 0} and agent not in terminateds
        obs, rewards, terminateds, _, _ = env.step({agent: 0})  # the 25th step ends it
        assert terminateds == {"__all__": False, agent: True}
        assert set(obs) == {agent, "high_level_agent"} and rewards["high_level_agent"] == 0


def test_multi_agent_preprocessor_rewrites_each_step_before_the_episodes_record_it():
    """RLlib's AddOtherAgentsRowIndexToXYPos (a MultiAgentObservationPreprocessor) with
    FlattenObservations for agent_0 only, in EnvRunner processes: the modules are built for
    the rewritten spaces and the episodes hold the rewritten observations."""
    from trainer.examples.envs.classes.multi_agent.double_row_corridor_env import (
        DoubleRowCorridorEnv,
    )

    piece = AddOtherAgentsRowIndexToXYPos()
    env = DoubleRowCorridorEnv()
    spaces = {aid: env.get_observation_space(aid) for aid in env.possible_agents}
    piece.set_input_spaces(gym.spaces.Dict(spaces), None)
    length = int(spaces["agent_0"].high[1]) + 1
    step = piece.preprocess({"agent_0": np.array([1, 3]), "agent_1": np.array([0, 2])}, None)
    assert step["agent_0"] == {"agent": length + 3, "other_agent_row": 0}
    np.testing.assert_array_equal(step["agent_1"], [0.0, 2.0, 1.0])
    assert piece.preprocess({"agent_1": np.array([1, 0])}, None)["agent_1"][2] == 2  # done
    config = (
        PPOConfig()
        .environment(DoubleRowCorridorEnv)
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=2,
            env_to_module_connector=lambda env, spaces, device: [
                AddOtherAgentsRowIndexToXYPos(),
                FlattenObservations(multi_agent=True, agent_ids=["agent_0"]),
            ],
        )
        .multi_agent(
            policies={"p0", "p1"},
            policy_mapping_fn=lambda aid, episode, **kw: "p0" if aid == "agent_0" else "p1",
        )
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
    )
    algo = config.build()
    try:
        episodes = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.sample(num_timesteps=64), local_env_runner=False
        )[0]
        result = algo.train()
        module_spaces = algo.env_runner_group.spaces
    finally:
        algo.stop()
    assert module_spaces["p0"][0].shape == (2 * length + 3,)  # one-hot index + one-hot row
    assert module_spaces["p1"][0].shape == (3,)
    agent_1 = [e.agent_episodes["agent_1"] for e in episodes if "agent_1" in e.agent_episodes]
    assert np.asarray(agent_1[0].get_observations(0)).shape == (3,)
    assert np.isfinite(result["learners"]["p0"]["total_loss"])


def test_envs_needing_absent_packages_name_them(monkeypatch):
    # None in sys.modules makes `import x` raise ImportError, installed or not.
    for package in ("d4rl", "dm_control", "recsim"):
        monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(ModuleNotFoundError, match="`d4rl` package"):
        d4rl_env.hopper_medium()
    with pytest.raises(ModuleNotFoundError, match=r"pip install -e '\.\[mujoco\]'"):
        dm_control_suite.walker_walk(from_pixels=False)
    with pytest.raises(ModuleNotFoundError, match="`recsim` package"):
        recommender_system_envs_with_recsim.InterestEvolutionRecSimEnv({"slate_size": 2})


def test_curiosity_pieces_add_intrinsic_rewards_to_the_episodes():
    def episode():
        return SingleAgentEpisode(
            observations=[
                np.array([0.0, 0.0]),
                np.array([1.0, 0.0]),
                np.array([0.0, 0.0]),
                np.array([3.0, 4.0]),
            ],
            actions=[0, 0, 0],
            rewards=[1.0, 1.0, 1.0],
            len_lookback_buffer=0,
        )

    counted = episode()
    CountBasedCuriosity(intrinsic_reward_coeff=0.5)(rl_module=None, batch={}, episodes=[counted])
    # Observation counts 1, 1, 2 (the first one repeats): rewards + 0.5 / count.
    np.testing.assert_allclose(counted.get_rewards(), [1.5, 1.5, 1.25])

    piece = EuclidianDistanceBasedCuriosity(max_buffer_size=2)
    first, second = episode(), episode()
    piece(rl_module=None, batch={}, episodes=[first])
    np.testing.assert_allclose(first.get_rewards(), [1.0, 1.0, 1.0])  # empty buffer
    piece(rl_module=None, batch={}, episodes=[second])
    # The buffer holds [0, 0] (first episode's farthest, all at distance 0: the first one).
    np.testing.assert_allclose(second.get_rewards(), [1.0, 2.0, 1.0])

    with pytest.raises(ConfigError, match="learner connectors run with PPO, IMPALA and APPO"):
        (
            DQNConfig()
            .environment("CartPole-v1")
            .training(learner_connector=lambda obs, act: CountBasedCuriosity())
            .validate()
        )


def test_resize_averages_areas():
    image = np.arange(16, dtype=np.float64).reshape(4, 4)
    np.testing.assert_allclose(resize(image, 2, 2), [[2.5, 4.5], [10.5, 12.5]])
    frame = np.full((300, 400, 3), 200, np.uint8)
    scaled = resize(frame, 64, 96)
    assert scaled.shape == (64, 96, 3) and scaled.dtype == np.uint8 and (scaled == 200).all()


# -- training through PPO, with real EnvRunner processes -------------------------------------


class ObservationRange(RLlibCallback):
    """Reports the shape and the largest absolute value of the observations the module saw."""

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        observations = np.asarray(episode.get_observations())
        metrics_logger.log_value("obs_width", observations.shape[-1], reduce="max")
        metrics_logger.log_value("max_abs_obs", float(np.abs(observations).max()), reduce="max")


def _tiny_ppo(env, env_config=None, **env_runners):
    return (
        PPOConfig()
        .environment(env, env_config=env_config or {})
        .env_runners(num_env_runners=1, **env_runners)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )


@pytest.mark.parametrize(
    "env, env_config, connector",
    [
        (stateless_cartpole.StatelessCartPole, {}, None),
        (stateless_pendulum.StatelessPendulum, {"g": 9.0}, None),
        (repeat_after_me_env.RepeatAfterMeEnv, {"repeat_delay": 1, "episode_len": 20}, None),
        (bandit_envs_discrete.SimpleContextualBandit, {}, None),
        (
            cartpole_with_dict_observation_space.CartPoleWithDictObservationSpace,
            {},
            lambda env, spaces, device: FlattenObservations(),
        ),
    ],
    ids=[
        "StatelessCartPole",
        "StatelessPendulum",
        "RepeatAfterMeEnv",
        "SimpleContextualBandit",
        "CartPoleWithDictObservationSpace",
    ],
)
def test_env_trains_through_ppo_on_a_worker_process(env, env_config, connector):
    config = _tiny_ppo(
        env, env_config, **({"env_to_module_connector": connector} if connector else {})
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 128
        learner = result["learners"]["default_policy"]
        assert learner["num_env_steps_trained"] >= 128 and np.isfinite(learner["total_loss"])
    finally:
        algo.stop()


@needs_protobuf
def test_protobuf_cartpole_trains_through_its_decoder_connector():
    algo = (
        _tiny_ppo(
            cartpole_with_protobuf_observation_space.CartPoleWithProtobufObservationSpace,
            env_to_module_connector=lambda env, spaces, device: (
                ProtobufCartPoleObservationDecoder()
            ),
        ).callbacks(ObservationRange)
    ).build()
    try:
        result = algo.train()
        runners = result["env_runners"]
        # The episodes (what the module saw and the learner trained on) hold CartPole's four
        # numbers, not the 36 message bytes (values up to 255).
        assert runners["obs_width"] == 4
        assert 0.0 < runners["max_abs_obs"] < 10.0
        assert runners["num_env_steps_sampled"] >= 128
    finally:
        algo.stop()


@pytest.mark.slow
def test_env_using_a_named_parameter_server_on_a_worker_process():
    env_using_remote_actor.ParameterStorage.options(name="param-server").remote()
    algo = _tiny_ppo(env_using_remote_actor.CartPoleWithRemoteParamServer).build()
    try:
        masses = algo.env_runner_group.foreach_env_runner(
            lambda runner: [float(env.unwrapped.masscart) for env in runner.env.envs],
            local_env_runner=False,
        )
        assert all(0.5 <= mass <= 2.0 for mass in masses[0])
        assert algo.train()["env_runners"]["num_env_steps_sampled"] >= 128
    finally:
        algo.stop()


class RenderedFrames(EnvRenderCallback):
    """EnvRenderCallback that reports what it would log as numbers (this test does not depend
    on the MetricsLogger's `item_series`)."""

    def on_sample_end(self, *, metrics_logger, **kwargs):
        for key, (video, episode_return) in (
            ("best", self.best_episode_and_return),
            ("worst", self.worst_episode_and_return),
        ):
            if video is not None:
                metrics_logger.log_value(f"{key}_video_frames", video.shape[1], reduce="max")
                metrics_logger.log_value(f"{key}_video_return", episode_return, reduce="max")
                metrics_logger.log_value("frame_shape", np.prod(video.shape[2:]), reduce="max")
                metrics_logger.log_value("frame_max", int(video.max()), reduce="max")
        self.best_episode_and_return = (None, float("-inf"))
        self.worst_episode_and_return = (None, float("inf"))


@pytest.mark.slow
def test_env_render_callback_keeps_the_best_and_worst_episodes_frames():
    algo = (
        _tiny_ppo("CartPole-v1", {"render_mode": "rgb_array"}).callbacks(RenderedFrames)
    ).build()
    try:
        runners = algo.train()["env_runners"]
        # CartPole pays 1 per step: an episode's video has one frame per step.
        assert runners["best_video_frames"] == runners["best_video_return"]
        assert runners["frame_shape"] == 3 * 64 * 96 and runners["frame_max"] > 0
        assert runners["best_video_return"] >= runners["episode_return_max"] - 1e-9
    finally:
        algo.stop()


def _metrics_logger_has_item_series() -> bool:
    from trainer.metrics import MetricsLogger

    try:
        MetricsLogger().log_value("probe", 1, reduce="item_series")
    except ValueError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(
    not _metrics_logger_has_item_series(),
    reason="EnvRenderCallback logs with reduce='item_series', which this "
    "MetricsLogger does not have yet",
)
def test_env_render_callback_logs_best_and_worst_videos():
    algo = (
        _tiny_ppo("CartPole-v1", {"render_mode": "rgb_array"}).callbacks(EnvRenderCallback)
    ).build()
    try:
        result = algo.train()
        videos = result["env_runners"]["episode_videos_best"]
        video = videos[0] if isinstance(videos, list) else videos
        assert video.shape[0] == 1 and video.shape[2:] == (3, 64, 96)
        assert video.dtype == np.uint8
    finally:
        algo.stop()


def test_custom_action_distribution_module_divides_its_logits_by_the_temperature():
    """RLlib's CustomActionDistributionRLModule: its own distribution class (set in setup())
    samples from softmax(logits / temperature); a temperature <= 0 is refused."""
    torch = pytest.importorskip("torch")
    from trainer.examples.rl_modules.classes.custom_action_distribution_rlm import (
        CustomActionDistributionRLModule,
    )

    def module(temperature):
        return CustomActionDistributionRLModule(
            observation_space=gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
            action_space=gym.spaces.Discrete(3),
            model_config={"hidden_dim": 8, "action_dist_temperature": temperature},
        )

    rlm = module(0.5)
    logits = torch.tensor([[1.0, 0.0, -1.0]])
    dist = rlm.get_exploration_action_dist_cls().from_logits(logits)
    expected = torch.softmax(logits / 0.5, dim=-1)
    np.testing.assert_allclose(dist.logp(torch.arange(3)).exp().numpy(), expected[0].numpy(), 1e-6)
    out = rlm.forward_exploration({"obs": torch.zeros(2, 4)})
    assert out["action_dist_inputs"].shape == (2, 3)
    with pytest.raises(ValueError, match="action_dist_temperature=0.0"):
        module(0.0)
