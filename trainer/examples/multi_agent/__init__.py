"""RLlib's multi-agent example helpers (`ray.rllib.examples.multi_agent`)."""
