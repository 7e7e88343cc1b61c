"""What DQN does not have here, in words (as `trainer.capabilities`, for DQN's own refusals):
the capability an `UnsupportedValue` or `UnsupportedExport` raised in this folder carries as
`.capability`."""

#: RLlib's recurrent DQN (`model_config["use_lstm"]`, R2D2-style replay of sequences).
DQN_VARIANTS = "recurrent DQN (use_lstm)"
#: A distributional Q-network (`num_atoms` > 1) in the policy exports.
DISTRIBUTIONAL_EXPORT = "distributional DQN (num_atoms > 1) in the ONNX and numpy policy exports"
