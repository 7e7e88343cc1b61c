"""`MultiAgentSubEnvGuard`: with `restart_failed_sub_environments=True`, each sub-env of a
`MultiAgentEnvRunner` is wrapped in one.

An exception in the wrapped MultiAgentEnv's `reset()` or `step()` does not escape into the
runner's step over all its sub-envs (which would abort it with the other sub-envs half
stepped): the guard records it in `failure` (the exception keeps its traceback) and returns an
empty result, no agent observing and nothing done. After each step over the sub-envs the runner
re-creates every sub-env whose guard holds a failure and drops that sub-env's episode
(`MultiAgentEnvRunner._recover_sub_envs`), as RLlib 2.60's MultiAgentEnvRunner re-creates its
env and drops its episodes on ENV_STEP_FAILURE.
"""

from __future__ import annotations

from typing import Any

from trainer.env.multi_agent_env import ALL_AGENTS


class MultiAgentSubEnvGuard:
    """Catches the wrapped MultiAgentEnv's exceptions: `failure` holds the last one until the
    runner replaces this sub-env. Everything else (agents, spaces, render, ...) is the wrapped
    env's."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.failure: BaseException | None = None
        #: "reset" or "step": the call that raised `failure`.
        self.failed_in: str | None = None

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict, dict]:
        try:
            return self.env.reset(seed=seed, options=options)
        except Exception as error:
            self.failure, self.failed_in = error, "reset"
            return {}, {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        try:
            return self.env.step(action_dict)
        except Exception as error:
            self.failure, self.failed_in = error, "step"
            return {}, {}, {ALL_AGENTS: False}, {ALL_AGENTS: False}, {}

    def close(self) -> None:
        self.env.close()

    def __getattr__(self, name: str) -> Any:
        # Only called for names the guard itself lacks: the wrapped env's attributes.
        if name == "env":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    def __repr__(self) -> str:
        return f"MultiAgentSubEnvGuard({self.env!r})"
