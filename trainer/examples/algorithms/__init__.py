"""RLlib's example Algorithm subclasses (`ray.rllib.examples.algorithms`)."""
