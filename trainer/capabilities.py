"""What this project does not have, in words: the capability a missing RLlib name or an
unsupported setting needs. `RLlibNotAvailable` and `ConfigError` carry one of these as
`.capability`; the examples bench reports a run stopped by one as "out of scope" with it, and
the deliberate-differences table uses the same words. An algorithm's own words (what one
algorithm does not have) are in its folder, e.g. `trainer.algorithms.dqn.capabilities`."""

MULTI_AGENT = "multi-agent"
TORCH = "torch RLModules and Learners"
OTHER_ALGORITHMS = "algorithms not implemented here"
TUNE = "Ray Tune"
OFFLINE = "offline data"
ATARI = "Atari"
OLD_API_STACK = "RLlib's old API stack (Policy, ModelV2, RolloutWorker)"
SERVE = "Ray Serve"
RAY_DATA = "Ray Data"
RAY_INTERNALS = "Ray's cluster internals"
THIRD_PARTY_ENVS = "third-party env wrappers (OpenSpiel, DeepMind Control, RecSim)"
META_LEARNING = "meta-learning (differentiable learners)"
LEARNER_CONNECTORS = "learner connectors (custom Learner pipelines)"
ACTION_SPACES = (
    "action spaces other than Discrete, Box, MultiDiscrete, and Tuple and Dict of those "
    "(MultiBinary, Text, Sequence, Graph leaves)"
)
OBSERVATION_SPACES = "observation spaces other than Box, Discrete, Dict and Tuple"
MODULE_TO_ENV_CONNECTORS = "module-to-env connectors (custom action pipelines)"
POLICY_EXPORT = "policy export (ONNX, numpy files)"
#: RLlib's per-component checkpoint protocol (`Checkpointable`): checkpoints here are this
#: project's format, written and read by the Algorithm (docs/checkpoints.md).
CHECKPOINTABLE = "RLlib's per-component Checkpointable protocol"
#: torch.compile of RLModules and Learners (the torch modules here run eagerly).
TORCH_COMPILE = "torch.compile of RLModules and Learners"
#: RLlib's connector pieces that fill a batch of columns (`ConnectorV2.add_batch_item`, ...):
#: the env-to-module pieces here rewrite the episodes, and the EnvRunner batches for itself.
BATCH_CONNECTORS = "connector pieces that build RLlib's batch of columns"
REMOTE_FILESYSTEMS = "remote filesystems (pyarrow.fs) for checkpoints"
#: What to use instead of RLlib's model classes and per-algorithm torch modules.
DEFAULT_MODELS_INSTEAD = (
    "the default numpy models, configured with rl_module(model_config=...) "
    "(DefaultModelConfig: fcnet_hiddens, fcnet_activation, ...)"
)
#: The fallback of an RLlib setting refused with no more specific capability.
OTHER_SETTINGS = "RLlib settings localrl does not implement (named in the message)"
