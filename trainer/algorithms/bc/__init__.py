"""BC, behaviour cloning from recorded data (RLlib 2.60's `BC`, MARWIL with beta = 0), one
folder: `bc.py` holds BCConfig and BC; the loss, learner and training step are MARWIL's
(`trainer/algorithms/marwil/`)."""

from trainer.algorithms.bc.bc import BC, BCConfig
from trainer.algorithms.bc.differences import DIFFERENCES as BC_DIFFERENCES
from trainer.algorithms.registry import AlgorithmEntry
from trainer.checkpoints.rllib_layout import ModuleRead

ALGORITHM = AlgorithmEntry(
    name="BC",
    algorithm_cls=BC,
    config_cls=BCConfig,
    differences=BC_DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.bc": ("trainer.algorithms.bc",),
        "ray.rllib.algorithms.bc.bc": ("trainer.algorithms.bc.bc",),
    },
    # RLlib's BC module is an encoder and a policy head; BC here trains PPO's module, whose
    # value head RLlib's lacks (it starts as built).
    rllib_module_reads={
        "ray.rllib.algorithms.bc.torch.default_bc_torch_rl_module.DefaultBCTorchRLModule": (
            ModuleRead(
                "ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module.DefaultPPOTorchRLModule",
                model_config={"vf_share_layers": True},
                renamed={"_encoder.": "encoder.encoder.", "_pi_head.": "pi."},
                kept=("vf.",),
            )
        )
    },
)

__all__ = ["ALGORITHM", "BC", "BCConfig"]
