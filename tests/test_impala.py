"""IMPALA and APPO: V-trace against its definition, the numpy learners' gradients against
finite differences, the queues, the settings and their refusals, and training CartPole with
EnvRunner processes sampling while the learner thread learns: weights broadcast with seq
numbers, staleness reported, checkpoints, a killed EnvRunner, an RLlib script through the
launcher."""

from __future__ import annotations

import math
import os
import random
import re
import signal
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
from helpers import results_until_trained, returns_until_trained, trained_env_steps
from test_launcher import run_script

from trainer import Algorithm, MultiRLModuleSpec, RLModuleSpec
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.appo import APPOConfig
from trainer.algorithms.appo.appo_learner import APPOLearner
from trainer.algorithms.impala import IMPALAConfig
from trainer.algorithms.impala.impala_learner import IMPALALearner, TrajectoryBatch
from trainer.algorithms.impala.learner_thread import (
    BatchQueue,
    CircularBuffer,
    LearnerThread,
    LearnerThreadTimeout,
    TrainBatch,
)
from trainer.algorithms.impala.vtrace import vtrace
from trainer.core.models import SpaceInfo
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.examples.envs.classes.multi_agent.tic_tac_toe import TicTacToe
from trainer.examples.rl_modules.classes.random_rlm import RandomRLModule


# -- V-trace -------------------------------------------------------------------------------------
def _vtrace_by_definition(logp, mu_logp, rewards, discounts, values, bootstrap, rho_bar, pg_bar):
    """One chunk, from the paper's sum: vs_t = V(x_t) + sum_k gamma^(k-t) (prod c_i) delta_k."""
    n = len(rewards)
    rho = np.exp(logp - mu_logp)
    c = np.minimum(1.0, rho)
    next_values = np.append(values[1:], bootstrap)
    delta = np.minimum(rho_bar, rho) * (rewards + discounts * next_values - values)
    vs = np.empty(n)
    for t in range(n):
        total, weight = 0.0, 1.0
        for k in range(t, n):
            total += weight * delta[k]
            weight *= discounts[k] * c[k]
        vs[t] = values[t] + total
    vs_next = np.append(vs[1:], bootstrap)
    pg = np.minimum(pg_bar, rho) * (rewards + discounts * vs_next - values)
    return vs, pg


def test_vtrace_is_its_definition_over_concatenated_chunks():
    rng = np.random.default_rng(0)
    lengths = [5, 1, 7]
    chunks = []
    for n in lengths:
        chunks.append(
            {
                "logp": rng.normal(-0.7, 0.5, n),
                "mu_logp": rng.normal(-0.7, 0.5, n),
                "rewards": rng.standard_normal(n),
                "discounts": np.where(rng.random(n) < 0.2, 0.0, 0.9),
                "values": rng.standard_normal(n),
                "bootstrap": float(rng.standard_normal()),
            }
        )
    flat = {
        key: np.concatenate([c[key] for c in chunks]) for key in chunks[0] if key != "bootstrap"
    }
    next_values = np.concatenate([np.append(c["values"][1:], c["bootstrap"]) for c in chunks])
    ends = np.concatenate([np.arange(n) == n - 1 for n in lengths])
    got = vtrace(
        target_logp=flat["logp"],
        behaviour_logp=flat["mu_logp"],
        rewards=flat["rewards"],
        discounts=flat["discounts"],
        values=flat["values"],
        next_values=next_values,
        chunk_end=ends,
        clip_rho_threshold=1.2,
        clip_pg_rho_threshold=0.8,
    )
    expected = [_vtrace_by_definition(*c.values(), 1.2, 0.8) for c in chunks]
    np.testing.assert_allclose(got.vs, np.concatenate([e[0] for e in expected]), rtol=1e-12)
    np.testing.assert_allclose(
        got.pg_advantages, np.concatenate([e[1] for e in expected]), rtol=1e-12
    )


def test_on_policy_vtrace_targets_are_the_discounted_returns():
    """pi = mu: V-trace's targets are the n-step returns bootstrapped at the chunk's end."""
    rewards = np.array([1.0, 2.0, 3.0])
    values = np.array([0.5, -0.2, 0.1])
    got = vtrace(
        target_logp=np.zeros(3),
        behaviour_logp=np.zeros(3),
        rewards=rewards,
        discounts=np.full(3, 0.5),
        values=values,
        next_values=np.array([-0.2, 0.1, 4.0]),
        chunk_end=np.array([False, False, True]),
    )
    returns = [1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 4, 2 + 0.5 * 3 + 0.25 * 4, 3 + 0.5 * 4]
    np.testing.assert_allclose(got.vs, returns)


# -- the learners' gradients ---------------------------------------------------------------------
def _float64_learner(learner_class, config, env_id):
    env = gym.make(env_id)
    spaces = SpaceInfo.from_spaces(env.observation_space, env.action_space)
    learner = learner_class(config, spaces)
    for module in (learner.module, getattr(learner, "target", None)):
        if module is None:
            continue
        for _, net in module._named_nets():
            if net is not None:
                net.params[:] = [p.astype(np.float64) for p in net.params]
        module.__dict__.pop("_gradients", None)
    if hasattr(learner, "target"):  # a target network a little away from the module
        learner.target.set_weights({k: w + 0.05 for k, w in learner.module.get_weights().items()})
    return learner


def _trajectory_batch(learner, env_id, rng) -> TrajectoryBatch:
    env = gym.make(env_id)
    lengths = [4, 3]
    rows = sum(lengths) + len(lengths)
    obs = rng.standard_normal((rows, *env.observation_space.shape))
    is_step = np.concatenate([np.arange(n + 1) < n for n in lengths])
    steps = sum(lengths)
    if env_id == "CartPole-v1":
        actions = rng.integers(0, 2, steps)
    else:
        actions = rng.uniform(-1, 1, (steps, 1))
    dist_inputs = learner.module.dist_inputs(obs)[is_step] + 0.1
    behaviour_logp = learner.module.dist.loss_grads(dist_inputs, actions, dist_inputs)[0]
    ends = np.concatenate([np.arange(n) == n - 1 for n in lengths])
    return TrajectoryBatch(
        obs=obs,
        is_step=is_step,
        actions=actions,
        rewards=rng.standard_normal(steps),
        behaviour_logp=behaviour_logp,
        terminated=ends & np.array([True] * 4 + [False] * 3),
        chunk_end=ends,
    )


@pytest.mark.parametrize(
    ("learner_class", "env_id", "training"),
    [
        (IMPALALearner, "CartPole-v1", {}),
        (IMPALALearner, "Pendulum-v1", {"entropy_coeff": 0.1}),
        (APPOLearner, "CartPole-v1", {"use_kl_loss": True, "clip_param": 0.1}),
        (APPOLearner, "Pendulum-v1", {"use_kl_loss": True, "kl_coeff": 0.3}),
    ],
)
def test_learner_gradients_match_finite_differences(learner_class, env_id, training):
    """The gradient is the loss's with V-trace's targets held (RLlib computes them without
    gradients)."""
    config_class = APPOConfig if learner_class is APPOLearner else IMPALAConfig
    config = (
        config_class()
        .environment(env_id)
        .training(gamma=0.9, vf_loss_coeff=0.7, vtrace_clip_rho_threshold=1.1, **training)
        .rl_module(model_config={"fcnet_hiddens": [5, 4], "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )
    learner = _float64_learner(learner_class, config, env_id)
    batch = _trajectory_batch(learner, env_id, np.random.default_rng(2))
    terms = learner.policy_terms(batch)
    held = learner.vtrace(
        batch,
        terms,
        terms.logp
        if learner_class is IMPALALearner
        else learner.module.dist.loss_grads(
            learner.target.dist_inputs(batch.obs)[batch.is_step],
            batch.actions,
            learner.target.dist_inputs(batch.obs)[batch.is_step],
        )[0],
    )
    learner.vtrace = lambda *args: held
    stats = learner.loss_and_grads(batch)
    assert math.isfinite(stats["total_loss"])
    grads = [g.copy() for g in learner.module.gradient_buffer()[1]]
    eps = 1e-6
    for param, grad in zip(learner.module.parameters(), grads, strict=True):
        flat, flat_grad = param.reshape(-1), grad.reshape(-1)
        for j in range(0, flat.size, max(1, flat.size // 5)):
            saved = flat[j]
            totals = []
            for delta in (eps, -eps):
                flat[j] = saved + delta
                totals.append(learner.loss_and_grads(batch)["total_loss"])
            flat[j] = saved
            numeric = (totals[0] - totals[1]) / (2 * eps)
            assert flat_grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-8)


# -- the queues ----------------------------------------------------------------------------------
def _batch(steps: int) -> TrainBatch:
    return TrainBatch(episodes=[steps], env_steps=steps)


def _learning(update, size: int = 2, *, in_update: threading.Event | None = None) -> LearnerThread:
    """A learner thread running `update` on a queue of `size` batches, started and resumed;
    with `in_update` (which `update` sets), in its update of a first batch (of 1 step)."""
    thread = LearnerThread(update, BatchQueue(size))
    thread.start()
    thread.resume()
    if in_update is not None:
        try:
            assert thread.queue.put(_batch(1), timeout=0.0)
            assert in_update.wait(10.0)
        except BaseException:
            thread.stop(timeout=10.0)
            raise
    return thread


def test_a_full_learner_queue_holds_the_driver_back_until_the_learner_takes_a_batch():
    """IMPALA's queue waits for room (RLlib 2.60's blocks): nothing sampled is dropped."""
    queue = BatchQueue(2)
    assert [queue.put(_batch(s), timeout=0.0) for s in (10, 20)] == [True, True]
    began = time.monotonic()
    assert not queue.put(_batch(30), timeout=0.05)  # full: no room within the timeout
    assert time.monotonic() - began >= 0.04
    taker = threading.Timer(0.05, queue.get, args=(0.0,))
    taker.start()
    assert queue.put(_batch(30), timeout=5.0)  # room once the learner took the oldest
    taker.join()
    assert [queue.get(0.0).env_steps, queue.get(0.0).env_steps, queue.get(0.0)] == [20, 30, None]
    assert queue.dropped_env_steps == 0


def test_the_circular_buffer_hands_each_batch_out_k_times_and_drops_the_oldest():
    buffer = CircularBuffer(num_batches=2, iterations_per_batch=3, seed=[0, 11])
    buffer.put(_batch(1))
    buffer.put(_batch(2))
    got = [buffer.get(0.0).env_steps for _ in range(6)]
    assert sorted(got) == [1, 1, 1, 2, 2, 2] and buffer.get(0.0) is None
    buffer.put(_batch(1))
    buffer.put(_batch(2))
    assert buffer.put(_batch(3)) and buffer.dropped_env_steps == 1  # the oldest, uses left
    assert sorted(buffer.get(0.0).env_steps for _ in range(6)) == [2, 2, 2, 3, 3, 3]


def test_pause_returns_once_the_results_of_the_update_it_waited_for_can_be_taken():
    """The driver takes the thread's results right after pause() (the iteration's last): the
    update pause() waited for is among them, however late the thread gets to store them (here
    0.2 s late)."""
    started = threading.Event()

    def update(batch):
        started.set()
        time.sleep(0.05)
        return {"env_steps": batch.env_steps}

    class LateForTheThread:  # the results' lock, taken 0.2 s late by the learner thread
        def __init__(self):
            self._lock = threading.Lock()

        def __enter__(self):
            if threading.current_thread() is thread:
                time.sleep(0.2)
            self._lock.acquire()

        def __exit__(self, *exc_info):
            self._lock.release()

    queue = BatchQueue(1)
    thread = LearnerThread(update, queue)
    thread._results_lock = LateForTheThread()
    thread.start()
    try:
        thread.resume()
        assert queue.put(_batch(7), timeout=0.0)
        assert started.wait(10.0)
        thread.pause()
        assert thread.take_results() == [{"env_steps": 7}]
        assert thread.num_updates == 1
    finally:
        thread.stop()


def test_stop_starts_no_update_and_waits_for_the_one_in_progress():
    """After stop() no update starts, even for a batch a paused thread holds, and stop()
    returns once the update in progress has ended: no learner thread outlives its
    algorithm's stop() (one that did was still in a BLAS call when the next test forked Ray's
    processes, and the process hung in OpenBLAS's fork handler)."""
    updates: list[int] = []
    in_update, finish = threading.Event(), threading.Event()

    def update(batch):
        updates.append(batch.env_steps)
        in_update.set()
        assert finish.wait(10.0)
        return {}

    # A paused thread with a batch queued: stop() must not let it learn on it.
    queue = BatchQueue(2)
    paused = LearnerThread(update, queue)
    paused.start()
    assert queue.put(_batch(1), timeout=0.0)
    time.sleep(0.2)  # (its loop polls every 0.05 s)
    ended = paused.stop(timeout=1.0)
    assert updates == []
    assert ended and not paused.is_alive()

    # A thread in an update: stop() waits for it, and the next batch is never learned on.
    learning = _learning(update)
    assert learning.queue.put(_batch(2), timeout=0.0)
    assert in_update.wait(10.0)
    assert learning.queue.put(_batch(3), timeout=0.0)
    stopped = []
    stopper = threading.Thread(target=lambda: stopped.append(learning.stop(timeout=10.0)))
    stopper.start()
    time.sleep(0.3)
    assert stopped == [] and learning.is_alive()  # still waiting for the update
    finish.set()
    stopper.join(10.0)
    assert stopped == [True] and not learning.is_alive()
    assert updates == [2]


def test_stop_says_when_the_update_in_progress_outlives_its_bound(caplog):
    finish = threading.Event()
    thread = _learning(lambda batch: finish.wait(10.0) and {}, size=1)
    assert thread.queue.put(_batch(1), timeout=0.0)
    time.sleep(0.2)
    try:
        assert thread.stop(timeout=0.1) is False
        assert "did not end within" in caplog.text
    finally:
        finish.set()
        thread.join(10.0)
    assert not thread.is_alive()


def test_pause_and_held_say_when_the_update_in_progress_hangs():
    """pause() (each train() ends with it) and held() (checkpoints, weights) wait for the
    update in progress within a bound and then raise a named timeout, never waiting for
    ever; the thread stays paused, and learns again once resumed."""
    in_update, finish = threading.Event(), threading.Event()
    updates: list[int] = []

    def update(batch):
        in_update.set()
        assert finish.wait(10.0)
        updates.append(batch.env_steps)
        return {}

    thread = _learning(update, in_update=in_update)
    try:
        assert thread.queue.put(_batch(2), timeout=0.0)
        with pytest.raises(LearnerThreadTimeout, match="did not end within 0 s"):
            thread.pause(timeout=0.1)
        with pytest.raises(LearnerThreadTimeout, match="0 update"):
            with thread.held(timeout=0.1):
                raise AssertionError("held the lock during an update")
        finish.set()
        with thread.held(timeout=10.0):  # the update ended: the learner stands still
            assert updates == [1]
        time.sleep(0.2)  # paused: the queued batch waits (the loop polls every 0.05 s)
        assert updates == [1] and thread.take_results() == [{}]
        thread.resume()
        deadline = time.monotonic() + 10.0
        while updates != [1, 2] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert updates == [1, 2]
    finally:
        finish.set()
        assert thread.stop(timeout=10.0)


def test_a_snapshot_does_not_wait_for_the_update_in_progress():
    """The weight broadcast's read (`snapshot`): during an update it returns None at once and
    the thread reads right after that update; between updates it reads at once; what `held()`
    may change drops what was asked or made."""
    in_update, finish = threading.Event(), threading.Event()
    version = [0]

    def update(batch):
        in_update.set()
        assert finish.wait(10.0)
        version[0] += 1
        return {}

    def read():
        return version[0], threading.current_thread().name

    thread = _learning(update, in_update=in_update)
    try:
        began = time.monotonic()
        assert thread.snapshot(read) is None  # in the update: asked of the thread
        assert thread.snapshot(read) is None
        assert time.monotonic() - began < 1.0  # (held() would wait the 10 s of the update)
        finish.set()
        deadline = time.monotonic() + 10.0
        while (made := thread.snapshot(read)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        # Made once: by the thread right after its update, or (between updates) here.
        assert made in [((1, "localrl-learner"), 1), ((1, threading.current_thread().name), 1)]
        thread.pause()
        assert thread.snapshot(read) == ((1, threading.current_thread().name), 1)
        # Asked during an update, then the driver holds the learner: nothing stale comes back.
        finish.clear()
        in_update.clear()
        thread.resume()
        assert thread.queue.put(_batch(2), timeout=0.0)
        assert in_update.wait(10.0)
        assert thread.snapshot(read) is None
        finish.set()
        with thread.held(timeout=10.0):
            version[0] = 10  # (a restored state)
        assert thread.snapshot(read) == ((10, threading.current_thread().name), 2)
    finally:
        finish.set()
        assert thread.stop(timeout=10.0)


def test_the_weight_broadcast_does_not_wait_for_the_update_in_progress():
    """APPO with a remote EnvRunner and slow updates (0.5 s): the training steps' weight
    broadcasts take no time (a broadcast that waited for the update in progress held back
    reading the EnvRunner's replies and sending its next request: 16% of the driver's time in
    RLlib's multi-agent CartPole example), and each broadcast sends the weights of a later
    finished update than the one before."""
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(train_batch_size_per_learner=100, broadcast_interval=2)
        .reporting(min_time_s_per_iteration=2.5)
        .debugging(seed=0)
    )
    algo = config.build()
    update, broadcast = algo.learner.update, algo._broadcast
    broadcasts: list[tuple[float, bool, int]] = []

    def slow_update(*args, **kwargs):
        time.sleep(0.5)
        return update(*args, **kwargs)

    def timed_broadcast():
        began = time.perf_counter()
        sent = broadcast()
        broadcasts.append((time.perf_counter() - began, sent, algo._updates_at_broadcast))
        return sent

    training_step, calls = algo.training_step, []

    def counted_training_step():
        training_step()
        calls.append(algo._steps_since_broadcast)  # (what the step logged)

    algo.learner.update, algo._broadcast = slow_update, timed_broadcast
    algo.training_step = counted_training_step
    try:
        result = algo.train()
        with algo._learner_held():
            updates = algo._learner_thread.num_updates
    finally:
        algo.stop()
    sent = [b for b in broadcasts if b[1]]
    assert updates >= 3 and len(sent) >= 2, (updates, broadcasts)
    assert sum(seconds for seconds, _, _ in broadcasts) < 0.25, broadcasts
    # Each broadcast: the weights after one more finished update than the last.
    assert [n for _, _, n in sent] == sorted({n for _, _, n in sent}), sent
    assert algo._weights_seq_no == len(sent)
    # RLlib's count of training steps since the broadcast was asked for (its off-policyness
    # tests): below the interval at every step, a broadcast that waits for its weights too.
    assert len(calls) > len(broadcasts) > len(sent) and max(calls) < 2, calls
    assert result["mean_num_training_step_calls_since_last_synch_worker_weights"] == calls[-1]


def test_a_fork_waits_for_the_learner_threads_update_in_progress():
    """A fork (os.fork, subprocess with a preexec_fn, as ray.init() starts Ray's processes)
    waits for a learner thread's update in progress and happens between updates: forked
    during one, OpenBLAS's fork handler waits for the BLAS call in progress, which waits for
    the BLAS threads the handler holds. The child sees the update finished; afterwards the
    thread learns on."""
    state = {"in_update": False}
    in_update = threading.Event()
    updated = []

    def update(batch):
        state["in_update"] = True
        in_update.set()
        time.sleep(0.5)
        state["in_update"] = False
        updated.append(batch.env_steps)
        return {}

    thread = _learning(update, in_update=in_update)
    try:
        pid = os.fork()
        if pid == 0:  # the child: was the update still running when the process forked?
            os._exit(1 if state["in_update"] else 0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert thread.queue.put(_batch(2), timeout=0.0)
        deadline = time.monotonic() + 10.0
        while updated != [1, 2] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert updated == [1, 2]
    finally:
        thread.stop()


# -- settings ------------------------------------------------------------------------------------
def test_defaults_are_rllibs():
    impala, appo = IMPALAConfig(), APPOConfig()
    assert (impala.lr, impala.train_batch_size, impala.rollout_fragment_length) == (5e-4, 500, 50)
    assert (impala.vf_loss_coeff, impala.entropy_coeff, impala.grad_clip) == (0.5, 0.01, 40.0)
    assert (impala.learner_queue_size, impala.broadcast_interval, impala.num_env_runners) == (
        3,
        1,
        2,
    )
    assert (appo.clip_param, appo.use_kl_loss, appo.kl_coeff, appo.tau) == (0.4, False, 1.0, 1.0)
    assert (appo.circular_buffer_num_batches, appo.circular_buffer_iterations_per_batch) == (8, 2)
    assert (appo.target_network_update_freq, appo.learner_queue_size) == (2, 16)


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (lambda: IMPALAConfig().training(vtrace=False), "vtrace=False"),
        (lambda: APPOConfig().training(learner_queue_size=4), "circular_buffer_num_batches"),
    ],
)
def test_what_cannot_run_is_refused_at_validate(config, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        config().environment("CartPole-v1").validate()


# -- training ------------------------------------------------------------------------------------
def _cartpole(config_class, **training):
    return (
        config_class()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2)
        .training(**training)
        .reporting(min_time_s_per_iteration=1)
        .debugging(seed=0)
    )


_APPO_TRAINING = {"vf_loss_coeff": 0.05, "entropy_coeff": 0.0, "lr": 0.002}


def _mean_return(result: dict) -> float:
    return result["env_runners"].get("episode_return_mean", math.nan)


def _returns_and_seq_nos(results: list[dict]) -> tuple[list[float], list[int]]:
    """Each iteration's mean return and the weights' seq number the EnvRunners sampled with."""
    returns = [_mean_return(result) for result in results]
    return returns, [result["env_runners"]["weights_seq_no"] for result in results]


def _check_the_learner_thread_result(result, seq_nos):
    """The weights went out many times, with rising seq numbers, the EnvRunners sampled with
    recent ones, and the learner reported its metrics."""
    learners = result["learners"]
    assert seq_nos == sorted(seq_nos) and seq_nos[-1] >= 3, seq_nos
    assert result["num_weight_broadcasts"] >= 1
    assert 0 <= result["env_runners"]["env_runner_staleness"] < 5
    assert learners["__all_modules__"]["num_env_steps_trained_lifetime"] > 0
    assert {"entropy", "total_loss", "gradients_default_optimizer_global_norm"} <= set(
        learners["default_policy"]
    )


@pytest.mark.parametrize(
    ("config_class", "training", "framework"),
    [(APPOConfig, {**_APPO_TRAINING, "lr": 0.001}, "numpy")],
    ids=["APPO"],
)
@pytest.mark.slow
def test_learns_cartpole_while_the_env_runners_sample(config_class, training, framework):
    """The numpy APPO learner, iterations of 2000 env steps sampled, until the mean return
    reaches 75 (random play: about 22; with lr=0 it stays there): the weights go out after
    every few updates, and the learner learns while the EnvRunners sample. The return first
    peaks near 50, dips below random play and then climbs; idle, seeds 0-2 first reached 75
    after 59,200-83,900 env steps trained (iterations 14-20), and 170-500 by 120,000. The
    check waits for trained steps, not iterations (up to 200,000): on a busy machine the
    learner thread trains less per sampled step (with lr=0.002 and 30 iterations, one loaded
    CI run ended at 62). bench/learning_targets.py runs it, IMPALA's and the torch learners to
    a mean return of 150 within 60 s."""
    config = _cartpole(config_class, **training).framework(framework)
    algo = config.reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=2000)
    algo = algo.build()
    try:
        results = results_until_trained(
            algo, 200_000, at_most=100, done=lambda result: _mean_return(result) >= 75
        )
    finally:
        algo.stop()
    returns, seq_nos = _returns_and_seq_nos(results)
    assert returns[-1] >= 75, (trained_env_steps(results[-1]), returns)
    _check_the_learner_thread_result(results[-1], seq_nos)
    assert seq_nos[-1] >= 10


#: The short runs' learning rate: IMPALA's default (5e-4) needs about 20k env steps to show its
#: rise; at 2e-3 it shows within 10k (the targets of bench/learning_targets.py keep the defaults).
_SHORT_LR = 0.002


@pytest.mark.slow
@pytest.mark.parametrize(
    ("config_class", "training", "framework", "iterations", "trained"),
    [
        # (`trained`: a little under what the learner trained in `iterations` on an idle
        # 2-core machine: 9,900, 9,800 and 10,300 env steps)
        (IMPALAConfig, {"lr": _SHORT_LR}, "numpy", 5, 9000),
        (IMPALAConfig, {"lr": _SHORT_LR}, "torch", 5, 9000),
        (APPOConfig, _APPO_TRAINING, "torch", 3, 9000),
    ],
    ids=["IMPALA", "IMPALA-torch", "APPO-torch"],
)
def test_starts_learning_cartpole_while_the_env_runners_sample(
    config_class, training, framework, iterations, trained
):
    """numpy learners, and with framework("torch") RLlib's default torch module trained by
    IMPALATorchLearner / APPOTorchLearner: within a few iterations of 2000 env steps (the
    learner queue holds the sampling back to the learner's pace) the mean return rises well
    above the first iteration's (random play: about 22). bench/learning_targets.py runs each
    to 150."""
    config = _cartpole(config_class, **training).framework(framework)
    algo = config.reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=2000)
    algo = algo.build()
    if framework == "torch":
        assert type(algo.learner).__name__ == f"{config_class.__name__[:-6]}TorchLearner"
    try:
        # (`iterations`, and on until the learner trained what an idle machine's trains in
        # them: on a busy one the learner thread trains less per sampled step.)
        results = results_until_trained(algo, trained, at_least=iterations, at_most=4 * iterations)
    finally:
        algo.stop()
    returns, seq_nos = _returns_and_seq_nos(results)
    result = results[-1]
    # Seeds 0-2: the best of iterations 2-5 was 1.30-2.1 times the first's (IMPALA, numpy and
    # torch), of iterations 2-3 1.6-2.6 times (APPO-torch); it rises and, at this learning
    # rate, may fall back after its peak.
    assert max(returns[1:]) >= 1.2 * returns[0], returns
    _check_the_learner_thread_result(result, seq_nos)


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_a_checkpoint_restores_the_learner_and_its_target_network(framework, tmp_path):
    # Asynchronous: an iteration may end before the learner thread's first update (a loaded
    # machine); min_train_timesteps_per_iteration has each train() wait for one (the restored
    # algorithm's too: its config comes with the checkpoint).
    config = _cartpole(APPOConfig, use_kl_loss=True).reporting(
        min_time_s_per_iteration=0.2, min_train_timesteps_per_iteration=1
    )
    config.framework(framework)
    algo = config.build()
    try:
        algo.train()
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        saved = algo.get_state(components="learner")["learner"]
        restored = Algorithm.from_checkpoint(path)
        try:
            assert type(restored).__name__ == "APPO"
            state = restored.get_state(components="learner")["learner"]
            for part in ("module", "target"):
                for name, weights in saved[part].items():
                    np.testing.assert_array_equal(state[part][name], weights, err_msg=name)
            assert state["kl_coeff"] == saved["kl_coeff"]
            assert state["num_env_steps_trained"] == saved["num_env_steps_trained"] > 0
            # (The checkpoint brings the learner results' keys back, without values: this
            # iteration's count is the restored learner's own update.)
            learners = restored.train()["learners"]
            assert learners["__all_modules__"]["num_env_steps_trained"] > 0
            assert math.isfinite(learners["default_policy"]["total_loss"])
        finally:
            restored.stop()
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_killed_env_runner_is_restarted_and_training_goes_on():
    """The kill is noticed when the dead runner's pipe is next read or written, and the
    runner restarted at the start of the iteration after; the other runner samples on."""
    algo = _cartpole(IMPALAConfig).reporting(min_time_s_per_iteration=0.5).build()
    try:
        algo.train()
        pid = algo.env_runner_group.remote_pids()[1]
        os.kill(pid, signal.SIGKILL)
        sampled = []
        for _ in range(10):
            sampled.append(algo.train()["num_env_steps_sampled_lifetime"])
            group = algo.env_runner_group
            if group.num_healthy_remote_workers() == 2 and group.remote_pids()[1] != pid:
                break
        assert group.num_healthy_remote_workers() == 2
        assert group.remote_pids()[1] != pid
        assert sampled == sorted(sampled) and len(set(sampled)) == len(sampled)
    finally:
        algo.stop()


def test_the_local_env_runner_alone_trains_too():
    """Sampling on the local EnvRunner (the main thread), the learner thread still learns: its
    first results come within a few iterations (how many depends on how soon the thread gets
    the CPU; on a busy machine not always within the first)."""
    config = _cartpole(IMPALAConfig).env_runners(num_env_runners=0)
    algo = config.reporting(min_time_s_per_iteration=0.2).build()
    trained = 0
    try:
        for _ in range(10):
            result = algo.train()
            learned = result.get("learners", {}).get("__all_modules__", {})
            trained = learned.get("num_env_steps_trained_lifetime", 0)
            if trained > 0:
                break
    finally:
        algo.stop()
    assert result["num_env_steps_sampled_lifetime"] >= 500
    assert trained > 0


def _policy_of_agent(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def two_agent_cartpole(config_class, seed: int = 0):
    """Two agents, one module each (RLlib's multi-agent CartPole APPO example's mapping), 1
    EnvRunner process with 4 sub-envs: the summed mean return (about 45 at random) passes 200
    within 90 s (bench/learning_targets.py)."""
    return (
        config_class()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_env_runners=1, num_envs_per_env_runner=4)
        .training(vf_loss_coeff=0.05, entropy_coeff=0.0, lr=0.003)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=_policy_of_agent)
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
        .reporting(min_time_s_per_iteration=0.5)
        .debugging(seed=seed)
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    # (`trained`: a little under what the learner trained in 3 iterations on an idle 2-core
    # machine: 11,400 and 22,800 env steps)
    ("config_class", "trained"),
    [(IMPALAConfig, 10_000), (APPOConfig, 20_000)],
    ids=["IMPALA", "APPO"],
)
def test_multi_agent_modules_learn_each_on_their_agents_steps(config_class, trained, tmp_path):
    """`two_agent_cartpole`, seed 2, 3 iterations of 4000 env steps (and on until the learner
    trained what it trains in them idle): both modules learn from their own agent's steps (the
    summed mean return reaches twice random play's 45: IMPALA 123, APPO 112; at lr=0 46), their
    weights go out together, and a checkpoint restores each module's learner (APPO: its target
    network too)."""
    config = two_agent_cartpole(config_class, seed=2).reporting(
        min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=4000
    )
    algo = config.build()
    try:
        # (3 iterations, and on until the learner trained what it trains in them idle)
        results = results_until_trained(algo, trained, at_least=3, at_most=12)
        returns, _ = _returns_and_seq_nos(results)
        learners = results[-1]["learners"]
        weights = algo.get_weights()
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        saved = algo.get_state(components="learner")["learner"]
    finally:
        algo.stop()
    assert max(returns) >= 90, returns
    for module_id in ("p0", "p1"):
        assert math.isfinite(learners[module_id]["total_loss"])
        assert learners[module_id]["num_module_steps_trained"] > 0
    all_modules = learners["__all_modules__"]
    assert (
        all_modules["num_module_steps_trained_lifetime"]
        > all_modules["num_env_steps_trained_lifetime"]
    )  # two agents step in each env step
    assert set(weights) == {"p0", "p1"}
    assert not np.array_equal(
        weights["p0"][next(iter(weights["p0"]))], weights["p1"][next(iter(weights["p1"]))]
    )
    restored = Algorithm.from_checkpoint(path)
    try:
        state = restored.get_state(components="learner")["learner"]
        parts = ("module", "target") if config_class is APPOConfig else ("module",)
        for module_id in ("p0", "p1"):
            for part in parts:
                for name, array in saved[module_id][part].items():
                    np.testing.assert_array_equal(state[module_id][part][name], array)
        assert math.isfinite(restored.train()["learners"]["p1"]["total_loss"])
    finally:
        restored.stop()


def _every_agent_to_p0(agent_id, episode, **kwargs):
    return "p0"


@pytest.mark.parametrize("num_learners", [0, 2], ids=["one-learner", "data-parallel"])
def test_a_module_without_steps_keeps_its_target_clock(num_learners):
    """APPO's target clock counts each batch's env steps for every module, one without steps
    in it too (here p1: every agent maps to p0), as RLlib 2.60's learner checks every module's
    target network after each update: p1's clock and last target update stay p0's, and p1
    reports the target updates it makes (its target follows the module it is). A
    data-parallel learner's replicas advance it alike."""
    config = (
        APPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_env_runners=0)
        .learners(num_learners=num_learners)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=_every_agent_to_p0)
        .training(train_batch_size_per_learner=100, target_network_update_freq=1 / 8)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=400)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        for _ in range(2):
            result = algo.train()
        state = algo.get_state(components="learner")["learner"]
    finally:
        algo.stop()
    learners = result["learners"]
    assert learners["p0"]["num_module_steps_trained"] > 0 and "total_loss" not in learners["p1"]
    clocks = {module_id: state[module_id]["num_env_steps_trained"] for module_id in ("p0", "p1")}
    assert clocks["p1"] == clocks["p0"] >= 100, clocks
    last = {module_id: state[module_id]["last_target_update_ts"] for module_id in ("p0", "p1")}
    assert last["p1"] == last["p0"] > 0, last
    assert learners["p1"]["num_target_updates"] >= 1  # (data-parallel: summed over learners)
    assert learners["p1"]["last_target_update_ts"] <= last["p1"]


def _random_pairing(agent_id, episode, **kwargs):
    return random.choice(["p0", "p1", "random"])


@pytest.mark.slow
@pytest.mark.parametrize("config_class", [IMPALAConfig, APPOConfig], ids=["IMPALA", "APPO"])
def test_module_specs_with_their_own_model_config_and_an_untrained_random_module(config_class):
    """RLlib's tic-tac-toe IMPALA/APPO examples: each trained module's spec has its own
    model_config (vf_share_layers=True, the config's being False), a RandomRLModule plays
    untrained, and the policy mapping pairs them at random. Each learner (APPO: its target
    network too) has its module's layers, and only the trained modules learn."""
    specs = {
        module_id: RLModuleSpec(model_config={"fcnet_hiddens": [32], "vf_share_layers": True})
        for module_id in ("p0", "p1")
    }
    specs["random"] = RLModuleSpec(module_class=RandomRLModule)
    config = (
        config_class()
        .environment(TicTacToe)
        .env_runners(num_env_runners=1, num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=200)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .multi_agent(
            policies={"p0", "p1", "random"},
            policy_mapping_fn=_random_pairing,
            policies_to_train=["p0", "p1"],
        )
        .reporting(min_time_s_per_iteration=0.3)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        learner_state = algo.get_state(components="learner")["learner"]
        for _ in range(20):
            result = algo.train()
            if all(m in result["learners"] for m in ("p0", "p1")):
                break
    finally:
        algo.stop()
    assert set(learner_state) >= {"p0", "p1"} and "random" not in learner_state
    for module_id in ("p0", "p1"):
        module = learner_state[module_id]["module"]
        assert any(name.startswith("encoder.") for name in module), sorted(module)  # shared
        if config_class is APPOConfig:
            assert sorted(learner_state[module_id]["target"]) == sorted(module)
        assert math.isfinite(result["learners"][module_id]["total_loss"])
    assert "random" not in result["learners"]


APPO_SCRIPT = """
from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

config = (
    APPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=2, num_envs_per_env_runner=2)
    .training(circular_buffer_iterations_per_batch=2, vf_loss_coeff=0.05, entropy_coeff=0.0)
    .rl_module(model_config=DefaultModelConfig(vf_share_layers=True))
    .reporting(min_time_s_per_iteration=1)
)
algo = config.build()
for _ in range(2):
    result = algo.train()
algo.stop()
print("APPO", type(algo).__name__, result["num_env_steps_sampled_lifetime"] > 0)
"""


@pytest.mark.slow
@pytest.mark.cli
def test_an_rllib_appo_script_runs_unmodified_through_the_launcher(tmp_path):
    out = run_script(tmp_path, APPO_SCRIPT)
    assert "APPO APPO True" in out.stdout, out.stdout + out.stderr


@pytest.mark.slow
def test_the_env_runners_mean_std_filters_are_merged_and_shared():
    """RLlib's cartpole_impala.py normalizes observations with a MeanStdFilter: the EnvRunners'
    new observations are merged in the main process after each reply and go back with the
    next requests, so the merged statistics count what every runner observed."""
    from trainer.connectors import MeanStdFilter

    config = _cartpole(IMPALAConfig).env_runners(
        env_to_module_connector=lambda env, spaces, device: MeanStdFilter()
    )
    algo = config.reporting(min_time_s_per_iteration=0.5).build()
    try:
        for _ in range(2):
            result = algo.train()
        pipeline = algo.env_runner_group.local_env_runner.env_to_module
        counts = [state["synced"]["n"] for state in _filter_states(pipeline.get_state())]
    finally:
        algo.stop()
    assert counts and counts[0] >= 0.9 * result["num_env_steps_sampled_lifetime"]


def _filter_states(state):
    """The MeanStdFilter states anywhere in a pipeline's state."""
    if isinstance(state, dict):
        if "synced" in state:
            return [state]
        return [found for value in state.values() for found in _filter_states(value)]
    return []


# -- recurrent modules ---------------------------------------------------------------------------
_LSTM = {"use_lstm": True, "max_seq_len": 8, "lstm_cell_size": 16, "fcnet_hiddens": [16]}


def test_a_recurrent_modules_sequences_reproduce_what_the_env_runner_sampled():
    """The learner runs each chunk (its bootstrap observation included) as sequences of
    max_seq_len rows from the states the EnvRunner recorded: with the EnvRunner's weights, its
    log-likelihoods of the sampled actions are the EnvRunner's, row for row, across chunk
    boundaries (episodes cut by the fragment length) and sequence boundaries."""
    import torch

    from trainer.algorithms.impala.torch_learner import IS_STEP, SequenceTrajectoryBatch
    from trainer.torch_rl.learner import to_train_tensors

    algo = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=30)
        .rl_module(model_config=dict(_LSTM, vf_share_layers=True))
        .debugging(seed=1)
        .build()
    )
    try:
        learner = algo.learner
        runner = algo.env_runner_group.local_env_runner
        runner.sample(num_timesteps=60)  # later chunks start mid-episode, from a recorded state
        episodes = runner.sample(num_timesteps=60)
        batch = learner.trajectory_batch(episodes)
        assert isinstance(batch, SequenceTrajectoryBatch)
        assert any(ep.t_started > 0 for ep in episodes)
        assert batch.seq_obs.shape[1] == 8 and batch.row_mask.sum() == len(batch.is_step)
        columns = to_train_tensors(learner.columns(batch), learner.device)
        with torch.no_grad():
            out = learner.rl_module.forward_train(columns)
            inputs, values = learner.row_outputs(learner.rl_module, columns, out)
            dist = learner.rl_module.get_train_action_dist_cls().from_logits(
                inputs[columns[IS_STEP]]
            )
            logp = dist.logp(columns["actions"]).numpy()
        np.testing.assert_allclose(logp, batch.behaviour_logp, atol=1e-5)
        assert values is not None and values.shape == (len(batch.is_step),)
    finally:
        algo.stop()


def recurrent_appo_cartpole(seed: int = 0):
    """APPO with an LSTM (torch), 1 EnvRunner process with 4 sub-envs: on CartPole its mean
    return passes 60 (about 22 at random) within 90 s (bench/learning_targets.py)."""
    return (
        _cartpole(APPOConfig, lr=0.003, vf_loss_coeff=0.05, entropy_coeff=0.0)
        .env_runners(num_env_runners=1, num_envs_per_env_runner=4)
        .rl_module(model_config=dict(_LSTM, vf_share_layers=True))
        .debugging(seed=seed)
    )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_recurrent_appo_starts_learning_a_task_only_memory_solves():
    """`recurrent_appo_cartpole` on RepeatAfterMeEnv (+1 for repeating the previous step's
    random token, -1 otherwise: 0 on average without memory), each batch replayed 6 times:
    once the learner has trained on 27,000 env steps (5 iterations of 1000 sampled on an idle
    machine; more where the learner thread gets less of the CPU, as in a loaded CI run that
    stopped after 5 at a return of 1.3), the LSTM carries the token to the next step."""
    from trainer.examples.envs.classes.repeat_after_me_env import RepeatAfterMeEnv

    config = (
        recurrent_appo_cartpole(seed=0)
        .environment(RepeatAfterMeEnv, env_config={"episode_len": 20})
        .training(circular_buffer_iterations_per_batch=6)
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=1000)
    )
    algo = config.build()
    try:
        assert algo.learner.stateful
        returns, trained = returns_until_trained(algo, 27_000, at_most=20)
    finally:
        algo.stop()
    # A memoryless policy's mean return over the window (~100 episodes of 21 steps) is
    # 0 +- 0.5; seeds 0-2 returned 3.2-4.0 at 27,000 env steps trained.
    assert trained >= 27_000 and returns[-1] >= 2.0, (trained, returns)


def test_a_recurrent_module_with_previous_actions_is_refused_at_build():
    config = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .rl_module(model_config=dict(_LSTM, lstm_use_prev_action=True))
    )
    with pytest.raises(TypeError, match="lstm_use_prev_action"):
        config.build()


@pytest.mark.parametrize("algo", ["APPO", "IMPALA"])
def test_a_torch_learner_keeps_up_with_sampling_in_its_own_process(algo):
    """Without remote EnvRunners the driver samples in the learner thread's process: each
    training step waits (bounded) for the learner to take the queued batches, so the learner
    is not starved of the GIL by the sampling (APPO trained 1,500 env steps in 10 s while
    118,150 were sampled, its circular buffer dropping the rest). Here at least half of the
    sampled steps are trained on (APPO: each batch twice)."""
    pytest.importorskip("torch")
    config_class = APPOConfig if algo == "APPO" else IMPALAConfig
    config = (
        config_class()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200)
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=4000)
        .debugging(seed=0)
    )
    algo_ = config.build()
    try:
        for _ in range(2):
            result = algo_.train()
    finally:
        algo_.stop()
    sampled = result["num_env_steps_sampled_lifetime"]
    trained = result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"]
    assert sampled >= 8000 and trained >= sampled // 2, (sampled, trained)
