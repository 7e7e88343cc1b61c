"""RLlib's old-stack model config defaults (`ray.rllib.models.MODEL_DEFAULTS`, defined in
`ray.rllib.models.catalog`): a plain dict, RLlib 2.60's values. RLlib's new-stack tests still
pass a copy as a module's `model_config`; RLlib's new-stack catalogs read the keys they know
(those of `DefaultModelConfig`) and ignore the rest. Here the model configs accept these
old-stack keys at exactly these values (`OLD_STACK_ONLY_KEYS`, checked by
`trainer.core.models.check_model_config`) and refuse any other value, which no network here
would read. The dict is kept in `trainer.core.models` (the model-config check reads it).
"""

from __future__ import annotations

from trainer.core.models import OLD_STACK_MODEL_DEFAULTS

#: RLlib 2.60's `MODEL_DEFAULTS` (ray.rllib.models.catalog), key for key.
MODEL_DEFAULTS = OLD_STACK_MODEL_DEFAULTS
