"""RLlib's torch testing modules (`ray.rllib.core.testing.torch`). Needs the `torch` extra."""
