"""EnvRunners whose weights the learner's overwrite at once (an Algorithm's, remote and local)
skip their networks' random initialisation at start-up; every seeded result stays what it was, and runners
whose first weights nobody syncs keep their seeded initial weights."""

import numpy as np
from helpers import small_ppo

from trainer.env.env_runner import EnvRunner
from trainer.env.envs import make_env_creator
from trainer.runners.env_runner_group import EnvRunnerGroup


class SyncingRunner(EnvRunner):
    """Overrides `set_weights` (the same behaviour): the group cannot know that a sync
    overwrites every parameter, so its runners initialise their networks."""

    def set_weights(self, weights, global_timestep=None, connector_state=None):
        super().set_weights(weights, global_timestep, connector_state)


def _config(**env_runners):
    return small_ppo().env_runners(num_env_runners=2, **env_runners).debugging(seed=3)


def _remote_weights(group: EnvRunnerGroup) -> list[dict]:
    return group.foreach_env_runner(lambda runner: runner.get_weights(), local_env_runner=False)


def _group(config, **kwargs) -> EnvRunnerGroup:
    config = config.copy()
    config.validate()
    return EnvRunnerGroup(config.freeze(), make_env_creator(config.env), **kwargs)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a
    )


def test_a_group_whose_weights_follow_starts_runners_without_random_weights():
    group = _group(_config(), weights_synced_at_start=True)
    try:
        local = group.local_env_runner.get_weights()
        for weights in [local, *_remote_weights(group)]:
            assert weights.keys() == local.keys()
            assert all(not np.any(w) and w.dtype == np.float32 for w in weights.values())
        rng = np.random.default_rng(0)
        synced = {k: rng.standard_normal(w.shape).astype(np.float32) for k, w in local.items()}
        group.sync_weights(synced)
        assert _same(group.local_env_runner.get_weights(), synced)
        assert all(_same(weights, synced) for weights in _remote_weights(group))
    finally:
        group.stop()


def test_a_group_without_a_sync_keeps_the_seeded_initial_weights():
    group = _group(_config())
    try:
        local = group.local_env_runner.get_weights()
        assert all(_same(weights, local) for weights in _remote_weights(group))
    finally:
        group.stop()


def test_a_runner_class_with_its_own_set_weights_keeps_the_seeded_initial_weights():
    group = _group(_config(env_runner_cls=SyncingRunner), weights_synced_at_start=True)
    try:
        local = group.local_env_runner.get_weights()
        assert all(_same(weights, local) for weights in _remote_weights(group))
    finally:
        group.stop()


def test_seeded_training_is_bit_identical_with_and_without_the_skipped_initialisation():
    """The same seeded training twice: once with the runners' initialisation skipped (the
    default EnvRunner), once with it done (a runner class the skip does not apply to)."""
    results = []
    for config in (_config(), _config(env_runner_cls=SyncingRunner)):
        algo = config.build()
        try:
            for _ in range(2):
                result = algo.train()
            results.append(
                (
                    algo.get_weights(),
                    _remote_weights(algo.env_runner_group),
                    result["env_runners"]["num_env_steps_sampled_lifetime"],
                    result["env_runners"].get("episode_return_mean"),
                )
            )
        finally:
            algo.stop()
    (weights, remote, steps, returns), (weights2, remote2, steps2, returns2) = results
    assert _same(weights, weights2)
    assert all(_same(a, b) for a, b in zip(remote, remote2, strict=True))
    assert all(_same(weights, a) for a in remote)
    assert (steps, returns) == (steps2, returns2)
