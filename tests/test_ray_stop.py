"""Ray after `Algorithm.stop()`: an algorithm whose build started Ray (`env_runners(
backend="ray")` in a process that had not joined Ray: `trainer.runners.ray_runner.connect`)
shuts it down when it stops; a Ray the user started (here the session's shared one,
`ray_session` in tests/conftest.py), or one an earlier algorithm started, stays up."""

from __future__ import annotations

import pytest

from trainer import PPOConfig

ray = pytest.importorskip("ray", reason="needs Ray (the test extra: pip install -e '.[test]')")
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _config():
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(backend="ray", num_env_runners=1, rollout_fragment_length=10)
        .training(train_batch_size=20, minibatch_size=10, num_epochs=1)
    )


def test_a_ray_the_algorithm_started_ends_with_its_stop(monkeypatch):
    """Without the shared Ray (this test leaves `ray_session` out: Ray is down when it starts):
    the first algorithm starts Ray, a second one built meanwhile joins it and leaves it up when
    it stops, and the first one's stop() shuts it down."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    first = _config().build()
    try:
        assert ray.is_initialized()
        second = _config().build()  # joins the Ray the first one started
        second.stop()
        assert ray.is_initialized()
    finally:
        first.stop()
    assert not ray.is_initialized()
    first.stop()  # again: nothing more to do


def test_a_ray_the_user_started_stays_up_after_stop(ray_session):
    assert ray.is_initialized()
    with _config().build() as algo:
        algo.train()
    assert ray.is_initialized()
