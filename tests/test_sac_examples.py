"""SAC through the RLlib launcher (`python -m trainer run SCRIPT`): scripts written against
RLlib's import paths with the settings of RLlib's tuned SAC examples
(`rllib/examples/algorithms/sac/pendulum_sac.py`, `multi_agent_pendulum_sac.py`; the same
settings as `trainer/algorithms/sac/presets.py`): torch's `nn.init` functions as initializers,
`DefaultModelConfig(fusionnet_hiddens=...)`, `lr=None`, an `n_step` range, prioritized replay,
`MultiAgentPendulum`, and RLlib's example-script driver. RLlib's own scripts, which the Ray
wheel does not ship, run in `bench/rllib_examples.py --extra-root`."""

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from cli_in_process import run_cli

pytest.importorskip("torch")  # the scripts import torch's initializers, as RLlib's do

ROOT = Path(__file__).resolve().parents[1]

# The tuned settings RLlib's Pendulum and MountainCar SAC examples share (`args.num_learners`
# scales the rates there; one learner here).
TUNED_SAC = """
    from torch import nn

    from ray.rllib.algorithms.sac.sac import SACConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.examples.utils import (
        add_rllib_example_script_args,
        run_rllib_example_script_experiment,
    )

    def tuned(config, buffer_type, fusion):
        model = dict(
            fcnet_hiddens=[256, 256],
            fcnet_activation="relu",
            fcnet_kernel_initializer=nn.init.xavier_uniform_,
            head_fcnet_hiddens=[],
            head_fcnet_activation=None,
            head_fcnet_kernel_initializer=nn.init.orthogonal_,
            head_fcnet_kernel_initializer_kwargs={"gain": 0.01},
        )
        if fusion:
            model.update(fusionnet_hiddens=[256, 256, 256], fusionnet_activation="relu")
        return (
            config.training(
                lr=None,
                initial_alpha=1.001,
                actor_lr=2e-4,
                critic_lr=8e-4,
                alpha_lr=9e-4,
                target_entropy="auto",
                n_step=(2, 5),
                tau=0.005,
                train_batch_size_per_learner=256,
                target_network_update_freq=1,
                replay_buffer_config={
                    "type": buffer_type,
                    "capacity": 100000,
                    "alpha": 1.0,
                    "beta": 0.0,
                },
                num_steps_sampled_before_learning_starts=256,
            )
            .rl_module(model_config=DefaultModelConfig(**model))
            .reporting(metrics_num_episodes_for_smoothing=5)
        )

    def report(grid):
        result = grid if isinstance(grid, dict) else grid[0].metrics
        learners = {
            module: sorted(stats) for module, stats in result["learners"].items()
            if module != "__all_modules__"
        }
        print("RESULT " + json.dumps({
            "iterations": result["training_iteration"],
            "env_runners": sorted(result["env_runners"]),
            "learners": learners,
        }))
"""

PENDULUM = """
    import json
    {tuned}
    parser = add_rllib_example_script_args(default_timesteps=20000, default_reward=-250.0)
    args = parser.parse_args()
    config = tuned(
        SACConfig().environment("Pendulum-v1"), "PrioritizedEpisodeReplayBuffer", fusion=True
    )
    if __name__ == "__main__":
        report(run_rllib_example_script_experiment(config, args))
"""

MULTI_AGENT_PENDULUM = """
    import json
    {tuned}
    from ray.rllib.examples.envs.classes.multi_agent import MultiAgentPendulum
    from ray.tune.registry import register_env

    parser = add_rllib_example_script_args(default_timesteps=500000)
    parser.set_defaults(num_agents=2)
    args = parser.parse_args()
    register_env("multi_agent_pendulum", lambda cfg: MultiAgentPendulum(config=cfg))
    config = tuned(
        SACConfig().environment(
            "multi_agent_pendulum", env_config={{"num_agents": args.num_agents}}
        ),
        "MultiAgentPrioritizedEpisodeReplayBuffer",
        fusion=False,
    ).multi_agent(
        policy_mapping_fn=lambda aid, *arg, **kw: f"p{{aid}}",
        policies={{f"p{{i}}" for i in range(args.num_agents)}},
    )
    if __name__ == "__main__":
        report(run_rllib_example_script_experiment(config, args))
"""

#: What SAC's learner reports per module (RLlib's SACLearner keys).
SAC_LEARNER_KEYS = {"qf_loss", "policy_loss", "alpha_loss", "alpha_value"}


def _script(tmp_path: Path, template: str) -> Path:
    script = tmp_path / "sac_script.py"
    body = template.format(tuned=textwrap.indent(textwrap.dedent(TUNED_SAC), "    "))
    script.write_text(textwrap.dedent(body))
    return script


def _launch(script: Path, *args: str, timeout: float) -> tuple[subprocess.CompletedProcess, dict]:
    # `python -m trainer run SCRIPT`, in this process (tests/cli_in_process.py: the same
    # `main(argv)` without the interpreter's start and torch's import).
    completed = run_cli("run", str(script), *args, cwd=script.parent, timeout=timeout)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-3000:]
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(lines) == 1, completed.stdout[-2000:]
    return completed, json.loads(lines[0].removeprefix("RESULT "))


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.parametrize("framework", ["torch", "tf2"])
def test_tuned_pendulum_sac_script_trains_two_iterations_through_the_launcher(tmp_path, framework):
    # RLlib's scripts default to torch; "tf2" is the numpy SAC here (with a warning).
    _, result = _launch(
        _script(tmp_path, PENDULUM),
        f"--framework={framework}",
        "--stop-iters=2",
        timeout=240,
    )
    assert result["iterations"] == 2
    assert "episode_return_mean" in result["env_runners"]
    assert SAC_LEARNER_KEYS <= set(result["learners"]["default_policy"])


@pytest.mark.slow
@pytest.mark.cli
def test_tuned_multi_agent_pendulum_sac_script_trains_each_policy(tmp_path):
    _, result = _launch(
        _script(tmp_path, MULTI_AGENT_PENDULUM), "--num-agents=2", "--stop-iters=2", timeout=240
    )
    assert result["iterations"] == 2
    assert set(result["learners"]) == {"p0", "p1"}
    for keys in result["learners"].values():
        assert SAC_LEARNER_KEYS <= set(keys)
