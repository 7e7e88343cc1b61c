"""RLlib's example Algorithm classes (`ray.rllib.examples.algorithms.classes`)."""
