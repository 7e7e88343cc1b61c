"""RLlib's `BCCatalog` (`ray.rllib.algorithms.bc.bc_catalog`): PPO's catalog, as BC here
trains PPO's module (an encoder and a policy head; its value head unused)."""

from __future__ import annotations

from trainer.algorithms.ppo.catalog import PPOCatalog

__all__ = ["BCCatalog"]


class BCCatalog(PPOCatalog):
    """RLlib's `BCCatalog`: PPO's catalog (see the module docstring)."""
