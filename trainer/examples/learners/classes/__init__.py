"""RLlib's example learner classes (`ray.rllib.examples.learners.classes`), each in the module
of RLlib's name: `PPOTorchLearnerWithWeightRegularizerLoss` in `custom_ppo_loss_fn_learner`
(a loss term added to PPO's) and `PPOTorchLearnerWithSeparateVfOptimizer` in
`separate_vf_lr_and_optimizer_learner` (two optimizers). They import torch: this package does
not import them."""
