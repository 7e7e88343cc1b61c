"""APPO with a key-value store that every part of the algorithm reaches (RLlib's
`ray.rllib.examples.algorithms.classes.appo_w_shared_data_actor`).

    EnvRunners (their callbacks)  --put(key, value)-->  SharedDataActor  <--get(key)--  learner
                                                        (a named object)                pieces

`APPOWithSharedDataActor.setup` creates the store and hands its handle to each EnvRunner
(`env_runner._shared_data_actor`), to the learner and to each of its learner connector pieces
(`piece._shared_data_actor`). The store's contents are part of the algorithm's state, so a
checkpoint keeps them.
"""

from __future__ import annotations

from typing import Any

from trainer import named_objects
from trainer.algorithms.appo import APPO


@named_objects.remote
class SharedDataActor:
    """A dict in the named-object server: `put(key, value)`, `get(key, delete=False)`."""

    def __init__(self) -> None:
        self.storage: dict = {}

    def get(self, key: Any, delete: bool = False) -> Any:
        if delete:
            return self.storage.pop(key, None)
        return self.storage.get(key)

    def put(self, key: Any, value: Any) -> None:
        self.storage[key] = value

    def get_state(self) -> dict:
        return dict(self.storage)

    def set_state(self, state: dict) -> None:
        self.storage = dict(state)


def _hand_over(actor: Any, store: Any) -> None:
    """Gives `actor` (an EnvRunner or the learner) and its learner pieces the store's handle."""
    actor._shared_data_actor = store
    for piece in getattr(actor, "_learner_connector", None) or ():
        piece._shared_data_actor = store


class APPOWithSharedDataActor(APPO):
    """APPO whose EnvRunners, learner and learner pieces share a `SharedDataActor`."""

    def setup(self, config: Any) -> None:
        super().setup(config)
        self.shared_data_actor = SharedDataActor.remote()  # type: ignore[attr-defined]
        share = lambda actor, store=self.shared_data_actor: _hand_over(actor, store)  # noqa: E731
        self.env_runner_group.foreach_env_runner(func=share)
        if self.eval_env_runner_group is not None:
            self.eval_env_runner_group.foreach_env_runner(func=share)
        self.learner_group.foreach_learner(func=share)

    def get_state(self, *args: Any, **kwargs: Any) -> dict:
        state = super().get_state(*args, **kwargs)
        state["shared_data_actor"] = self.shared_data_actor.get_state()
        return state

    def set_state(self, state: dict, *args: Any, **kwargs: Any) -> None:
        super().set_state(
            {k: v for k, v in state.items() if k != "shared_data_actor"}, *args, **kwargs
        )
        if "shared_data_actor" in state:
            self.shared_data_actor.set_state(state["shared_data_actor"])
