"""PPO's `entropy_coeff` takes RLlib's schedule `[[timestep, coeff], ...]`: the learners (numpy
and torch) hold RLlib's `Scheduler` (`entropy_coeff_schedulers_per_module`), step it after each
update to the env steps sampled, as RLlib's PPOLearner does, report `curr_entropy_coeff` and
`default_optimizer_learning_rate`, and the next update's loss weighs the entropy with the new
value; the Scheduler's values are RLlib's."""

from __future__ import annotations

import pytest

from trainer import PPOConfig
from trainer.compat.rllib_utils import DEFAULT_MODULE_ID
from trainer.core.schedules import Scheduler
from trainer.errors import ConfigError

SCHEDULE = [[0, 0.1], [256, 0.0]]


def _config(framework: str) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=0)
        .training(
            train_batch_size=128,
            minibatch_size=64,
            num_epochs=1,
            entropy_coeff=SCHEDULE,
            lr=[[0, 1e-5], [512, 0.0]],
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_the_entropy_coeff_follows_its_schedule(framework):
    if framework == "torch":
        pytest.importorskip("torch")
    algo = _config(framework).build()
    try:
        learner = algo.learner_group._learner
        scheduler = learner.entropy_coeff_schedulers_per_module[DEFAULT_MODULE_ID]
        assert scheduler.get_current_value() == pytest.approx(0.1)
        first = algo.train()["learners"][DEFAULT_MODULE_ID]
        # After 128 env steps sampled: halfway down the schedule, as RLlib reports it.
        assert first["curr_entropy_coeff"] == pytest.approx(0.05)
        assert first["default_optimizer_learning_rate"] == pytest.approx(7.5e-6)
        assert scheduler.get_current_value() == pytest.approx(0.05)
        assert learner.entropy_coeff == pytest.approx(0.05)  # what the next loss weighs
        second = algo.train()["learners"][DEFAULT_MODULE_ID]
        assert second["curr_entropy_coeff"] == pytest.approx(0.0)
        assert second["default_optimizer_learning_rate"] == pytest.approx(5e-6)
    finally:
        algo.stop()


def test_a_bad_schedule_is_refused_naming_the_setting():
    with pytest.raises(ConfigError, match="entropy_coeff"):
        PPOConfig().training(entropy_coeff=[[10, 0.1], [256, 0.0]])
    with pytest.raises(ConfigError, match="entropy_coeff"):
        PPOConfig().training(entropy_coeff=-0.5)


@pytest.mark.ray
def test_the_scheduler_is_rllibs():
    from ray.rllib.utils.schedules.scheduler import Scheduler as RLlibScheduler

    schedule = [[0, 0.3], [100, 0.1], [250, 0.0]]
    ours, theirs = Scheduler(schedule), RLlibScheduler(schedule)
    assert ours.get_current_value() == pytest.approx(float(theirs.get_current_value()))
    for t in (0, 30, 100, 170, 250, 1000):
        assert ours.update(t) == pytest.approx(float(theirs.update(t)))
        assert ours.get_current_value() == pytest.approx(float(theirs.get_current_value()))
    fixed, fixed_theirs = Scheduler(0.25), RLlibScheduler(0.25)
    assert fixed.update(500) == fixed_theirs.update(500) == 0.25
    for bad in ([[1, 0.1], [2, 0.2]], [[0, 0.1]], [[0, 0.1, 3], [1, 0.2]]):
        with pytest.raises(ValueError) as ours_error:
            Scheduler.validate(fixed_value_or_schedule=bad, setting_name="x", description="y")
        with pytest.raises(ValueError) as theirs_error:
            RLlibScheduler.validate(fixed_value_or_schedule=bad, setting_name="x", description="y")
        assert str(ours_error.value)[:60] == str(theirs_error.value)[:60]
