"""The arguments RLlib's own CI gives each example script of the Ray 2.60 wheel's
`rllib/examples`, for `bench/rllib_examples.py`.

Source: `rllib/BUILD.bazel` of ray-project/ray (the `py_test` entries of its "examples/"
section and its learning tests), read at commit 0013d9b70a61c6334b6ad183e6f49b62f20b44cf,
keeping the entries whose `main` file ships in the 2.60 wheel; `NOT_IN_WHEEL` holds those of
learning tests whose scripts the wheel does not ship (they run from `--extra-root`). Each entry is
(CI test name, args, CI tags worth knowing: "manual" = not run by RLlib's CI, "gpu",
"multi_gpu"; "flaky" = RLlib's CI tracks the test as flaky (its result varies from run to
run here too); "localrl" = not RLlib's: an extra run on an env this project ships in place of one
it does not). An example with no entry here has none in BUILD.bazel (it is run with no
arguments). Paths are relative to `ray/rllib/examples`.
"""

from __future__ import annotations

CIEntry = tuple[str, list[str], tuple[str, ...]]

CI_ARGS: dict[str, list[CIEntry]] = {
    "algorithms/appo_custom_algorithm_w_shared_data_actor.py": [
        ("appo_custom_algorithm_w_shared_data_actor", ["--as-test"], ()),
    ],
    "algorithms/maml_lr_supervised_learning.py": [
        (
            "maml_lr_supervised_learning",
            [
                "--as-test",
                "--stop-iters=70000",
                "--meta-lr=0.001",
                "--meta-train-batch-size=5",
                "--fine-tune-iters=10",
                "--fine-tune-batch-size=5",
                "--fine-tune-lr=0.01",
                "--noise-std=0.0",
                "--no-plot",
            ],
            (),
        ),
    ],
    "algorithms/vpg_custom_algorithm.py": [
        ("vpg_custom_algorithm", ["--as-test"], ()),
    ],
    "connectors/frame_stacking.py": [
        ("frame_stacking_ppo", ["--stop-iter=2", "--framework=torch", "--algo=PPO"], ()),
        (
            "frame_stacking_multi_agent_ppo",
            [
                "--num-agents=2",
                "--stop-iter=2",
                "--framework=torch",
                "--algo=PPO",
                "--num-env-runners=4",
                "--num-cpus=6",
            ],
            (),
        ),
        ("frame_stacking_impala", ["--stop-iter=2", "--framework=torch", "--algo=IMPALA"], ()),
        (
            "frame_stacking_multi_agent_impala",
            [
                "--num-agents=2",
                "--stop-iter=2",
                "--framework=torch",
                "--algo=IMPALA",
                "--num-env-runners=4",
                "--num-cpus=6",
            ],
            (),
        ),
        # ALE is not shipped: the same script on the project's Atari-like game.
        (
            "frame_stacking_ppo_tinycatch",
            ["--env=localrl/TinyCatch-v0", "--stop-iter=1", "--algo=PPO"],
            ("localrl",),
        ),
        (
            "frame_stacking_multi_agent_impala_tinycatch",
            [
                "--env=localrl/TinyCatch-v0",
                "--num-agents=2",
                "--stop-iter=1",
                "--algo=IMPALA",
                "--num-env-runners=2",
            ],
            ("localrl",),
        ),
    ],
    "connectors/flatten_observations_dict_space.py": [
        (
            "flatten_observations_dict_space_ppo",
            ["--as-test", "--stop-reward=400.0", "--framework=torch", "--algo=PPO"],
            (),
        ),
        (
            "flatten_observations_dict_space_multi_agent_ppo",
            [
                "--num-agents=2",
                "--as-test",
                "--stop-reward=800.0",
                "--framework=torch",
                "--algo=PPO",
            ],
            (),
        ),
        (
            "flatten_observations_dict_space_impala",
            [
                "--as-test",
                "--stop-reward=400.0",
                "--stop-timesteps=2000000",
                "--framework=torch",
                "--algo=IMPALA",
            ],
            (),
        ),
        (
            "flatten_observations_dict_space_multi_agent_impala",
            [
                "--num-agents=2",
                "--as-test",
                "--stop-reward=800.0",
                "--stop-timesteps=2000000",
                "--framework=torch",
                "--algo=IMPALA",
            ],
            ("manual",),
        ),
    ],
    "connectors/mean_std_filtering.py": [
        (
            "mean_std_filtering_ppo",
            [
                "--as-test",
                "--stop-reward=-300.0",
                "--framework=torch",
                "--algo=PPO",
                "--num-env-runners=2",
                "--num-cpus=4",
            ],
            ("manual",),
        ),
        (
            "mean_std_filtering_multi_agent_ppo",
            [
                "--num-agents=2",
                "--as-test",
                "--stop-reward=-600.0",
                "--framework=torch",
                "--algo=PPO",
                "--num-env-runners=5",
                "--num-cpus=7",
            ],
            (),
        ),
    ],
    "connectors/multi_agent_observation_preprocessor.py": [
        ("multi_agent_observation_preprocessor", ["--num-agents=2", "--algo=PPO"], ()),
    ],
    "connectors/prev_actions_prev_rewards.py": [
        (
            "prev_actions_prev_rewards_ppo",
            [
                "--as-test",
                "--stop-reward=200.0",
                "--framework=torch",
                "--algo=PPO",
                "--num-env-runners=4",
                "--num-cpus=6",
            ],
            (),
        ),
        (
            "prev_actions_prev_rewards_multi_agent_ppo",
            [
                "--num-agents=2",
                "--as-test",
                "--stop-reward=400.0",
                "--framework=torch",
                "--algo=PPO",
                "--num-env-runners=4",
                "--num-cpus=6",
            ],
            (),
        ),
    ],
    "connectors/single_agent_observation_preprocessor.py": [
        ("single_agent_observation_preprocessor", ["--algo=PPO"], ()),
    ],
    "envs/agents_act_in_sequence.py": [
        ("agents_act_in_sequence", ["--num-agents=2", "--stop-iters=3"], ()),
    ],
    "envs/agents_act_simultaneously.py": [
        ("agents_act_simultaneously", ["--num-agents=2", "--stop-iters=3"], ()),
    ],
    "envs/async_gym_env_vectorization.py": [
        ("async_gym_env_vectorization", ["--as-test", "--vectorize-mode=both"], ()),
    ],
    "envs/custom_env_render_method.py": [
        ("custom_env_render_method", ["--num-agents=0"], ()),
        ("custom_env_render_method_multi_agent", ["--num-agents=2"], ()),
    ],
    "envs/custom_gym_env.py": [
        ("custom_gym_env", ["--as-test"], ()),
    ],
    "envs/env_connecting_to_rllib_w_tcp_client.py": [
        (
            "env_connecting_to_rllib_w_tcp_client",
            ["--as-test", "--port=12346", "--use-dummy-client"],
            (),
        ),
    ],
    "envs/env_rendering_and_recording.py": [
        ("env_rendering_and_recording", ["--env=CartPole-v1", "--stop-iters=2"], ()),
    ],
    "envs/env_w_protobuf_observations.py": [
        ("env_w_protobuf_observations", ["--as-test"], ()),
    ],
    "learners/ppo_with_custom_loss_fn.py": [
        ("ppo_with_custom_loss_fn", ["--as-test"], ()),
    ],
    "learners/ppo_with_torch_lr_schedulers.py": [
        ("ppo_with_torch_lr_schedulers", ["--as-test"], ()),
    ],
    "learners/separate_vf_lr_and_optimizer.py": [
        ("separate_vf_lr_and_optimizer", ["--as-test"], ()),
    ],
    "multi_agent/custom_heuristic_policy.py": [
        (
            "custom_heuristic_policy",
            ["--num-agents=2", "--as-test", "--framework=torch", "--stop-reward=450.0"],
            (),
        ),
    ],
    "multi_agent/different_spaces_for_agents.py": [
        (
            "different_spaces_for_agents_ppo",
            ["--algo=PPO", "--stop-iters=4", "--framework=torch"],
            (),
        ),
    ],
    "multi_agent/multi_agent_cartpole.py": [
        (
            "multi_agent_cartpole",
            [
                "--num-agents=2",
                "--as-test",
                "--framework=torch",
                "--stop-reward=600.0",
                "--num-cpus=4",
            ],
            (),
        ),
    ],
    "multi_agent/multi_agent_pendulum.py": [
        (
            "multi_agent_pendulum_multi_gpu",
            [
                "--num-agents=2",
                "--as-test",
                "--framework=torch",
                "--stop-reward=-500.0",
                "--num-cpus=5",
                "--num-learners=2",
                "--num-gpus-per-learner=1",
            ],
            ("multi_gpu",),
        ),
    ],
    "multi_agent/pettingzoo_independent_learning.py": [
        (
            "pettingzoo_independent_learning",
            [
                "--num-agents=2",
                "--as-test",
                "--framework=torch",
                "--stop-reward=-200.0",
                "--num-cpus=4",
            ],
            (),
        ),
    ],
    "multi_agent/pettingzoo_parameter_sharing.py": [
        (
            "pettingzoo_parameter_sharing",
            [
                "--num-agents=2",
                "--as-test",
                "--framework=torch",
                "--stop-reward=-210.0",
                "--num-cpus=4",
            ],
            (),
        ),
    ],
    "multi_agent/rock_paper_scissors_heuristic_vs_learned.py": [
        (
            "rock_paper_scissors_heuristic_vs_learned",
            ["--num-agents=2", "--as-test", "--framework=torch", "--stop-reward=6.5"],
            (),
        ),
        (
            "rock_paper_scissors_heuristic_vs_learned_w_lstm",
            [
                "--num-agents=2",
                "--as-test",
                "--framework=torch",
                "--stop-reward=7.2",
                "--use-lstm",
                "--num-env-runners=4",
                "--num-cpus=6",
            ],
            (),
        ),
    ],
    "multi_agent/rock_paper_scissors_learned_vs_learned.py": [
        (
            "rock_paper_scissors_learned_vs_learned",
            ["--num-agents=2", "--framework=torch", "--stop-iter=10"],
            (),
        ),
    ],
    "multi_agent/self_play_footsies.py": [
        ("self_play_footsies", ["--as-test", "--num-cpus=4"], ()),
    ],
    "multi_agent/self_play_league_based_with_open_spiel.py": [
        (
            "self_play_league_based_with_open_spiel_connect_4_ppo_torch",
            [
                "--framework=torch",
                "--env=connect_four",
                "--win-rate-threshold=0.8",
                "--num-episodes-human-play=0",
                "--min-league-size=8",
            ],
            (),
        ),
    ],
    "multi_agent/self_play_with_open_spiel.py": [
        (
            "self_play_with_open_spiel_connect_4_ppo_tf_old_api_stack",
            [
                "--old-api-stack",
                "--framework=tf",
                "--env=connect_four",
                "--win-rate-threshold=0.9",
                "--num-episodes-human-play=0",
                "--min-league-size=3",
            ],
            (),
        ),
        (
            "self_play_with_open_spiel_connect_4_ppo_torch_old_api_stack",
            [
                "--old-api-stack",
                "--framework=torch",
                "--env=connect_four",
                "--win-rate-threshold=0.9",
                "--num-episodes-human-play=0",
                "--min-league-size=3",
            ],
            (),
        ),
        (
            "self_play_with_open_spiel_connect_4_ppo_torch",
            [
                "--framework=torch",
                "--env=connect_four",
                "--win-rate-threshold=0.9",
                "--num-episodes-human-play=0",
                "--min-league-size=4",
            ],
            ("manual",),
        ),
    ],
    "multi_agent/shared_encoder_cartpole.py": [
        ("shared_encoder_cartpole", ["--stop-iter=10"], ()),
    ],
    "multi_agent/two_step_game_with_grouped_agents.py": [
        (
            "two_step_game_with_grouped_agents",
            ["--num-agents=2", "--as-test", "--framework=torch", "--stop-reward=7.0"],
            (),
        ),
    ],
    "offline_rl/train_w_bc_finetune_w_ppo.py": [
        ("train_w_bc_finetune_w_ppo", ["--as-test", "--framework=torch"], ()),
    ],
    "ray_serve/ray_serve_with_rllib.py": [
        (
            "ray_serve_with_rllib",
            ["--stop-iters=2", "--num-episodes-served=2", "--no-render", "--port=12345"],
            ("manual",),
        ),
    ],
    "ray_tune/appo_hyperparameter_tune.py": [
        (
            "appo_hyperparameter_tune",
            [
                "--num-env-runners=4",
                "--num-envs-per-env-runner=6",
                "--num-gpus-per-learner=1",
                "--num-learners=1",
                "--num-samples=8",
                "--max-concurrent-trials=4",
            ],
            ("multi_gpu",),
        ),
    ],
    "ray_tune/custom_experiment.py": [("custom_experiment", [], ())],
    "ray_tune/custom_logger.py": [("custom_logger", [], ())],
    "ray_tune/custom_progress_reporter.py": [("custom_progress_reporter", [], ())],
    "rl_modules/action_masking_rl_module.py": [
        ("action_masking_rl_module", ["--stop-iters=5"], ()),
    ],
    "rl_modules/custom_cnn_rl_module.py": [
        ("custom_cnn_rl_module", ["--stop-iters=3"], ()),
        # ALE is not shipped: the same script on the project's Atari-like game.
        (
            "custom_cnn_rl_module_tinycatch",
            ["--env=localrl/TinyCatch-v0", "--stop-iters=1"],
            ("localrl",),
        ),
    ],
    "rl_modules/custom_lstm_rl_module.py": [
        ("custom_lstm_rl_module", ["--as-test"], ()),
    ],
    "rl_modules/migrate_modelv2_to_new_api_stack_by_config.py": [
        ("migrate_modelv2_to_new_api_stack_by_config", [], ()),
    ],
    "rl_modules/migrate_modelv2_to_new_api_stack_by_policy_checkpoint.py": [
        ("migrate_modelv2_to_new_api_stack_by_policy_checkpoint", [], ("manual",)),
    ],
    "rl_modules/pretraining_single_agent_training_multi_agent.py": [
        (
            "pretraining_single_agent_training_multi_agent",
            [
                "--as-test",
                "--num-agents=2",
                "--stop-reward-pretraining=250.0",
                "--stop-reward=250.0",
                "--stop-iters=3",
            ],
            (),
        ),
    ],
    "_old_api_stack/replay_buffer_api.py": [("replay_buffer_api", [], ())],
}


def _learning_tests(name: str, args: list[str], multi_learner_args: list[str]) -> list[CIEntry]:
    """A learning test's four BUILD.bazel entries: on CPU, one GPU learner, two CPU learners,
    two GPU learners (`args` go to the first two, `multi_learner_args` to the others)."""
    return [
        (f"learning_tests_{name}", args, ()),
        (
            f"learning_tests_{name}_gpu",
            [*args, "--num-learners=1", "--num-gpus-per-learner=1"],
            ("gpu",),
        ),
        (f"learning_tests_{name}_multi_cpu", [*multi_learner_args, "--num-learners=2"], ()),
        (
            f"learning_tests_{name}_multi_gpu",
            [*multi_learner_args, "--num-learners=2", "--num-gpus-per-learner=1"],
            ("multi_gpu",),
        ),
    ]


#: The run of an example that has no CI entry (its name in the table; no arguments).
NO_CI_ENTRY: CIEntry = ("(no CI entry)", [], ())
#: The name column of a smoke run: an example with no CI entry whose learning target takes hours
#: to days, run for a few iterations.
SMOKE_RUN = "(no CI entry; smoke run, its target takes hours)"

#: RLlib's examples the Ray 2.60 wheel does not ship: the tuned examples of the algorithms
#: here beyond PPO and DQN (`rllib/examples/algorithms/{sac,appo,impala,tqc,dreamerv3}/`), the action
#: examples (`rllib/examples/actions/`) and the curiosity examples (`curiosity/`):
#: `bench/rllib_examples.py --extra-root DIR` runs them from a folder laid out as
#: `rllib/examples` (a checkout of ray-project/ray's).
NOT_IN_WHEEL: dict[str, list[CIEntry]] = {
    "inference/policy_inference_after_training.py": [
        ("policy_inference_after_training", ["--stop-reward=100.0"], ()),
        (
            "policy_inference_after_training_w_onnx",
            ["--stop-reward=100.0", "--use-onnx-for-inference"],
            (),
        ),
    ],
    "inference/policy_inference_after_training_w_connector.py": [
        ("policy_inference_after_training_w_connector", ["--stop-reward=150.0"], ()),
        (
            "policy_inference_after_training_w_connector_w_onnx",
            ["--stop-reward=150.0", "--use-onnx-for-inference"],
            (),
        ),
    ],
    "actions/autoregressive_actions.py": [("autoregressive_actions", [], ())],
    "actions/custom_action_distribution.py": [
        ("custom_action_distribution", ["--temperature=0.75"], ())
    ],
    "curiosity/count_based_curiosity.py": [("count_based_curiosity", ["--as-test"], ())],
    # RLlib's CI tracks it as flaky (ray-project/ray#47128): its piece adds intrinsic rewards
    # on its first 11 calls only, then it is plain PPO near MountainCar's -100 in 1M steps.
    "curiosity/euclidian_distance_based_curiosity.py": [
        ("euclidian_distance_based_curiosity", ["--as-test"], ("flaky",))
    ],
    # The copy in ray-project/ray's index (commit 32ee04f) also sets its parser's default
    # `enable_new_api_stack=True`, which RLlib 2.60's example helpers refuse before anything
    # runs; the copy run here leaves that one line out.
    "curiosity/intrinsic_curiosity_model_based_curiosity.py": [
        ("intrinsic_curiosity_model_based_curiosity_ppo", ["--as-test", "--algo=PPO"], ())
    ],
    "actions/nested_action_spaces.py": [
        (
            "nested_action_spaces_ppo",
            ["--as-test", "--framework=torch", "--stop-reward=-500.0", "--algo=PPO"],
            (),
        ),
        (
            "nested_action_spaces_multi_agent_ppo",
            [
                "--as-test",
                "--num-agents=2",
                "--framework=torch",
                "--stop-reward=-1000.0",
                "--algo=PPO",
            ],
            (),
        ),
    ],
    "algorithms/appo/cartpole_appo.py": [
        ("learning_tests_cartpole_appo", ["--as-test", "--num-cpus=7", "--num-env-runners=5"], ()),
        (
            "learning_tests_cartpole_appo_multi_cpu",
            ["--as-test", "--num-learners=2", "--num-cpus=9", "--num-env-runners=6"],
            (),
        ),
        (
            "learning_tests_cartpole_appo_multi_gpu",
            [
                "--as-test",
                "--num-learners=2",
                "--num-gpus-per-learner=1",
                "--num-cpus=7",
                "--num-env-runners=6",
            ],
            ("multi_gpu",),
        ),
    ],
    "algorithms/appo/multi_agent_cartpole_appo.py": [
        (
            "learning_tests_multi_agent_cartpole_appo",
            ["--as-test", "--num-agents=2", "--num-cpus=8", "--num-env-runners=6"],
            (),
        ),
        (
            "learning_tests_multi_agent_cartpole_appo_gpu",
            [
                "--as-test",
                "--num-agents=2",
                "--num-gpus-per-learner=1",
                "--num-cpus=7",
                "--num-env-runners=5",
            ],
            ("gpu",),
        ),
        (
            "learning_tests_multi_agent_cartpole_appo_multi_cpu",
            [
                "--as-test",
                "--num-agents=2",
                "--num-learners=2",
                "--num-cpus=9",
                "--num-env-runners=6",
            ],
            ("manual",),
        ),
        (
            "learning_tests_multi_agent_cartpole_appo_multi_gpu",
            [
                "--as-test",
                "--num-agents=2",
                "--num-learners=2",
                "--num-gpus-per-learner=1",
                "--num-cpus=7",
                "--num-env-runners=6",
            ],
            ("multi_gpu",),
        ),
    ],
    "algorithms/appo/pendulum_appo.py": [
        ("learning_tests_pendulum_appo", ["--as-test", "--num-cpus=6", "--num-env-runners=4"], ()),
    ],
    "algorithms/appo/stateless_cartpole_appo.py": [
        (
            "learning_tests_stateless_cartpole_appo",
            ["--as-test", "--num-cpus=8", "--num-env-runners=6"],
            (),
        ),
        (
            "learning_tests_stateless_cartpole_appo_gpu",
            [
                "--as-test",
                "--num-agents=2",
                "--num-gpus-per-learner=1",
                "--num-cpus=7",
                "--num-env-runners=5",
            ],
            ("gpu",),
        ),
        (
            "learning_tests_stateless_cartpole_appo_multi_cpu",
            ["--as-test", "--num-learners=2", "--num-cpus=9", "--num-env-runners=6"],
            (),
        ),
        (
            "learning_tests_stateless_cartpole_appo_multi_gpu",
            [
                "--as-test",
                "--num-learners=2",
                "--num-gpus-per-learner=1",
                "--num-cpus=7",
                "--num-env-runners=6",
            ],
            ("multi_gpu",),
        ),
    ],
    "algorithms/appo/tictactoe_appo.py": [("(no CI entry)", [], ())],
    "algorithms/impala/cartpole_impala.py": [
        (
            "learning_tests_impala_cartpole_local",
            [
                "--as-test",
                "--num-aggregator-actors-per-learner=2",
                "--num-cpus=7",
                "--num-env-runners=4",
                "--num-learners=0",
                "--stop-reward=200",
            ],
            (),
        ),
    ],
    "algorithms/impala/tictactoe_impala.py": [
        (
            "learning_tests_impala_tictactoe_multi_gpu",
            [
                "--as-test",
                "--num-aggregator-actors-per-learner=2",
                "--num-cpus=16",
                "--num-env-runners=8",
                "--num-gpus-per-learner=1",
                "--num-learners=2",
                "--stop-reward=-1",
            ],
            ("multi_gpu",),
        ),
    ],
    "algorithms/sac/mountaincar_sac.py": _learning_tests(
        "mountaincar_sac", ["--as-test"], ["--as-test"]
    ),
    "algorithms/sac/multi_agent_pendulum_sac.py": _learning_tests(
        "multi_agent_pendulum_sac",
        ["--as-test", "--num-agents=2", "--num-cpus=4"],
        ["--num-agents=2"],
    ),
    "algorithms/sac/pendulum_sac.py": _learning_tests("pendulum_sac", ["--as-test"], ["--as-test"]),
    # RLlib 2.60's BUILD.bazel (as stored for this bench) has no TQC entry: the learning tests'
    # pattern of its SAC examples.
    "algorithms/tqc/pendulum_tqc.py": _learning_tests("pendulum_tqc", ["--as-test"], ["--as-test"]),
    # BUILD.bazel has no entry for the other TQC examples nor any DreamerV3 example: each runs
    # once, with no arguments (as a user runs it); atari_200M_dreamerv3.py has no default env
    # (RLlib's fails on None too) and runs with the Atari env its siblings default to.
    # The MuJoCo, DeepMind Control and Atari ones learn for hours to days (RLlib's own
    # estimates: 10 h on a GPU for mujoco_tqc): a smoke run of 2 iterations each.
    "algorithms/dreamerv3/atari_200M_dreamerv3.py": [
        (f"{SMOKE_RUN}; --env is required", ["--env=ale_py:ALE/Pong-v5", "--stop-iters=2"], ())
    ],
    **{
        f"algorithms/{example}.py": [(SMOKE_RUN, ["--stop-iters=2"], ())]
        for example in (
            "tqc/humanoid_tqc",
            "tqc/mujoco_tqc",
            "dreamerv3/atari_100k_dreamerv3",
            "dreamerv3/atari_dreamerv3",
            "dreamerv3/dm_control_suite_vision_dreamerv3",
            "dreamerv3/mujoco_dreamerv3",
        )
    },
    **{
        f"algorithms/{example}.py": [NO_CI_ENTRY]
        for example in (
            "dreamerv3/cartpole_dreamerv3",
            "dreamerv3/flappy_bird_dreamerv3",
            "dreamerv3/frozenlake_2x2_dreamerv3",
            "dreamerv3/frozenlake_4x4_deterministic_dreamerv3",
            "dreamerv3/gymnasium_robotics_dreamerv3",
            "dreamerv3/highway_env_dreamerv3",
        )
    },
}


#: RLlib's examples that read a dataset its checkout holds and its wheel does not ship, by
#: example: (the dataset's folder relative to `rllib/`, what records one here). The bench
#: trains this project's PPO with `python -m trainer` (the arguments given), records its policy
#: with `python -m trainer record` (the arguments given) once into a cache folder, and runs the
#: script from a copy laid out as RLlib's checkout (`rllib/examples/...` beside
#: `rllib/<dataset folder>`), so `Path(__file__).parents[...]` finds the data.
RECORDED_DATA: dict[str, tuple[str, list[str], list[str]]] = {
    "offline_rl/train_w_bc_finetune_w_ppo.py": (
        # RLlib's CartPole dataset comes from a good PPO policy, sampled (not greedy).
        "offline/tests/data/cartpole/cartpole-v1_large",
        ["--algo", "PPO", "--env", "CartPole-v1", "--stop-reward", "none", "--stop-iters", "30"],
        ["--env-steps", "20000"],
    ),
}
