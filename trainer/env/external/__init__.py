"""External simulators over TCP: RLlib's RLlink protocol (`rllink`) and the EnvRunner that
serves it (`env_runner_server_for_external_inference`)."""

from trainer.env.external.rllink import RLlink, get_rllink_message, send_rllink_message

__all__ = ["RLlink", "get_rllink_message", "send_rllink_message"]
