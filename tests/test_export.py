"""Exported policies (`python -m trainer export`, `Algorithm.export_policy_model`,
`export_model`) from real checkpoints, written by training (through an EnvRunner process for
the numpy modules, DQN and SAC; the torch PPO modules sample in this process, which spares each
a worker that imports torch): the ONNX graph (in onnxruntime) and the numpy export (its
standalone reader) compute the module's own outputs, a MeanStdFilter folded in; each solves
CartPole in a process that imports neither this package nor torch; bad input is refused with a
message naming the setting."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers import small_ppo

from trainer import DQNConfig, PPOConfig, SACConfig
from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.ppo.presets import PRESETS
from trainer.algorithms.presets import mean_std_filter
from trainer.cli import main
from trainer.export import ExportError

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

_SMALL = {"fcnet_hiddens": [16, 16]}


def _ppo_numpy():
    return small_ppo(1).rl_module(model_config=_SMALL)


def _ppo_torch():
    return small_ppo(0).framework("torch").rl_module(model_config=_SMALL)


def _ppo_lstm():
    return (
        small_ppo(0)
        .framework("torch")
        .rl_module(model_config={"fcnet_hiddens": [16], "use_lstm": True, "lstm_cell_size": 8})
    )


def _ppo_pendulum_torch():  # a Box action space, log-stds clipped as the torch head clips them
    return small_ppo(0, env="Pendulum-v1").framework("torch").rl_module(model_config=_SMALL)


def _dqn():
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(num_steps_sampled_before_learning_starts=50, train_batch_size=32)
        .rl_module(model_config=_SMALL)
        .reporting(min_sample_timesteps_per_iteration=100)
    )


def _sac():
    return (
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(num_env_runners=1)
        .training(num_steps_sampled_before_learning_starts=50, train_batch_size=32)
        .rl_module(model_config=_SMALL)
        .reporting(min_sample_timesteps_per_iteration=100)
    )


def _filtered():
    return _ppo_numpy().env_runners(env_to_module_connector=mean_std_filter)


CASES = {
    "ppo_numpy": _ppo_numpy,
    "ppo_torch": _ppo_torch,
    "ppo_lstm": _ppo_lstm,
    "ppo_box_torch": _ppo_pendulum_torch,
    "dqn": _dqn,
    "sac": _sac,
    "mean_std_filter": _filtered,
}


def _checkpoint(tmp_path_factory, make_config) -> str:
    """A checkpoint of one training iteration of `make_config()` (one EnvRunner process, or
    none for the torch PPO modules)."""
    path = str(tmp_path_factory.mktemp("checkpoint"))
    with make_config().debugging(seed=3).build() as algo:
        algo.train()
        algo.save_to_path(path)
    return path


def _observations(algo, n=32):
    space = algo.env_runner_group.local_env_runner.env_spaces[0]
    rng = np.random.default_rng(0)
    low = np.maximum(space.low, -3.0)
    high = np.minimum(space.high, 3.0)
    return rng.uniform(low, high, size=(n, *space.shape)).astype(np.float32)


def _module_outputs(algo, raw_obs):
    """The module's own distribution inputs for raw observations (filtered as the EnvRunner
    filters them)."""
    runner = algo.env_runner_group.local_env_runner
    obs = np.stack([runner.module_observation(o) for o in raw_obs]).astype(np.float32)
    module = algo.get_module()
    if hasattr(module, "dist_inputs"):
        return module.dist_inputs(obs)
    import torch

    with torch.no_grad():
        return module.forward_inference({"obs": torch.from_numpy(obs)})[
            "action_dist_inputs"
        ].numpy()


def _load_reader(folder):
    spec = importlib.util.spec_from_file_location(
        f"policy_reader_{abs(hash(folder))}", os.path.join(folder, "policy_reader.py")
    )
    reader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reader)
    return reader.load(folder)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c != "ppo_lstm"])
def test_exports_compute_the_modules_outputs(tmp_path, tmp_path_factory, case):
    path = _checkpoint(tmp_path_factory, CASES[case])
    algo = Algorithm.from_checkpoint(path)
    try:
        raw = _observations(algo)
        if case == "mean_std_filter":  # observations the filter moves far from themselves
            raw = raw * 5.0 + 2.0
        expected = _module_outputs(algo, raw)
        greedy = np.array([algo.compute_single_action(o, explore=False) for o in raw])
        algo.export_policy_model(str(tmp_path / "onnx"), onnx=17)
        algo.export_policy_model(str(tmp_path / "numpy"))
    finally:
        algo.stop()
    session = ort.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    dist_inputs, action = session.run(["action_dist_inputs", "greedy_action"], {"obs": raw})
    np.testing.assert_allclose(dist_inputs, expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(action, greedy.reshape(action.shape), atol=1e-5, rtol=0)
    policy = _load_reader(str(tmp_path / "numpy"))
    out = policy.forward(raw)
    np.testing.assert_allclose(out["action_dist_inputs"], expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["greedy_action"], greedy.reshape(action.shape), atol=1e-5)
    meta = session.get_modelmeta().custom_metadata_map
    spec = json.loads(meta["localrl_policy"])
    assert json.loads(meta["observation_space"])["type"] == "Box"
    assert json.loads(meta["action_space"])["type"] in ("Box", "Discrete")
    assert (spec["filter"] is not None) == (case == "mean_std_filter")


@pytest.mark.slow
def test_lstm_export_carries_the_state_as_the_module_does(tmp_path, tmp_path_factory):
    import torch

    path = _checkpoint(tmp_path_factory, _ppo_lstm)
    algo = Algorithm.from_checkpoint(path)
    try:
        module = algo.get_module()
        raw = _observations(algo, 8)
        algo.export_policy_model(str(tmp_path / "onnx"), onnx=17)
        algo.export_policy_model(str(tmp_path / "numpy"))
    finally:
        algo.stop()
    session = ort.InferenceSession(str(tmp_path / "onnx" / "model.onnx"))
    policy = _load_reader(str(tmp_path / "numpy"))
    h = c = np.zeros((8, 8), np.float32)
    np_state = None
    # RLlib's layout without vf_share_layers (the default): {"actor": {h, c}, "critic": ...};
    # the export carries the actor's state (the critic's acts on no action).
    initial = module.get_initial_state()
    assert set(initial) == {"actor", "critic"}
    torch_state = {
        part: {key: torch.zeros(8, 1, 8) for key in ("h", "c")} for part in ("actor", "critic")
    }
    for step in range(3):  # three steps, each from the state the previous one returned
        obs = raw + step
        with torch.no_grad():
            out = module.forward_inference(
                {"obs": torch.from_numpy(obs[:, None]), "state_in": torch_state}
            )
        expected = out["action_dist_inputs"][:, 0].numpy()
        torch_state = out["state_out"]
        dist_inputs, action, h, c = session.run(
            None, {"obs": obs, "state_in_h": h, "state_in_c": c}
        )
        np.testing.assert_allclose(dist_inputs, expected, atol=1e-5, rtol=0)
        np.testing.assert_allclose(h, torch_state["actor"]["h"][:, 0].numpy(), atol=1e-5, rtol=0)
        np.testing.assert_allclose(c, torch_state["actor"]["c"][:, 0].numpy(), atol=1e-5, rtol=0)
        np.testing.assert_array_equal(action, expected.argmax(axis=1))
        numpy_out = policy.forward(obs, np_state)
        np_state = numpy_out["state_out"]
        np.testing.assert_allclose(numpy_out["action_dist_inputs"], expected, atol=1e-5, rtol=0)


_ONNX_SCRIPT = textwrap.dedent("""
    import sys
    import gymnasium as gym
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(sys.argv[1])
    env = gym.make("CartPole-v1")
    returns = []
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            action = session.run(["greedy_action"], {"obs": obs[None].astype(np.float32)})[0][0]
            obs, reward, terminated, truncated, _ = env.step(int(action))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    assert "trainer" not in sys.modules and "torch" not in sys.modules, sorted(sys.modules)
    print(sum(returns) / len(returns))
""")

_NUMPY_SCRIPT = textwrap.dedent("""
    import sys
    import gymnasium as gym

    sys.path.insert(0, sys.argv[1])
    from policy_reader import load

    policy = load(sys.argv[1])
    env = gym.make("CartPole-v1")
    returns = []
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy.greedy_action(obs))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    assert "trainer" not in sys.modules and "torch" not in sys.modules, sorted(sys.modules)
    assert "onnxruntime" not in sys.modules
    print(sum(returns) / len(returns))
""")


@pytest.fixture(scope="module")
def solved_cartpole(tmp_path_factory):
    """A PPO CartPole checkpoint trained with the main job's preset until a greedy policy
    solves it."""
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=1)
    PRESETS["CartPole-v1"].apply(config)
    config.evaluation(evaluation_num_env_runners=0, evaluation_parallel_to_training=False)
    config.evaluation(evaluation_duration=3).debugging(seed=0)
    path = str(tmp_path_factory.mktemp("solved"))
    with config.build() as algo:
        for _ in range(60):
            result = algo.train()
            evaluated = result["evaluation"]["env_runners"].get("episode_return_mean", 0)
            if evaluated >= 500 and result["env_runners"]["episode_return_mean"] >= 450:
                break
        algo.save_to_path(path)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["onnx", "numpy"])
def test_exported_policy_solves_cartpole_without_this_package(tmp_path, solved_cartpole, fmt):
    out = tmp_path / fmt
    assert main(["export", solved_cartpole, "--format", fmt, "--output", str(out)]) == 0
    script = tmp_path / "run.py"
    script.write_text(_ONNX_SCRIPT if fmt == "onnx" else _NUMPY_SCRIPT)
    target = str(out / "model.onnx") if fmt == "onnx" else str(out)
    done = subprocess.run(
        [sys.executable, str(script), target], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) >= 475


def test_export_model_writes_each_format(tmp_path, solved_cartpole):
    algo = Algorithm.from_checkpoint(solved_cartpole)
    try:
        exported = algo.export_model(["onnx", "model"], str(tmp_path))
        with pytest.raises(ValueError, match=r"\['h5'\] not known here; allowed: \['onnx'"):
            algo.export_model("h5", str(tmp_path))
    finally:
        algo.stop()
    assert exported == {"onnx": str(tmp_path / "onnx"), "model": str(tmp_path / "model")}
    assert os.path.isfile(tmp_path / "onnx" / "model.onnx")
    assert os.path.isfile(tmp_path / "model" / "policy_reader.py")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--format", "tflite"], "argument --format: 'tflite': allowed formats are onnx, numpy"),
        (
            ["--module", "pi_2"],
            "argument --module: module_id='pi_2': no such module; the algorithm's modules are "
            "['default_policy']",
        ),
        (["--opset", "7"], "argument --opset: onnx=7: the ONNX opset must be an int from 11"),
    ],
)
def test_bad_flags_name_the_setting_the_value_and_what_is_allowed(
    tmp_path, capsys, solved_cartpole, flags, message
):
    with pytest.raises(SystemExit) as exit_:
        main(["export", solved_cartpole, "--output", str(tmp_path / "out"), *flags])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out")


def test_a_module_the_export_cannot_express_is_refused(tmp_path):
    config = (
        small_ppo()
        .framework("torch")
        .rl_module(
            model_config={"use_lstm": True, "lstm_cell_size": 4, "lstm_use_prev_action": True}
        )
    )
    with config.build() as algo:
        with pytest.raises(ExportError, match=r"lstm_use_prev_action.*allowed: the default PPO"):
            algo.export_policy_model(str(tmp_path / "out"), onnx=17)
    with small_ppo(env="FrozenLake-v1").build() as algo:
        with pytest.raises(
            ExportError, match=r"observation_space=Discrete\(16\): the export takes Box"
        ):
            algo.export_policy_model(str(tmp_path / "out"))
    with pytest.raises(ExportError, match=r"format='xml': allowed formats are 'onnx', 'numpy'"):
        from trainer.export import export_policy

        export_policy(None, str(tmp_path / "out"), format="xml")
    assert not os.path.exists(tmp_path / "out")


class _ONNXWrapper:
    """RLlib's inference example's wrapper (an `nn.Module` whose `forward` calls the RLModule's
    `forward_inference` and returns the logits), made where torch is imported."""

    @staticmethod
    def of(rl_module):
        import torch

        class Wrapper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rl_module = rl_module

            def forward(self, obs):
                return self.rl_module.forward_inference({"obs": obs})["action_dist_inputs"]

        return Wrapper()


@pytest.mark.slow
def test_torch_onnx_export_of_a_numpy_module_records_its_torch_twin(tmp_path):
    """As RLlib's policy_inference_after_training.py with --use-onnx-for-inference does: a
    wrapper around a (numpy) PPO module goes through `torch.onnx.export(..., dynamo=True)`;
    the trace runs the module's torch twin, and the graph in onnxruntime answers what the
    module answers, for a batch of another size too. A user's subclass of the module (which
    may compute otherwise) has no twin and is refused, naming framework('torch')."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    from trainer.errors import UnsupportedCall

    algo = small_ppo().env_runners(num_env_runners=0).build()
    try:
        algo.train()
        module = algo.get_module()
    finally:
        algo.stop()
    path = str(tmp_path / "policy.onnx")
    torch.onnx.export(
        _ONNXWrapper.of(module),
        (torch.zeros(1, 4),),
        f=path,
        input_names=["obs"],
        output_names=["action_dist_inputs"],
        dynamic_shapes={"obs": {0: torch.export.Dim("batch")}},
        dynamo=True,
    )
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    (logits,) = session.run(["action_dist_inputs"], {"obs": obs})
    expected = module.forward_inference({"obs": obs})["action_dist_inputs"]
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)

    module.__class__ = type("UsersPolicyModule", (type(module),), {})
    with pytest.raises(Exception) as refused:  # torch's export error, ours its cause
        torch.onnx.export(_ONNXWrapper.of(module), (torch.zeros(1, 4),), dynamo=True)
    causes = [refused.value]
    while causes[-1].__cause__ is not None:
        causes.append(causes[-1].__cause__)
    refusal = next(c for c in causes if isinstance(c, UnsupportedCall))
    assert "framework('torch')" in str(refusal)
