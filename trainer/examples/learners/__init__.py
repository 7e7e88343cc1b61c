"""RLlib's example learners (`ray.rllib.examples.learners`): custom torch learners written
against `trainer.torch_rl` (the `torch` extra)."""
