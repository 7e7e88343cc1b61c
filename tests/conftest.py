"""Every test must end every worker process it started: the toolkit's own fixture checks it."""

import pytest

from trainer.named_objects import shutdown_named_objects
from trainer.testing import no_env_runner_orphans  # noqa: F401


@pytest.fixture(autouse=True)
def no_named_objects_left():
    """Named objects created before an algorithm outlive its stop() (as in RLlib); each test
    starts without the previous test's."""
    yield
    shutdown_named_objects()
