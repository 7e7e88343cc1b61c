"""RLlib's testing modules (`ray.rllib.core.testing`): small modules RLlib's own tests build."""
