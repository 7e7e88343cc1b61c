"""Data-parallel learners (`learners(num_learners=N)`, N >= 2): N learners, each on its shard of
every train batch, stepping on the mean of their gradients.

The reference is computed here, in this process, from the learner's own loss and gradient
primitives only: the same shards (`shard_episodes`), each learner's minibatches drawn as the
update draws them, and at each step the mean of the N gradients applied to N copies of the
learner. The learners in worker processes must give those weights (1e-5 relative), and every
replica must hold the same state after each update."""

from __future__ import annotations

import copy
import os
import pickle
import warnings

import numpy as np
import pytest

from trainer import PPOConfig
from trainer.algorithms.data_parallel import (
    LearnerWorkerError,
    num_total_minibatches,
    reduce_results,
    shard_episodes,
)
from trainer.algorithms.ppo.ppo import PPO
from trainer.algorithms.ppo.ppo_learner import shuffled_minibatches, standardize_advantages
from trainer.compat.rllib_settings import IgnoredSettingWarning
from trainer.runners.env_runner_group import spaces_of

# Learner worker processes in every test: the whole file is in the slow tier (the fast tier's
# budget, tests/test_suite_budget.py).
pytestmark = pytest.mark.slow


def _config(framework: str, num_learners: int, backend: str = "processes", **training) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=0, backend=backend)
        .learners(num_learners=num_learners)
        .training(
            **{
                "train_batch_size": 600,
                "minibatch_size": 64,
                "num_epochs": 2,
                "lr": 1e-3,
                **training,
            }
        )
        .debugging(seed=11)
    )


def _replicas_equal(algo, keys=("module", "optimizer", "kl_coeff")) -> None:
    states = algo.learner_replicas.replica_states()
    first = pickle.dumps({k: states[0][k] for k in keys})
    for state in states[1:]:
        assert pickle.dumps({k: state[k] for k in keys}) == first


# -- the reference: N learners in this process, gradients averaged by hand -------------------
def _minibatch_gradient(learner, minibatch, framework):
    """The learner's gradient on `minibatch`, flat, float64, and its loss."""
    if framework == "numpy":
        _, stats = learner.loss_and_grads(minibatch)
        return learner.module.gradient_buffer()[0].astype(np.float64), stats["total_loss"]
    import torch

    from trainer.torch_rl.learner import to_train_tensors

    tensors = to_train_tensors(minibatch, learner.device)
    losses = learner.compute_losses(fwd_out=learner.rl_module.forward_train(tensors), batch=tensors)
    gradients = learner.compute_gradients(losses)
    names = [n for entry in learner._optimizers.values() for n in entry.param_names]
    flat = torch.cat([gradients[n].reshape(-1).double() for n in names])
    return flat.numpy(), float(sum(loss.item() for loss in losses.values()))


def _apply(learner, mean, loss, framework):
    if framework == "numpy":
        learner.module.gradient_buffer()[0][:] = mean
        learner.apply_gradients(loss)
        return
    import torch

    names = [n for entry in learner._optimizers.values() for n in entry.param_names]
    gradients, offset = {}, 0
    for name in names:
        param = learner._params_by_name[name]
        gradients[name] = (
            torch.from_numpy(mean[offset : offset + param.numel()])
            .view(param.shape)
            .to(param.dtype)
        )
        offset += param.numel()
    learner.apply_gradients(learner.postprocess_gradients(gradients))


def _reference_update(config, spaces, state, episodes, seed, num_learners, framework):
    learners = []
    for _ in range(num_learners):
        learner = PPO.learner_for(config, spaces)
        learner.set_state(copy.deepcopy(state))
        learners.append(learner)
    shards = shard_episodes(episodes, num_learners)
    steps = sum(len(e) for e in episodes)
    total = num_total_minibatches(steps, num_learners, config.minibatch_size, config.num_epochs)
    minibatches = []
    for rank, (learner, shard) in enumerate(zip(learners, shards, strict=True)):
        batch = learner.build_train_batch(shard)
        standardize_advantages(batch)
        rng = np.random.default_rng([seed, rank, 0])
        minibatches.append(
            [
                {k: np.array(v) for k, v in mb.items()}
                for mb in shuffled_minibatches(batch, config, rng, total)
            ]
        )
    assert all(len(mbs) == total for mbs in minibatches)
    for step in range(total):
        pairs = [
            _minibatch_gradient(learner, mbs[step], framework)
            for learner, mbs in zip(learners, minibatches, strict=True)
        ]
        mean = sum(g for g, _ in pairs) / num_learners
        loss = sum(value for _, value in pairs) / num_learners
        for learner in learners:
            _apply(learner, mean, loss, framework)
    return learners[0].get_state()["module"]


def _flat_weights(weights) -> np.ndarray:
    if isinstance(weights, dict):
        return np.concatenate([_flat_weights(weights[k]) for k in sorted(weights)])
    return np.asarray(weights, dtype=np.float64).reshape(-1)


def _torch_learner_class():
    """PPO's torch learner as a subclass: its update steps in torch (the class itself runs
    the default module's update in numpy, `NumpyPPOUpdate`, which the numpy case checks)."""
    from trainer.algorithms.ppo.torch_learner import PPOTorchLearner

    return type("TorchStepsPPOLearner", (PPOTorchLearner,), {"__module__": __name__})


@pytest.mark.parametrize(("framework", "num_learners"), [("numpy", 2), ("numpy", 4), ("torch", 2)])
def test_n_learners_give_the_weights_of_averaged_gradients_over_their_shards(
    framework, num_learners
):
    check_averaged_gradients(framework, num_learners, "processes")


def check_averaged_gradients(framework: str, num_learners: int, backend: str) -> None:
    """PPO's N learners (on `backend`) give the reference's weights; replicas stay equal."""
    config = _config(framework, num_learners, backend)
    if framework == "torch":
        pytest.importorskip("torch")
        config = config.training(learner_class=_torch_learner_class())
    algo = config.build()
    try:
        algo.train()  # a first update: the learners start from trained weights below
        _replicas_equal(algo)
        episodes, _ = algo.env_runner_group.sample(min_env_steps=600)
        state = pickle.loads(pickle.dumps(algo.learner.get_state()))
        seed = int(copy.deepcopy(algo.learner.rng).integers(2**63))
        algo.update_learners(episodes, num_env_steps_sampled_lifetime=1200)
        _replicas_equal(algo)
        got = _flat_weights(algo.learner.get_state()["module"])
        spaces = spaces_of(algo.env_runner_group)
        want = _flat_weights(
            _reference_update(algo.config, spaces, state, episodes, seed, num_learners, framework)
        )
        before = _flat_weights(state["module"])
        assert np.abs(got - before).max() > 1e-4  # the update moved the weights
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    finally:
        algo.stop()


def test_shards_hold_equal_steps_and_every_step_once():
    algo = _config("numpy", 0).build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=500)
    finally:
        algo.stop()
    steps = sum(len(e) for e in episodes)
    for num_shards in (2, 3, 4):
        shards = shard_episodes(list(episodes), num_shards)
        lengths = [sum(len(e) for e in shard) for shard in shards]
        assert sum(lengths) == steps
        assert max(lengths) - min(lengths) <= 1
        rewards = sorted(float(r) for shard in shards for e in shard for r in e.get_rewards())
        assert rewards == sorted(float(r) for e in episodes for r in e.get_rewards())


def test_results_sum_counts_and_average_the_rest():
    reduced = reduce_results(
        [
            {"total_loss": 1.0, "num_env_steps_trained": 300, "nested": {"x": 2.0}, "tag": "a"},
            {"total_loss": 3.0, "num_env_steps_trained": 301, "nested": {"x": 4.0}, "tag": "b"},
        ]
    )
    assert reduced == {
        "total_loss": 2.0,
        "num_env_steps_trained": 601,
        "nested": {"x": 3.0},
        "tag": "a",
    }


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_several_learners_train_without_a_warning_and_stop_their_processes(framework):
    if framework == "torch":  # (the default torch learner: its update runs in numpy)
        pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = _config(framework, 3).build()
    pids = [worker.link.process.pid for worker in algo.learner_replicas.workers]
    assert len(pids) == 2
    result = algo.train()
    assert result["learners"]["default_policy"]["num_env_steps_trained"] >= 600
    _replicas_equal(algo)
    algo.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_where_several_learners_do_not_run_the_setting_warns_why():
    config = _config("numpy", 2)
    config.algo_class = type("OneLearnerPPO", (PPO,), {"DATA_PARALLEL_LEARNERS": ()})
    with pytest.warns(IgnoredSettingWarning, match="num_learners=2.*not built for OneLearnerPPO"):
        config.ignored_settings_warnings()
    config = _config("torch", 2).learners(num_gpus_per_learner=1)
    with pytest.warns(IgnoredSettingWarning, match="run on the CPU here"):
        config.ignored_settings_warnings()
    config = _config("torch", 2).rl_module(model_config={"use_lstm": True})
    config.algo_class = type("OneLearnerPPO", (PPO,), {"DATA_PARALLEL_LEARNERS": ("single-agent",)})
    with pytest.warns(IgnoredSettingWarning, match="recurrent"):
        config.ignored_settings_warnings()


def test_per_learner_batch_size_scales_the_sampled_batch():
    config = PPOConfig().learners(num_learners=2).training(train_batch_size_per_learner=500)
    assert config.total_train_batch_size == 1000
    assert config.train_batch_size_per_learner == 500
    given_in_all = PPOConfig().learners(num_learners=2).training(train_batch_size=500)
    assert given_in_all.train_batch_size_per_learner == 250  # RLlib's: the total over N
    assert (
        PPOConfig().learners(num_learners=2).training(train_batch_size=500).total_train_batch_size
        == 500
    )


def test_a_checkpoint_of_several_learners_restores_with_any_number_and_resumes_exactly(
    tmp_path,
):
    algo = _config("numpy", 2).build()
    try:
        algo.train()
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        algo.train()
        want = _flat_weights(algo.learner.get_state()["module"])
    finally:
        algo.stop()
    again = _config("numpy", 2).build()
    try:
        again.restore_from_path(path)
        again.train()
        np.testing.assert_array_equal(_flat_weights(again.learner.get_state()["module"]), want)
        _replicas_equal(again)
    finally:
        again.stop()
    single = _config("numpy", 0).build()
    try:
        single.restore_from_path(path)
        single.train()
        assert single.learner_replicas is None
    finally:
        single.stop()


def test_a_learner_that_dies_mid_update_leaves_learner_0_as_it_was(monkeypatch):
    algo = _config("numpy", 2).build()
    try:
        algo.train()
        before = pickle.dumps(algo.learner.get_state()["module"])
        victim = algo.learner_replicas.workers[0].link.process
        episodes, _ = algo.env_runner_group.sample(min_env_steps=600)
        victim.kill()
        victim.join(5)
        with pytest.raises(LearnerWorkerError, match="learner 1"):
            algo.update_learners(episodes, num_env_steps_sampled_lifetime=1200)
        assert pickle.dumps(algo.learner.get_state()["module"]) == before
        # A fresh worker took its place, holding learner 0's state: training goes on.
        assert algo.learner_replicas.workers[0].link.process.pid != victim.pid
        algo.train()
        _replicas_equal(algo)
    finally:
        algo.stop()


def test_a_learner_killed_during_the_update_fails_it_at_once_and_nothing_is_half_trained():
    import threading
    import time

    algo = _config("numpy", 2, num_epochs=40, minibatch_size=32).build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=600)
        before = pickle.dumps(algo.learner.get_state()["module"])
        victim = algo.learner_replicas.workers[0].link.process
        threading.Timer(0.3, victim.kill).start()
        started = time.monotonic()
        with pytest.raises(LearnerWorkerError, match="learner 1.*died"):
            algo.update_learners(episodes, num_env_steps_sampled_lifetime=600)
        assert time.monotonic() - started < 30  # not the all-reduce's timeout
        assert pickle.dumps(algo.learner.get_state()["module"]) == before
        algo.train()
        _replicas_equal(algo)
    finally:
        algo.stop()


@pytest.mark.slow
def test_two_learners_learn_cartpole():
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .learners(num_learners=2)
        .training(lr=3e-4, num_epochs=6, minibatch_size=128, train_batch_size_per_learner=1000)
        .debugging(seed=0)
        .build()
    )
    try:
        best = 0.0
        for _ in range(25):
            result = algo.train()
            best = max(best, result["env_runners"].get("episode_return_mean", 0.0))
            if best >= 150:
                break
        assert result["learners"]["default_policy"]["num_env_steps_trained"] >= 2000
        assert best >= 150
    finally:
        algo.stop()


# -- off-policy: SAC and DQN, each learner on its rows of the replayed batch -----------------
def _off_policy_config(name: str, framework: str, num_learners: int, backend: str = "processes"):
    from trainer import DQNConfig, SACConfig

    config_class, env = {"SAC": (SACConfig, "Pendulum-v1"), "DQN": (DQNConfig, "CartPole-v1")}[name]
    return (
        config_class()
        .environment(env)
        .framework(framework)
        .env_runners(num_env_runners=0, backend=backend)
        .learners(num_learners=num_learners)
        .training(train_batch_size_per_learner=32, num_steps_sampled_before_learning_starts=64)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .reporting(min_sample_timesteps_per_iteration=64)
        .debugging(seed=5)
    )


def _off_policy_reference(algo, state, batch, sampled, num_learners):
    """N copies of the numpy learner, each stepping on the mean of the N gradients of its
    rows (SAC: each optimizer's, and log_alpha's)."""
    from trainer.algorithms.data_parallel import shard_rows

    learners = []
    for _ in range(num_learners):
        learner = type(algo).learner_for(algo.config, spaces_of(algo.env_runner_group))
        learner.set_state(copy.deepcopy(state))
        learners.append(learner)
    shards = shard_rows(batch, num_learners)
    sac = hasattr(learners[0], "_alpha_grad")
    parts = []
    for learner, shard in zip(learners, shards, strict=True):
        if sac:
            loss = learner.loss_and_gradients(shard)
            parts.append(
                (
                    learner.module.gradient_buffer()[0].astype(np.float64),
                    loss.d_log_alpha,
                    loss.losses,
                )
            )
        else:
            stats, _ = learner.loss_and_gradients(shard)
            parts.append((learner.module.gradient_buffer()[0].astype(np.float64), 0.0, stats))
    gradient = sum(p[0] for p in parts) / num_learners
    alpha = sum(p[1] for p in parts) / num_learners
    for learner in learners:
        learner.module.gradient_buffer()[0][:] = gradient
        if sac:
            learner._alpha_grad[0] = alpha
            learner._apply_gradients(
                {k: sum(p[2][k] for p in parts) / num_learners for k in parts[0][2]}
            )
            learner.update_target_network(sampled)
        else:
            learner.apply_gradients(sum(p[2]["qf_loss"] for p in parts) / num_learners)
            learner.update_target_network(sampled)
    return learners[0].get_state()


@pytest.mark.parametrize("name", ["SAC", "DQN"])
def test_off_policy_learners_give_the_weights_of_averaged_gradients_over_their_rows(name):
    check_off_policy_averaged_gradients(name, "processes")


def check_off_policy_averaged_gradients(name: str, backend: str) -> None:
    """SAC's or DQN's 2 numpy learners (on `backend`) give the reference's weights."""
    from trainer.algorithms.replay import sample_train_batch

    algo = _off_policy_config(name, "numpy", 2, backend).build()
    try:
        algo.train()  # learning has started: the learners hold trained weights below
        _replicas_equal(algo, keys=("module",))
        config = algo.config
        batch = sample_train_batch(
            algo.local_replay_buffer,
            config.total_train_batch_size,
            n_step=config.n_step,
            gamma=config.gamma,
            beta=config.replay_buffer_config.get("beta"),
        )
        assert len(batch["rewards"]) == 64
        state = pickle.loads(pickle.dumps(algo.learner.get_state()))
        sampled = algo.num_env_steps_sampled_lifetime
        algo.learner_replicas.new_round()
        results = algo.update_learners_on_batch(batch, num_env_steps_sampled_lifetime=sampled)
        assert len(results["td_error"]) == 64  # every row's, for its priority
        want = _off_policy_reference(algo, state, batch, sampled, 2)
        got = algo.learner.get_state()
        assert np.abs(_flat_weights(got["module"]) - _flat_weights(state["module"])).max() > 1e-6
        np.testing.assert_allclose(
            _flat_weights(got["module"]), _flat_weights(want["module"]), rtol=1e-5, atol=1e-7
        )
        _replicas_equal(algo, keys=("module",))
    finally:
        algo.stop()


@pytest.mark.parametrize("name", ["SAC", "DQN"])
def test_off_policy_learners_on_torch_give_the_weights_of_one_process(name):
    pytest.importorskip("torch")
    check_off_policy_torch_weights(name, "processes")


def check_off_policy_torch_weights(name: str, backend: str) -> None:
    """SAC's or DQN's 2 torch learners (on `backend`) stay replicas through training and give
    the weights of the same calls in one process."""
    from trainer.algorithms.replay import sample_train_batch

    algo = _off_policy_config(name, "torch", 2, backend).build()
    try:
        for _ in range(2):
            result = algo.train()
        assert result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"] > 0
        _replicas_equal(algo, keys=("module",))
        config = algo.config
        batch = sample_train_batch(
            algo.local_replay_buffer,
            config.total_train_batch_size,
            n_step=config.n_step,
            gamma=config.gamma,
            beta=config.replay_buffer_config.get("beta"),
        )
        recorded = _recording_calls(algo)
        algo.learner_replicas.new_round()
        sampled = algo.num_env_steps_sampled_lifetime
        algo.update_learners_on_batch(batch, num_env_steps_sampled_lifetime=sampled)
        got = algo.learner.get_state()
        (state, calls), *_ = recorded
        want = _threaded_reference(algo, state, calls)
        assert np.abs(_flat_weights(got["module"]) - _flat_weights(state["module"])).max() > 1e-7
        _states_close(got, want, ("module",))
        _replicas_equal(algo, keys=("module",))
    finally:
        algo.stop()


# -- multi-agent PPO: each module's chunks sharded over the learners -------------------------
def _multi_agent_config(num_learners: int, backend: str = "processes") -> PPOConfig:
    from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_env_runners=0, backend=backend)
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *args, **kw: f"p{agent_id}"
        )
        .learners(num_learners=num_learners)
        .training(train_batch_size=600, minibatch_size=64, num_epochs=2)
        .debugging(seed=1)
    )


def _module_replicas_equal(algo, modules, keys=("module", "optimizer", "kl_coeff")) -> None:
    states = algo.learner_replicas.replica_states()
    keyed = [pickle.dumps({m: {k: s[m][k] for k in keys} for m in modules}) for s in states]
    assert all(k == keyed[0] for k in keyed[1:])


def test_multi_agent_learners_train_every_module_on_its_shards_and_stay_replicas():
    check_multi_agent_learners("processes")


def check_multi_agent_learners(backend: str) -> None:
    """Multi-agent PPO's 2 learners (on `backend`) train every module and stay replicas, a
    module added later too."""
    from trainer.core.rl_module import RLModuleSpec

    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = _multi_agent_config(2, backend).build()
    try:
        result = algo.train()
        sampled = result["env_runners"]["num_module_steps_sampled"]
        for module_id in ("p0", "p1"):
            trained = result["learners"][module_id]["num_env_steps_trained"]
            assert trained == sampled[module_id]  # both learners' shards together
        _module_replicas_equal(algo, ("p0", "p1"))
        # A module added later reaches the workers' learners too.
        import gymnasium as gym

        env = gym.make("CartPole-v1")
        algo.add_module(
            "p2",
            RLModuleSpec(observation_space=env.observation_space, action_space=env.action_space),
        )
        algo.train()
        _module_replicas_equal(algo, ("p0", "p1", "p2"))
    finally:
        algo.stop()


# -- the reference of any learner: N learners in this process, one thread each ---------------
class _TakingTurns:
    """A thread's end of the reference's all-reduce: the threads take turns between the
    all-reduces (`turn` held), so that a learner that draws from torch's global generator
    (swapped to its own state for the update: SAC's, DreamerV3's) draws alone."""

    def __init__(self, end, turn) -> None:
        self.end, self.turn = end, turn

    def mean(self, vector):
        self.turn.release()
        try:
            return self.end.mean(vector)
        finally:
            self.turn.acquire()

    def __getattr__(self, name):
        return getattr(self.end, name)


def _threaded_reference(algo, state: dict, calls: list) -> dict:
    """N learners built as the algorithm builds its learner, each holding `state`, in threads
    of this process around one in-process all-reduce; learner r runs `calls[r]` (a method's
    name, its arguments, its keywords: what the algorithm gave its learners). Learner 0's
    state after (its weights; a generator state may be another learner's)."""
    import threading

    from trainer.algorithms.data_parallel import attach_allreduce
    from trainer.algorithms.learner_group import call_build_hooks
    from trainer.core.allreduce import SharedMemoryAllReduce, attach

    spaces = spaces_of(algo.env_runner_group)
    learners = []
    for _ in calls:
        learner = type(algo).learner_for(algo.config, spaces)
        call_build_hooks(learner)
        learner.set_state(copy.deepcopy(state))
        learners.append(learner)
    first = SharedMemoryAllReduce.create(len(calls), 1 << 20, 60.0)
    ends = [first] + [attach(first.handle, rank) for rank in range(1, len(calls))]
    errors: list = []
    turn = threading.Lock()

    def run(rank: int) -> None:
        method, args, kwargs = calls[rank]
        try:
            with turn:
                getattr(learners[rank], method)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
            ends[rank].abort()

    try:
        for learner, end in zip(learners, ends, strict=True):
            attach_allreduce(learner, _TakingTurns(end, turn))
        threads = [threading.Thread(target=run, args=(r,)) for r in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not errors, errors
        return learners[0].get_state()
    finally:
        for end in reversed(ends):
            end.close()


def _recording_calls(algo) -> list:
    """Every `run_calls` of the algorithm's learners from now on, as (learner 0's state
    before, the calls)."""
    replicas = algo.learner_replicas
    recorded: list = []
    original = replicas.run_calls

    def run_calls(calls, **kwargs):
        before = pickle.loads(pickle.dumps(replicas.learner.get_state()))
        recorded.append((before, copy.deepcopy(calls)))
        return original(calls, **kwargs)

    replicas.run_calls = run_calls
    return recorded


def _states_close(got: dict, want: dict, keys) -> None:
    for key in keys:
        np.testing.assert_allclose(
            _flat_weights(got[key]), _flat_weights(want[key]), rtol=1e-5, atol=1e-6
        )


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_appo_learners_give_the_weights_of_one_process_averaging_their_shards(framework):
    check_appo_weights(framework, "processes")


def check_appo_weights(framework: str, backend: str) -> None:
    """APPO's 2 learners (on `backend`) give the weights of the same calls in one process."""
    from trainer import APPOConfig
    from trainer.algorithms.impala.learner_thread import TrainBatch

    if framework == "torch":
        pytest.importorskip("torch")
    algo = (
        APPOConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=0, backend=backend)
        .learners(num_learners=2)
        .training(train_batch_size_per_learner=100, minibatch_size=50, num_epochs=2)
        .debugging(seed=3)
        .build()
    )
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=200)
        recorded = _recording_calls(algo)
        with algo._learner_held():
            algo._update_on(TrainBatch(list(episodes), sum(len(e) for e in episodes)))
            got = algo.learner.get_state()
        (state, calls), *_ = recorded
        assert len(calls) == 2 and calls[0][1][0].num_steps == 100  # each learner its half
        want = _threaded_reference(algo, state, calls)
        assert np.abs(_flat_weights(got["module"]) - _flat_weights(state["module"])).max() > 1e-5
        _states_close(got, want, ("module",))
        _replicas_equal(algo, keys=("module",))
    finally:
        algo.stop()


def test_multi_agent_ppo_learners_give_the_weights_of_one_process_averaging_their_shards():
    check_multi_agent_ppo_weights("processes")


def check_multi_agent_ppo_weights(backend: str) -> None:
    """Multi-agent PPO's 2 learners (on `backend`) give the weights of the same calls in one
    process."""
    algo = _multi_agent_config(2, backend).build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=600)
        recorded = _recording_calls(algo)
        algo.update_learners(list(episodes), num_env_steps_sampled_lifetime=600)
        got = algo.learner.get_state()
        (state, calls), *_ = recorded
        want = _threaded_reference(algo, state, calls)
        for module_id in ("p0", "p1"):
            before = _flat_weights(state[module_id]["module"])
            assert np.abs(_flat_weights(got[module_id]["module"]) - before).max() > 1e-5
            _states_close(got[module_id], want[module_id], ("module",))
        _module_replicas_equal(algo, ("p0", "p1"))
    finally:
        algo.stop()


# -- APPO and IMPALA: each learner on its run of the train batch's steps ---------------------
def _train_until_updated(algo, module_ids=("default_policy",)) -> dict:
    """Trains an APPO or IMPALA algorithm at least 3 and at most 10 iterations, until one of
    `module_ids` reported an update of trained steps (asynchronous: an iteration may end
    before the learner thread reports one). Each reporting module's largest
    `num_env_steps_trained`."""
    trained: dict = {}
    for iteration in range(10):
        result = algo.train()
        for module_id in module_ids:
            learner = result["learners"].get(module_id)
            if learner:
                steps = learner.get("num_env_steps_trained", 0)
                trained[module_id] = max(trained.get(module_id, 0), steps)
        if iteration >= 2 and any(trained.values()):
            return trained
    return trained


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_appo_learners_train_on_their_steps_and_stay_replicas(framework):
    check_appo_learners(framework, "processes")


def check_appo_learners(framework: str, backend: str) -> None:
    """APPO's 2 learners (on `backend`) each train on their half of the train batch's steps
    and stay replicas."""
    from trainer import APPOConfig

    if framework == "torch":
        pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = (
            APPOConfig()
            .environment("CartPole-v1")
            .framework(framework)
            .env_runners(num_env_runners=1, backend=backend)
            .learners(num_learners=2)
            .training(train_batch_size_per_learner=100)
            .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=400)
            .debugging(seed=3)
            .build()
        )
    try:
        trained = _train_until_updated(algo)
        # two learners' 100-step shards of each 200-step train batch
        assert trained["default_policy"] == 200
        with algo._learner_held():  # (the learner thread is between updates)
            states = algo.learner_replicas.replica_states()
        keys = ("module", "kl_coeff", "target") if framework == "numpy" else ("module",)
        first = pickle.dumps({k: states[0][k] for k in keys if k in states[0]})
        assert pickle.dumps({k: states[1][k] for k in keys if k in states[1]}) == first
    finally:
        algo.stop()


def test_recurrent_ppo_learners_start_a_sliced_episode_from_its_state_and_stay_replicas():
    from trainer.core.recurrent import chunk_state_in

    pytest.importorskip("torch")
    config = _config("torch", 2, train_batch_size=400, minibatch_size=100).rl_module(
        model_config={"use_lstm": True, "max_seq_len": 10, "lstm_cell_size": 16}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = config.build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=400)
        originals = {episode.id_: episode for episode in episodes}
        rests = [
            e
            for num_shards in (2, 3, 4)
            for shard in shard_episodes(list(episodes), num_shards)
            for e in shard
            if e.t_started > 0
        ]
        assert rests  # (an episode was sliced between the shards)
        for rest in rests:  # its state_in is the state_out of the step before it
            original = originals[rest.id_]
            want = original.get_extra_model_outputs("state_out", rest.t_started - 1)
            got = chunk_state_in(rest, None)
            np.testing.assert_array_equal(_flat_weights(got), _flat_weights(want))
        before = _flat_weights(algo.learner.get_state()["module"])
        result = algo.train()
        assert result["learners"]["default_policy"]["num_env_steps_trained"] >= 400
        _replicas_equal(algo, keys=("module", "optimizer"))
        assert np.abs(_flat_weights(algo.learner.get_state()["module"]) - before).max() > 1e-4
    finally:
        algo.stop()


def test_recurrent_appo_learners_train_on_their_sequences_and_stay_replicas():
    from trainer import APPOConfig

    pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = (
            APPOConfig()
            .environment("CartPole-v1")
            .framework("torch")
            .env_runners(num_env_runners=1)
            .learners(num_learners=2)
            .rl_module(
                model_config={
                    "use_lstm": True,
                    "max_seq_len": 10,
                    "lstm_cell_size": 16,
                    "fcnet_hiddens": [16],
                }
            )
            .training(train_batch_size_per_learner=100)
            .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=400)
            .debugging(seed=3)
            .build()
        )
    try:
        before = _flat_weights(algo.learner.get_state()["module"])
        assert _train_until_updated(algo)["default_policy"] == 200
        with algo._learner_held():  # (the learner thread is between updates)
            states = algo.learner_replicas.replica_states()
        assert pickle.dumps(states[0]["module"]) == pickle.dumps(states[1]["module"])
        assert np.abs(_flat_weights(states[0]["module"]) - before).max() > 1e-4
    finally:
        algo.stop()


@pytest.mark.parametrize("name", ["SAC", "DQN"])
def test_multi_agent_off_policy_learners_stay_replicas(name):
    from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole, MultiAgentPendulum

    env = MultiAgentPendulum if name == "SAC" else MultiAgentCartPole
    config = (
        _off_policy_config(name, "numpy", 2)
        .environment(env, env_config={"num_agents": 2})
        .multi_agent(
            policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, *args, **kw: f"p{agent_id}"
        )
        .training(replay_buffer_config={"type": "MultiAgentPrioritizedEpisodeReplayBuffer"})
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = config.build()
    try:
        for _ in range(2):
            result = algo.train()
        for module_id in ("p0", "p1"):
            assert result["learners"][module_id]["num_module_steps_trained_lifetime"] > 0
        _module_replicas_equal(algo, ("p0", "p1"), keys=("module",))
    finally:
        algo.stop()


def test_multi_agent_appo_learners_stay_replicas():
    from trainer import APPOConfig
    from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = (
            APPOConfig()
            .environment(MultiAgentCartPole, env_config={"num_agents": 2})
            .env_runners(num_env_runners=1)
            .multi_agent(
                policies={"p0", "p1"},
                policy_mapping_fn=lambda agent_id, *args, **kw: f"p{agent_id}",
            )
            .learners(num_learners=2)
            .training(train_batch_size_per_learner=100)
            .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=400)
            .debugging(seed=3)
            .build()
        )
    try:
        assert _train_until_updated(algo, ("p0", "p1"))
        with algo._learner_held():  # (the learner thread is between updates)
            _module_replicas_equal(algo, ("p0", "p1"), keys=("module",))
    finally:
        algo.stop()


def test_the_learner_group_reaches_every_learner():
    algo = _config("numpy", 3).build()
    try:
        group = algo.learner_group
        assert len(group) == 3 and not group.is_local
        pids = [result.get() for result in group.foreach_learner(lambda learner: os.getpid())]
        assert len(set(pids)) == 3 and pids[0] == os.getpid()
        # A change every learner makes (learner 0's counts) reaches the next update alike.
        group.foreach_learner(lambda learner: setattr(learner, "kl_coeff", 0.5))
        algo.train()
        _replicas_equal(algo)
    finally:
        algo.stop()
    single = _config("numpy", 0).build()
    try:
        assert len(single.learner_group) == 0 and single.learner_group.is_local
    finally:
        single.stop()


# -- offline: BC, MARWIL, CQL and IQL, each learner on its rows of the recorded batch --------
@pytest.fixture(scope="module")
def recorded_data(tmp_path_factory):
    """Recorded CartPole steps (a hand-written controller's) and Pendulum steps."""
    import pyarrow.parquet as pq
    from test_cql import _pendulum_table
    from test_offline import _expert_table

    folder = tmp_path_factory.mktemp("recorded")
    (folder / "cartpole").mkdir()
    (folder / "pendulum").mkdir()
    pq.write_table(_expert_table(2000), folder / "cartpole" / "steps.parquet")
    pq.write_table(_pendulum_table(5, 0.3), folder / "pendulum" / "steps.parquet")
    return folder


def _offline_learners_config(name: str, framework: str, num_learners: int, data):
    from trainer import BCConfig, CQLConfig, IQLConfig, MARWILConfig

    config_class, env = {
        "BC": (BCConfig, "CartPole-v1"),
        "MARWIL": (MARWILConfig, "CartPole-v1"),
        "CQL": (CQLConfig, "Pendulum-v1"),
        "IQL": (IQLConfig, "Pendulum-v1"),
    }[name]
    folder = data / ("cartpole" if env == "CartPole-v1" else "pendulum")
    config = (
        config_class()
        .environment(env)
        .framework(framework)
        .offline_data(input_=f"local://{folder}", dataset_num_iters_per_learner=2)
        .learners(num_learners=num_learners)
        .training(train_batch_size_per_learner=64)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=4)
    )
    if name == "MARWIL":
        config = config.training(moving_average_sqd_adv_norm_update_rate=0.1)
    if name == "CQL":
        config = config.training(bc_iters=2, num_actions=4)
    return config


def test_offline_learners_give_the_weights_of_averaged_gradients_over_their_rows(recorded_data):
    from trainer.algorithms.data_parallel import shard_rows

    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = _offline_learners_config("MARWIL", "numpy", 2, recorded_data).build()
    try:
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] == 2 * 64  # RLlib's: x num_learners
        trained = result["learners"]["__all_modules__"]["num_env_steps_trained"]
        assert trained == 2 * 2 * 64
        _replicas_equal(algo, keys=("module", "optimizer", "moving_average_sqd_adv_norm"))
        batch = algo.offline_data.sample(128)
        state = pickle.loads(pickle.dumps(algo.learner.get_state()))
        algo.learner_replicas.new_round()
        algo.update_learners_on_batch(batch, num_env_steps_sampled_lifetime=128)
        got = algo.learner.get_state()
        # The reference: two copies, each on its rows, stepping on the mean gradient, the
        # moving average the mean of theirs.
        learners = []
        for _ in range(2):
            learner = type(algo).learner_for(algo.config, spaces_of(algo.env_runner_group))
            learner.set_state(copy.deepcopy(state))
            learners.append(learner)
        parts = []
        for learner, shard in zip(learners, shard_rows(batch, 2), strict=True):
            stats = learner.loss_and_grads(shard)
            gradient = learner.module.gradient_buffer()[0].astype(np.float64)
            parts.append((gradient, stats["total_loss"], learner.moving_average_sqd_adv_norm))
        for learner in learners:
            learner.moving_average_sqd_adv_norm = sum(p[2] for p in parts) / 2
            learner.module.gradient_buffer()[0][:] = sum(p[0] for p in parts) / 2
            learner.apply_gradients(sum(p[1] for p in parts) / 2)
        want = learners[0].get_state()
        assert got["moving_average_sqd_adv_norm"] == pytest.approx(
            want["moving_average_sqd_adv_norm"], rel=1e-12
        )
        assert got["moving_average_sqd_adv_norm"] != state["moving_average_sqd_adv_norm"]
        np.testing.assert_allclose(
            _flat_weights(got["module"]), _flat_weights(want["module"]), rtol=1e-5, atol=1e-7
        )
        assert np.abs(_flat_weights(got["module"]) - _flat_weights(state["module"])).max() > 1e-5
        _replicas_equal(algo, keys=("module", "optimizer", "moving_average_sqd_adv_norm"))
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("name", "framework"),
    [("BC", "torch"), ("CQL", "numpy"), ("CQL", "torch"), ("IQL", "numpy"), ("IQL", "torch")],
)
def test_offline_learners_stay_replicas(recorded_data, name, framework):
    if framework == "torch":
        pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = _offline_learners_config(name, framework, 2, recorded_data).build()
    try:
        before = _flat_weights(algo.learner.get_state()["module"])
        for _ in range(2):
            result = algo.train()
        trained = result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"]
        assert trained == 2 * 2 * 2 * 64  # iterations x updates x learners x rows
        states = algo.learner_replicas.replica_states()
        assert pickle.dumps(states[0]["module"]) == pickle.dumps(states[1]["module"])
        assert np.abs(_flat_weights(states[0]["module"]) - before).max() > 1e-5
    finally:
        algo.stop()


# -- DreamerV3: each learner on batch_size_B / N of the replayed sequences ---------------------
def test_dreamerv3_learners_split_the_replayed_sequences_and_stay_replicas():
    pytest.importorskip("torch")
    from trainer import DreamerV3Config
    from trainer.algorithms.algorithm_config import ConfigError

    config = (
        DreamerV3Config()
        .environment("CartPole-v1")
        .framework("torch")
        .learners(num_learners=2)
        .training(
            model_size="nano", batch_size_B=4, batch_length_T=8, horizon_H=5, training_ratio=32
        )
        .debugging(seed=0)
    )
    assert config.batch_size_B_per_learner == 2  # RLlib's: batch_size_B is the total
    with pytest.raises(ConfigError, match="batch_size_B=4 must be a multiple of num_learners=3"):
        copy.deepcopy(config).learners(num_learners=3).validate()
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = config.build()
    try:
        before = _flat_weights(algo.learner.get_state()["module"])
        for _ in range(2):
            algo.train()
        states = algo.learner_replicas.replica_states()
        # (the return percentiles' EMAs too: each learner moves them by the learners' mean)
        assert pickle.dumps(states[0]["module"]) == pickle.dumps(states[1]["module"])
        assert np.nanmax(np.abs(_flat_weights(states[0]["module"]) - before)) > 1e-6
    finally:
        algo.stop()


# -- VPG: each learner on its share of the whole episodes --------------------------------------
def test_vpg_learners_update_on_whole_episodes_and_stay_replicas():
    pytest.importorskip("torch")
    from trainer import VPGConfig
    from trainer.algorithms.data_parallel import shard_whole_episodes

    config = (
        VPGConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .learners(num_learners=2)
        .training(num_episodes_per_train_batch=6, lr=0.0005)
        .debugging(seed=2)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        algo = config.build()
    try:
        before = _flat_weights(algo.learner.get_state()["module"])
        result = algo.train()
        stats = result["learners"]["default_policy"]
        assert stats["num_env_steps_trained"] == result["env_runners"]["num_env_steps_sampled"]
        states = algo.learner_replicas.replica_states()
        assert pickle.dumps(states[0]["module"]) == pickle.dumps(states[1]["module"])
        assert np.abs(_flat_weights(states[0]["module"]) - before).max() > 1e-6
        episodes, _ = algo.env_runner_group.sample(min_env_steps=300)
    finally:
        algo.stop()
    complete = [episode for episode in episodes if episode.is_done]
    shards = shard_whole_episodes(complete, 2)
    assert sorted(id(e) for shard in shards for e in shard) == sorted(id(e) for e in complete)
    assert shard_whole_episodes(complete[:1], 2) == [complete[:1], complete[:1]]
