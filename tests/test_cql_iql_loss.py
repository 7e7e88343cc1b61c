"""CQL's and IQL's losses (`trainer.algorithms.cql.loss`, `trainer.algorithms.iql.loss` and their
`torch_loss` beside them): the numpy loss and the torch loss on the same module outputs give
the same losses and the same statistics under the same keys, and the numpy backward pass gives
torch autograd's gradients with respect to those outputs."""

import gymnasium as gym
import numpy as np
import pytest

from trainer.algorithms.cql import CQLConfig
from trainer.algorithms.cql.cql_learner import CQLLearner
from trainer.algorithms.cql.loss import (
    CQL_LOSS_KEY,
    behaviour_cloning_objective,
    conservative_critic_losses,
)
from trainer.algorithms.iql import IQLConfig
from trainer.algorithms.iql.loss import STAT_KEYS, numpy_loss
from trainer.algorithms.sac.loss import STAT_KEYS as SAC_STAT_KEYS
from trainer.algorithms.sac.loss import PolicyDraws
from trainer.algorithms.sac.sac_learner import recorded_train_batch
from trainer.core.models import SpaceInfo

torch = pytest.importorskip("torch")

from trainer.algorithms.cql.torch_loss import conservative_critic_losses as torch_critic_losses  # noqa: E402
from trainer.algorithms.cql.torch_loss import torch_loss as cql_torch_loss  # noqa: E402
from trainer.algorithms.iql.torch_loss import torch_loss as iql_torch_loss  # noqa: E402
from trainer.torch_rl.distributions import TorchSquashedGaussian  # noqa: E402

ROWS, DIM, NUM_ACTIONS = 12, 2, 3


def _tensors(arrays: dict[str, np.ndarray], grad: bool = False) -> dict:
    """The arrays as tensors (float ones requiring gradients with `grad`)."""
    return {
        key: torch.tensor(value, requires_grad=grad and value.dtype.kind == "f")
        for key, value in arrays.items()
    }


def _grad(loss, tensor) -> np.ndarray:
    (grad,) = torch.autograd.grad(loss, tensor, retain_graph=True)
    return grad.numpy()


def _recorded(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Recorded actions inside (-1, 1), rewards and terminateds, float64."""
    return {
        "actions": rng.uniform(-0.95, 0.95, (ROWS, DIM)),
        "rewards": rng.standard_normal(ROWS),
        "terminateds": rng.random(ROWS) < 0.3,
    }


def _dist_inputs(rng: np.random.Generator, clamped: bool) -> np.ndarray:
    """[mean, log_std]; with `clamped`, log-stds on both sides outside the clamp [-5, 2]."""
    log_std = rng.uniform(-1.5, 0.5, (ROWS, DIM))
    if clamped:
        log_std[0, 0], log_std[1, 1] = -7.0, 3.0
    return np.concatenate([0.5 * rng.standard_normal((ROWS, DIM)), log_std], axis=1)


# -- CQL ---------------------------------------------------------------------------------------
def _cql_outputs(rng: np.random.Generator, twin_q: bool) -> dict[str, np.ndarray]:
    """The conservative term's module outputs, shaped as RLlib's module gives them."""
    repeat = (ROWS, NUM_ACTIONS, 1)
    outputs = {
        "qf_preds": rng.standard_normal(ROWS),
        "actions_curr_repeat": rng.uniform(-1, 1, (ROWS * NUM_ACTIONS, DIM)),
        "logps_next_repeat": rng.standard_normal(repeat),
        "logps_curr_repeat": rng.standard_normal(repeat),
    }
    for prefix in ("q", "q_twin") if twin_q else ("q",):
        for draw in ("rand", "next", "curr"):
            outputs[f"{prefix}_{draw}_repeat"] = 3.0 * rng.standard_normal(repeat)
    if twin_q:
        outputs["qf_twin_preds"] = rng.standard_normal(ROWS)
    return outputs


@pytest.mark.parametrize("twin_q", [True, False])
def test_cql_critic_losses_agree_and_their_gradients_are_autograds(twin_q):
    config = CQLConfig().training(temperature=0.7, min_q_weight=2.0)
    rng = np.random.default_rng(0)
    outputs = _cql_outputs(rng, twin_q)
    q_targets = rng.standard_normal(ROWS)

    loss = conservative_critic_losses(outputs, q_targets, config)
    tensors = _tensors(outputs, grad=True)
    qf_loss, qf_twin_loss, cql_loss, td_error = torch_critic_losses(
        tensors, torch.tensor(q_targets), config
    )

    assert list(loss.losses) == (["qf", "qf_twin"] if twin_q else ["qf"])
    assert loss.losses["qf"] == pytest.approx(float(qf_loss.detach()), rel=1e-12)
    assert loss.cql_loss == pytest.approx(float(cql_loss.detach()), rel=1e-12)
    np.testing.assert_allclose(loss.td_error, td_error.detach().numpy(), rtol=1e-12)
    critics = [("q", "qf_preds", qf_loss)]
    if twin_q:
        assert loss.losses["qf_twin"] == pytest.approx(float(qf_twin_loss.detach()), rel=1e-12)
        critics.append(("q_twin", "qf_twin_preds", qf_twin_loss))
    else:
        assert qf_twin_loss is None
    for prefix, preds, critic_loss in critics:
        keys = [preds, *(f"{prefix}_{draw}_repeat" for draw in ("rand", "next", "curr"))]
        for key in keys:
            np.testing.assert_allclose(
                loss.gradients[key], _grad(critic_loss, tensors[key]), rtol=1e-10, atol=1e-14
            )
        # (the policy's log-likelihoods are held: no gradient reaches them)
        logps = [tensors["logps_next_repeat"], tensors["logps_curr_repeat"]]
        grads = torch.autograd.grad(critic_loss, logps, retain_graph=True, allow_unused=True)
        assert all(g is None for g in grads)
    assert len(loss.gradients) == 4 * len(critics)


def test_cql_behaviour_cloning_objective_is_the_recorded_actions_log_likelihood():
    rng = np.random.default_rng(1)
    inputs = _dist_inputs(rng, clamped=False)
    actions = _recorded(rng)["actions"]
    mean, log_std = inputs[:, :DIM], inputs[:, DIM:]
    draws = PolicyDraws(ROWS, None, mean, log_std, log_std, *([np.zeros_like(mean)] * 3), None)
    objective = behaviour_cloning_objective(None, None, actions, draws)

    tensor = torch.tensor(inputs, requires_grad=True)
    logp = TorchSquashedGaussian.from_logits(tensor).logp(torch.tensor(actions))
    np.testing.assert_allclose(objective.value, logp.detach().numpy(), rtol=1e-10)
    d_inputs = np.concatenate([objective.d_mean, objective.d_log_std], axis=1)
    np.testing.assert_allclose(d_inputs, _grad(-torch.mean(logp), tensor), rtol=1e-9)


@pytest.mark.parametrize("cloning", [True, False])
def test_cql_torch_loss_assembles_the_numpy_terms_under_the_numpy_keys(cloning):
    """The torch loss on given module outputs: its critics' losses and td_error are the numpy
    critic term's, its policy loss the numpy policy objective's (behaviour cloning while
    cloning); its statistics have the numpy learner's keys, in the same order."""
    # (gamma: a float32 number, as gamma (1 - terminated) is in torch)
    config = CQLConfig().training(temperature=0.7, min_q_weight=2.0, gamma=0.75)
    rng = np.random.default_rng(2)
    outputs = _cql_outputs(rng, twin_q=True)
    recorded = _recorded(rng)
    inputs = _dist_inputs(rng, clamped=False)
    outputs.update(
        {
            "action_dist_inputs": inputs,
            "logp_resampled": rng.standard_normal(ROWS),
            "q_curr": rng.standard_normal(ROWS),
            "q_target_next": rng.standard_normal(ROWS),
            "logp_next_resampled": rng.standard_normal(ROWS),
        }
    )
    log_alpha = torch.tensor([np.log(0.7)], dtype=torch.float64, requires_grad=True)
    loss = cql_torch_loss(
        _tensors(recorded),
        _tensors(outputs, grad=True),
        config,
        log_alpha=log_alpha,
        target_entropy=torch.tensor(-2.0, dtype=torch.float64),
        cloning=cloning,
        action_dist_class=TorchSquashedGaussian,
    )

    # (deterministic_backup: y is the target critics' value alone)
    q_targets = (
        recorded["rewards"] + 0.75 * (1.0 - recorded["terminateds"]) * outputs["q_target_next"]
    )
    critic = conservative_critic_losses(outputs, q_targets, config)
    assert float(loss.losses["qf_loss"].detach()) == pytest.approx(critic.losses["qf"], rel=1e-12)
    assert float(loss.losses["qf_twin_loss"].detach()) == pytest.approx(
        critic.losses["qf_twin"], rel=1e-12
    )
    assert float(loss.stats[CQL_LOSS_KEY].detach()) == pytest.approx(critic.cql_loss, rel=1e-12)
    np.testing.assert_allclose(loss.td_error.detach().numpy(), critic.td_error, rtol=1e-12)
    # policy_loss = mean(alpha log pi(a~|s) - objective), the objective the numpy one's.
    if cloning:
        mean, log_std = inputs[:, :DIM], inputs[:, DIM:]
        draws = PolicyDraws(ROWS, None, mean, log_std, log_std, *([np.zeros_like(mean)] * 3), None)
        objective = behaviour_cloning_objective(None, None, recorded["actions"], draws).value
    else:
        objective = outputs["q_curr"]
    policy_loss = np.mean(0.7 * outputs["logp_resampled"] - objective)
    assert float(loss.losses["policy_loss"].detach()) == pytest.approx(policy_loss, rel=1e-10)
    alpha_loss = -np.log(0.7) * np.mean(outputs["logp_resampled"] - 2.0)
    assert float(loss.losses["alpha_loss"].detach()) == pytest.approx(alpha_loss, rel=1e-10)

    numpy_learner = CQLLearner(
        config.training(twin_q=True, bc_iters=1 if cloning else 0).rl_module(
            model_config={"fcnet_hiddens": [4], "fusionnet_hiddens": [4]}
        ),
        SpaceInfo.from_spaces(gym.spaces.Box(-1.0, 1.0, (3,)), gym.spaces.Box(-1.0, 1.0, (DIM,))),
    )
    batch = {"obs": rng.standard_normal((ROWS, 3)), "new_obs": rng.standard_normal((ROWS, 3))}
    numpy_stats = numpy_learner.loss_and_gradients(
        recorded_train_batch({**batch, **recorded}, 0.75)
    ).stats
    assert list(loss.stats) == list(numpy_stats)
    assert [key for key in numpy_stats if key != CQL_LOSS_KEY] == list(SAC_STAT_KEYS)


# -- IQL ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("twin_q", [True, False])
def test_iql_losses_agree_and_their_gradients_are_autograds(twin_q):
    # (0.75 and 0.25: float32 numbers, as the expectile's weights and gamma (1 - terminated)
    # are in torch)
    config = IQLConfig().training(expectile=0.75, beta=3.0, gamma=0.75)
    rng = np.random.default_rng(3)
    recorded = _recorded(rng)
    outputs = {
        "qf_target_preds": rng.standard_normal(ROWS),
        "vf_preds": rng.standard_normal(ROWS),
        "vf_preds_next": rng.standard_normal(ROWS),
        "qf_preds": rng.standard_normal(ROWS),
        "action_dist_inputs": _dist_inputs(rng, clamped=True),
    }
    if twin_q:
        outputs["qf_twin_preds"] = rng.standard_normal(ROWS)
    # (both sides of the expectile, and of the cap on the exponentiated advantages)
    advantages = outputs["qf_target_preds"] - outputs["vf_preds"]
    assert (advantages > 0).any() and (advantages < 0).any()
    assert (np.exp(3.0 * advantages) > 100.0).any()

    loss = numpy_loss(recorded, outputs, config)
    tensors = _tensors(outputs, grad=True)
    result = iql_torch_loss(
        _tensors(recorded), tensors, config, action_dist_class=TorchSquashedGaussian
    )

    names = {"value": "value_loss", "qf": "qf_loss", "qf_twin": "qf_twin_loss"}
    names["policy"] = "policy_loss"
    assert sorted(names[name] for name in loss.losses) == sorted(result.losses)
    for name, value in loss.losses.items():
        assert value == pytest.approx(float(result.losses[names[name]].detach()), rel=1e-12), name
    expected_keys = list(STAT_KEYS) if twin_q else list(STAT_KEYS[:2])
    assert list(loss.stats) == list(result.stats) == expected_keys
    for key in expected_keys:
        assert loss.stats[key] == pytest.approx(float(result.stats[key].detach()), rel=1e-12), key
    np.testing.assert_allclose(loss.td_error, result.td_error.detach().numpy(), rtol=1e-12)

    gradients = {
        "vf_preds": "value_loss",
        "qf_preds": "qf_loss",
        "action_dist_inputs": "policy_loss",
    }
    if twin_q:
        gradients["qf_twin_preds"] = "qf_twin_loss"
    assert sorted(loss.gradients) == sorted(gradients)
    for key, loss_key in gradients.items():
        np.testing.assert_allclose(
            loss.gradients[key],
            _grad(result.losses[loss_key], tensors[key]),
            rtol=1e-10,
            atol=1e-14,
            err_msg=key,
        )
