"""Env wrappers of RLlib's `ray.rllib.env.wrappers`: agent grouping and PettingZoo."""
