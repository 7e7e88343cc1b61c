"""Every learner has `update_threads` (`Learner.update_threads`), what an algorithm runs a round
of its updates in: one BLAS thread (`BlasThreads`) unless the learner sets its own."""

from __future__ import annotations

from typing import Any

from trainer.core.blas import BlasThreads
from trainer.core.learner import Learner, UpdateResults


class BareLearner(Learner):
    """A learner that sets no `update_threads` of its own."""

    def update(self, data: Any, /, *, num_env_steps_sampled_lifetime: int) -> UpdateResults:
        return {}

    def get_state(self) -> dict:
        return {}

    def check_state(self, state: dict, where: str = "learner") -> None:
        pass

    def set_state(self, state: dict) -> None:
        pass


def test_a_learner_without_its_own_runs_its_updates_on_one_blas_thread():
    learner = BareLearner()
    threads = learner.update_threads
    assert isinstance(threads, BlasThreads) and threads.num_threads == 1
    assert learner.update_threads is threads  # made once, kept
    assert BareLearner().update_threads is not threads  # each learner its own
    with learner.update_threads():
        pass


def test_a_learner_that_sets_its_own_keeps_it():
    learner = BareLearner()
    own = BlasThreads(num_threads=2)
    learner.update_threads = own
    assert learner.update_threads is own
