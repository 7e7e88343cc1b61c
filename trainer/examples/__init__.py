"""RLlib's example envs and helpers its tests and example scripts import
(`ray.rllib.examples.*` -> `trainer.examples.*`), so those files run with only their imports
changed. Each behaves as RLlib's class of the same name."""
