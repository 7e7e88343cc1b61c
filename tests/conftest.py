"""Every test must end every worker process it started: the toolkit's own fixture checks it."""

from trainer.testing import env_runner_pids as live_worker_pids  # noqa: F401
from trainer.testing import no_env_runner_orphans  # noqa: F401
