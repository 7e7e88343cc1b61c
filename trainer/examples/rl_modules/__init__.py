"""RLlib's example RLModules (`ray.rllib.examples.rl_modules`) that need no torch: numpy
modules a script mixes with trained ones in a MultiRLModule."""
