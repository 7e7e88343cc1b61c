"""BC, behaviour cloning from recorded data (RLlib 2.60's `BC`, MARWIL with beta = 0), one
folder:

    config.py          BCConfig: MARWILConfig with beta = 0 (its classes are MARWIL's)
    bc.py              BC: MARWIL's offline training step
    differences.py     its own rows of the deliberate-differences table
    catalog.py         BCCatalog: RLlib's name for PPO's catalog
    torch_module.py    DefaultBCTorchRLModule: RLlib's name for PPO's torch module

The loss and the learners are MARWIL's (`trainer/algorithms/marwil/`)."""

from trainer.algorithms.bc.bc import BC
from trainer.algorithms.bc.config import BCConfig
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
        "ray.rllib.algorithms.bc.bc": ("trainer.algorithms.bc.config", "trainer.algorithms.bc.bc"),
        "ray.rllib.algorithms.bc.bc_catalog": ("trainer.algorithms.bc.catalog",),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.bc.torch.default_bc_torch_rl_module": (
            "trainer.algorithms.bc.torch_module",
        ),
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
