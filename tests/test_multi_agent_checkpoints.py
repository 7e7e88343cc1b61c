"""Multi-agent checkpoints: RLlib's module components inside an Algorithm checkpoint (restore
one module of N), module states loaded at build (`load_state_path`, `modules_to_load`), exact
resume, and modules added and removed at run time."""

import os
from pathlib import Path

import numpy as np
import pytest
from multi_agent_envs import CartPoles

from trainer import PPOConfig
from trainer.algorithms.ppo.module import PolicyModule
from trainer.checkpoints import CheckpointError
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.rl_module import RLModuleSpec

MODULES = "learner_group/learner/rl_module"


def _config(num_agents=2, num_env_runners=0, seed=3, **training):
    return (
        PPOConfig()
        .environment(CartPoles, env_config={"num_agents": num_agents})
        .multi_agent(
            policies={f"p{i}" for i in range(num_agents)},
            policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}",
        )
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=50)
        .training(**{"train_batch_size": 100, "minibatch_size": 50, "num_epochs": 1, **training})
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=seed)
    )


def _same(a, b):
    return set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def trained_checkpoint(tmp_path_factory):
    """A checkpoint of a 3-module run after one iteration, and its weights."""
    path = str(tmp_path_factory.mktemp("ckpt") / "algo")
    algo = _config(num_agents=3).build()
    try:
        algo.train()
        algo.save_to_path(path)
        return path, algo.get_weights()
    finally:
        algo.stop()


def test_the_checkpoint_holds_one_module_checkpoint_per_module(trained_checkpoint):
    path, weights = trained_checkpoint
    for module_id in ("p0", "p1", "p2"):
        module = PolicyModule.from_checkpoint(os.path.join(path, MODULES, module_id))
        assert _same(module.get_state(), weights[module_id])
    multi = MultiRLModule.from_checkpoint(os.path.join(path, MODULES))
    assert sorted(multi.keys()) == ["p0", "p1", "p2"]
    assert all(_same(multi[m].get_state(), weights[m]) for m in weights)


@pytest.mark.slow
def test_restore_one_of_n_modules_with_rllibs_component_path(trained_checkpoint):
    path, weights = trained_checkpoint
    algo = _config(num_agents=3, num_env_runners=1, seed=11).build()
    try:
        fresh = algo.get_weights()
        algo.restore_from_path(os.path.join(path, MODULES, "p0"), component=f"{MODULES}/p0")
        now = algo.get_weights()
        assert _same(now["p0"], weights["p0"])
        assert _same(now["p1"], fresh["p1"]) and _same(now["p2"], fresh["p2"])
        assert not _same(now["p1"], weights["p1"])
        remote = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.get_weights(), local_env_runner=False
        )[0]
        assert _same(remote["p0"], weights["p0"]) and _same(remote["p1"], fresh["p1"])
        assert algo.iteration == 0  # nothing but the module changed
        algo.train()  # and it trains on
    finally:
        algo.stop()


def test_restore_all_modules_component_and_the_checkpoint_root(trained_checkpoint):
    path, weights = trained_checkpoint
    algo = _config(num_agents=3, seed=12).build()
    try:
        algo.restore_from_path(os.path.join(path, MODULES), component=MODULES)
        assert all(_same(algo.get_weights()[m], weights[m]) for m in weights)
    finally:
        algo.stop()
    algo = _config(num_agents=3, seed=13).build()
    try:
        # The Algorithm checkpoint's root with a component: the component's directory in it.
        algo.restore_from_path(path, component=f"{MODULES}/p2")
        assert _same(algo.get_weights()["p2"], weights["p2"])
        assert not _same(algo.get_weights()["p0"], weights["p0"])
    finally:
        algo.stop()


def test_component_restore_errors_name_the_problem(trained_checkpoint):
    path, _ = trained_checkpoint
    algo = _config(num_agents=2, seed=5).build()
    try:
        with pytest.raises(ValueError, match="learner's modules alone"):
            algo.restore_from_path(path, component="env_runner")
        with pytest.raises(CheckpointError, match="hold no module 'p2'"):
            algo.restore_from_path(os.path.join(path, MODULES, "p2"), component=f"{MODULES}/p2")
    finally:
        algo.stop()
    other = _config(num_agents=2, seed=5).rl_module(model_config={"fcnet_hiddens": [8]}).build()
    try:
        before = other.get_weights()
        with pytest.raises(CheckpointError, match="does not fit"):
            other.restore_from_path(os.path.join(path, MODULES, "p0"), component=f"{MODULES}/p0")
        assert _same(other.get_weights()["p0"], before["p0"])
    finally:
        other.stop()


def test_modules_load_at_build_from_an_algorithm_checkpoint(trained_checkpoint):
    """RLlib's restore_1_of_n_agents_from_checkpoint.py: p0 from the checkpoint, the others
    fresh; with RLModuleSpec(load_state_path=) and MultiRLModuleSpec(modules_to_load=)."""
    path, weights = trained_checkpoint
    base = _config(num_agents=3, seed=21)
    fresh_algo = base.build()
    fresh = fresh_algo.get_weights()
    fresh_algo.stop()
    by_spec = base.copy(copy_frozen=False).rl_module(
        rl_module_spec=MultiRLModuleSpec(
            rl_module_specs={
                # A pathlib.Path, as RLlib's restore_1_of_n_agents_from_checkpoint.py builds it.
                "p0": RLModuleSpec(load_state_path=Path(path, *MODULES.split("/"), "p0")),
                "p1": RLModuleSpec(),
                "p2": RLModuleSpec(),
            }
        )
    )
    by_multi = base.copy(copy_frozen=False).rl_module(
        rl_module_spec=MultiRLModuleSpec(
            rl_module_specs={},  # (RLlib 2.60 asks for a dict here)
            load_state_path=os.path.join(path, MODULES),
            modules_to_load={"p0", "p2"},
        )
    )
    for config, loaded in ((by_spec, {"p0"}), (by_multi, {"p0", "p2"})):
        algo = config.build()
        try:
            now = algo.get_weights()
            for module_id in ("p0", "p1", "p2"):
                expected = weights if module_id in loaded else fresh
                assert _same(now[module_id], expected[module_id]), module_id
            runner = algo.env_runner.get_weights()
            assert _same(runner["p0"], weights["p0"])
        finally:
            algo.stop()


def test_a_checkpoint_without_module_directories_still_loads(tmp_path, trained_checkpoint):
    """Checkpoints written before the module directories existed hold the weights in
    learner.msgpack and nothing else: such a checkpoint is made here and loads as before."""
    import json
    import shutil

    from trainer.checkpoints.codec import pack
    from trainer.checkpoints.writer import file_digest

    path, weights = trained_checkpoint
    algo = _config(num_agents=3, seed=8).build()
    try:
        algo.restore_from_path(path)
        learner_state = algo.get_state()["learner"]
    finally:
        algo.stop()
    old = tmp_path / "old"
    shutil.copytree(path, old)
    shutil.rmtree(old / "learner_group")
    (old / "learner.msgpack").write_bytes(pack(learner_state))
    metadata = json.loads((old / "metadata.json").read_text())
    del metadata["module_checkpoints"]
    # A checkpoint of format version 1 (metadata.json not yet sealed with its SHA-256).
    del metadata["self_sha256"]
    metadata["format_version"] = 1
    data = (old / "learner.msgpack").read_bytes()
    metadata["files"]["learner.msgpack"] = {"size": len(data), "sha256": file_digest(data)}
    (old / "metadata.json").write_text(json.dumps(metadata))
    algo = _config(num_agents=3, seed=8).build()
    try:
        algo.restore_from_path(str(old))
        assert all(_same(algo.get_weights()[m], weights[m]) for m in weights)
        assert algo.iteration == 1
    finally:
        algo.stop()


#: Wall-clock measures; every other env_runners metric must match exactly.
_CLOCK_KEYS = ("episode_duration_sec_mean", "num_env_steps_sampled_lifetime_throughput")


def _runner_metrics(result):
    return {k: v for k, v in result["env_runners"].items() if k not in _CLOCK_KEYS}


@pytest.mark.slow
@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_a_restored_multi_agent_run_continues_exactly(tmp_path, num_env_runners):
    """Episodes run across the save (fragments of 40 steps, CartPole episodes are longer):
    the restored algorithm continues them, with the same weights and metrics as a run that
    was never interrupted."""
    config = _config(
        num_env_runners=num_env_runners, seed=17, train_batch_size=160, minibatch_size=80
    ).env_runners(num_envs_per_env_runner=2, rollout_fragment_length=40)
    straight = config.build()
    try:
        straight_results = [straight.train() for _ in range(4)]
        straight_weights = straight.get_weights()
    finally:
        straight.stop()
    first = config.build()
    try:
        for _ in range(2):
            first.train()
        path = first.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        first.stop()
    resumed = config.build()
    try:
        resumed.restore_from_path(path)
        results = [resumed.train() for _ in range(2)]
        weights = resumed.get_weights()
    finally:
        resumed.stop()
    for module_id in ("p0", "p1"):
        assert _same(weights[module_id], straight_weights[module_id]), module_id
    assert [_runner_metrics(r) for r in results] == [
        _runner_metrics(r) for r in straight_results[2:]
    ]
    assert [r["learners"] for r in results] == [r["learners"] for r in straight_results[2:]]


def test_the_sampling_state_survives_a_checkpoint_of_the_runner(tmp_path):
    """The runner's own state: episodes under way come back with their steps."""
    from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner

    config = _config(seed=4).env_runners(num_envs_per_env_runner=2)
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    runner.sample(num_timesteps=30)
    state = runner.get_state()
    assert not state["sampling"]["needs_reset"]
    assert len(state["sampling"]["sub_envs"]) == 2 and not state["sampling"]["uncaptured"]
    after_straight = runner.sample(num_timesteps=30)
    other = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    other.set_state(state)
    after_restored = other.sample(num_timesteps=30)
    # The episodes under way keep their ids (new ones get fresh random ids).
    running = {episode["id_"] for episode in state["sampling"]["episodes"]}
    assert len(after_restored) == len(after_straight)
    assert [e.id_ for e in after_restored if e.id_ in running] == [
        e.id_ for e in after_straight if e.id_ in running
    ]
    assert any(e.id_ in running for e in after_restored)
    for a, b in zip(after_restored, after_straight, strict=True):
        assert a.env_t_started == b.env_t_started and a.env_t == b.env_t
        for agent_id in a.agent_ids:
            assert np.array_equal(
                a.get_observations(agent_ids=[agent_id])[agent_id],
                b.get_observations(agent_ids=[agent_id])[agent_id],
            )
    runner.stop()
    other.stop()


# -- modules added and removed at run time (self-play) ------------------------------------------


def _self_play_config(num_env_runners=1):
    """Two agents, one module "main" to start with (both agents play it)."""
    return (
        PPOConfig()
        .environment(CartPoles, env_config={"num_agents": 2})
        .multi_agent(policies={"main"}, policy_mapping_fn=lambda agent_id, episode, **kw: "main")
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=50)
        .training(train_batch_size=100, minibatch_size=50, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=6)
    )


def _opponent(agent_id, episode, **kwargs):
    return "main" if agent_id == 0 else "main_v1"


@pytest.mark.slow
def test_add_a_module_mid_training_and_train_it(tmp_path):
    algo = _self_play_config(num_env_runners=1).build()
    try:
        algo.train()
        main = algo.get_module("main")
        spec = algo.add_module(
            "main_v1",
            RLModuleSpec.from_module(main),
            new_agent_to_module_mapping_fn=_opponent,
            new_should_module_be_updated=["main", "main_v1"],
        )
        assert set(spec.rl_module_specs) == {"main", "main_v1"}
        assert set(algo.config.policies) == {"main", "main_v1"}
        assert algo.config.policy_mapping_fn is _opponent
        # Every EnvRunner has the module, with the learner's (fresh) weights.
        new = algo.get_weights(["main_v1"])["main_v1"]
        for weights in algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.get_weights(["main_v1"])
        ):
            assert _same(weights["main_v1"], new)
        assert algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.config.policy_mapping_fn(1, None), local_env_runner=False
        ) == ["main_v1"]
        results = [algo.train() for _ in range(3)]
        # The new module is sampled (agent 1 plays it in new episodes) and trained.
        assert results[-1]["env_runners"]["module_episode_returns_mean"]["main_v1"] > 0
        assert "main_v1" in results[-1]["learners"]
        assert not _same(algo.get_weights()["main_v1"], new)
        # A checkpoint holds the module; a new Algorithm built from its config.json (the
        # mapping function above has an import path) has it and its weights.
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        weights = algo.get_weights()
    finally:
        algo.stop()
    from trainer.algorithms.algorithm import Algorithm

    restored = Algorithm.from_checkpoint(path)
    try:
        assert set(restored.config.policies) == {"main", "main_v1"}
        assert all(_same(restored.get_weights()[m], weights[m]) for m in weights)
        restored.train()
    finally:
        restored.stop()


@pytest.mark.slow
def test_remove_a_module_everywhere():
    config = _self_play_config(num_env_runners=1).multi_agent(
        policies={"main", "old"}, policy_mapping_fn=_old_opponent
    )
    algo = config.build()
    try:
        algo.train()
        spec = algo.remove_module(
            "old",
            new_agent_to_module_mapping_fn=lambda agent_id, episode, **kw: "main",
            new_should_module_be_updated=["main"],
        )
        assert set(spec.rl_module_specs) == {"main"}
        assert set(algo.config.policies) == {"main"}
        assert set(algo.get_weights()) == {"main"}
        assert algo.env_runner_group.foreach_env_runner(lambda r: sorted(r.module.keys())) == [
            ["main"],
            ["main"],
        ]
        result = algo.train()
        # No step of "old" since (its smoothed returns stay in the metrics' window, as RLlib's).
        old_steps = result["env_runners"]["num_module_steps_sampled"].get("old", 0)
        assert old_steps == 0 or np.isnan(old_steps)
        assert result["env_runners"]["num_module_steps_sampled"]["main"] > 0
        assert "main" in result["learners"] and set(algo.learner.learners) == {"main"}
    finally:
        algo.stop()


def _old_opponent(agent_id, episode, **kwargs):
    return "main" if agent_id == 0 else "old"


def test_add_module_refusals_change_nothing():
    algo = _self_play_config(num_env_runners=0).build()
    try:
        spec = RLModuleSpec.from_module(algo.get_module("main"))
        with pytest.raises(ValueError, match="exists already"):
            algo.add_module("main", spec)
        with pytest.raises(ValueError, match="must then hold the module"):
            algo.add_module("x", spec, add_to_env_runners=False)  # the learners would send it
        with pytest.raises(ValueError, match="only module"):
            algo.remove_module("main")
        with pytest.raises(ValueError, match="no such module"):
            algo.remove_module("nope")
        assert set(algo.config.policies) == {"main"}
        assert list(algo.env_runner.module.keys()) == ["main"]
    finally:
        algo.stop()
    single = PPOConfig().environment("CartPole-v1").build()
    try:
        with pytest.raises(RuntimeError, match="single-agent"):
            single.add_module("p1", RLModuleSpec())
    finally:
        single.stop()


def test_a_component_symlinked_out_of_the_checkpoint_is_not_followed(tmp_path, trained_checkpoint):
    import shutil

    path, _ = trained_checkpoint
    planted = tmp_path / "planted"
    shutil.copytree(path, planted)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(planted / "learner_group"), str(elsewhere))
    (planted / "learner_group").symlink_to(elsewhere, target_is_directory=True)
    algo = _config(num_agents=3, seed=9).build()
    try:
        with pytest.raises(CheckpointError, match="not a module checkpoint"):
            algo.restore_from_path(str(planted), component=f"{MODULES}/p0")
        with pytest.raises(ValueError, match="module"):
            algo.restore_from_path(str(planted), component=f"{MODULES}/..")
    finally:
        algo.stop()


def test_module_and_policy_specs_are_stored_as_plain_config_data():
    import json

    import gymnasium as gym

    from trainer.algorithms.algorithm import Algorithm
    from trainer.algorithms.algorithm_config import AlgorithmConfig
    from trainer.checkpoints.config_data import config_from_data, config_to_data
    from trainer.core.policy_spec import PolicySpec

    box = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    config = (
        PPOConfig()
        .environment(CartPoles, env_config={"num_agents": 2})
        .multi_agent(
            policies={"p0": PolicySpec(observation_space=box), "p1": PolicySpec()},
            policy_mapping_fn=_old_opponent,
            policies_to_train=["p0"],
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "p0": RLModuleSpec(model_config={"fcnet_hiddens": [8]}),
                    "p1": RLModuleSpec(module_class=PolicyModule),
                },
                modules_to_load={"p0"},
                load_state_path="/somewhere",
            )
        )
    )
    data = json.loads(json.dumps(config_to_data(config)))
    assert data["unstored"] == []
    _, rebuilt = config_from_data(data, AlgorithmConfig, Algorithm)
    assert rebuilt.policies == config.policies
    spec = rebuilt.rl_module_spec
    assert spec.rl_module_specs["p0"].model_config == {"fcnet_hiddens": [8]}
    assert spec.rl_module_specs["p1"].module_class is PolicyModule
    assert spec.modules_to_load == {"p0"} and spec.load_state_path == "/somewhere"
    assert rebuilt.policy_mapping_fn is _old_opponent


@pytest.mark.slow
@pytest.mark.ray
def test_add_module_and_exact_resume_on_the_ray_backend(tmp_path, ray_session):
    """The same on EnvRunners that are Ray actors: the module reaches them, and a restored run
    continues exactly. On the session's Ray (`ray_session`), shut down before a later test that
    does not use it (a Ray left connected would turn later tests' named objects into Ray
    actors)."""
    config = _self_play_config(num_env_runners=1).env_runners(backend="ray")
    algo = config.build()
    try:
        algo.train()
        algo.add_module(
            "main_v1",
            RLModuleSpec.from_module(algo.get_module("main")),
            new_agent_to_module_mapping_fn=_opponent,
        )
        assert algo.env_runner_group.foreach_env_runner(
            lambda runner: sorted(runner.module.keys()), local_env_runner=False
        ) == [["main", "main_v1"]]
        algo.train()
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        straight = [algo.train() for _ in range(2)]
        weights = algo.get_weights()
    finally:
        algo.stop()
    from trainer.algorithms.algorithm import Algorithm

    resumed = Algorithm.from_checkpoint(path)
    try:
        again = [resumed.train() for _ in range(2)]
        assert all(_same(resumed.get_weights()[m], weights[m]) for m in weights)
        assert [_runner_metrics(r) for r in again] == [_runner_metrics(r) for r in straight]
    finally:
        resumed.stop()


def test_a_run_with_a_module_loaded_from_a_checkpoint_checkpoints_without_pickle(
    tmp_path, trained_checkpoint
):
    """The spec with its load_state_path (a Path) is stored in config.json."""
    from trainer.algorithms.algorithm import Algorithm

    path, weights = trained_checkpoint
    config = (
        _config(num_agents=3, seed=2)
        .multi_agent(policy_mapping_fn=_three_policies)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "p0": RLModuleSpec(load_state_path=Path(path, *MODULES.split("/"), "p0")),
                    "p1": RLModuleSpec(),
                    "p2": RLModuleSpec(),
                }
            )
        )
    )
    algo = config.build()
    try:
        second = algo.save_to_path(str(tmp_path / "second"))
        saved = algo.get_weights()
    finally:
        algo.stop()
    rebuilt = Algorithm.from_checkpoint(second)
    try:
        assert all(_same(rebuilt.get_weights()[m], saved[m]) for m in saved)
        assert _same(rebuilt.get_weights()["p0"], weights["p0"])
    finally:
        rebuilt.stop()


def _three_policies(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def test_a_dqn_module_loaded_at_build_starts_its_target_network_from_it(tmp_path):
    from trainer import DQNConfig

    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
    )
    first = config.build()
    try:
        module_path = first.get_module().save_to_path(str(tmp_path / "module"))
        weights = first.get_weights()
    finally:
        first.stop()
    loaded = (
        config.copy(copy_frozen=False)
        .rl_module(rl_module_spec=RLModuleSpec(load_state_path=module_path))
        .debugging(seed=2)
        .build()
    )
    try:
        assert _same(loaded.get_weights(), weights)
        assert _same(loaded.learner.target.get_weights(), weights)
    finally:
        loaded.stop()


_RESUME_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[3])
import numpy as np
from trainer.algorithms.algorithm import Algorithm

path, out = sys.argv[1], sys.argv[2]
algo = Algorithm.from_checkpoint(path)
results = [algo.train() for _ in range(2)]
np.savez(out + ".npz", **{f"{m}/{k}": v for m, w in algo.get_weights().items() for k, v in w.items()})
with open(out + ".json", "w") as f:
    json.dump([{k: v for k, v in r["env_runners"].items()
                if k not in ("episode_duration_sec_mean",
                             "num_env_steps_sampled_lifetime_throughput")}
               for r in results], f)
algo.stop()
"""


@pytest.mark.slow
def test_a_multi_agent_run_resumes_exactly_in_a_fresh_process(tmp_path):
    import json
    import subprocess
    import sys

    config = (
        _config(num_env_runners=1, seed=23, train_batch_size=160, minibatch_size=80)
        .multi_agent(policy_mapping_fn=_three_policies)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=40)
    )
    straight = config.build()
    try:
        results = [straight.train() for _ in range(4)]
        weights = straight.get_weights()
    finally:
        straight.stop()
    first = config.build()
    try:
        first.train()
        first.train()
        path = first.save_to_path(str(tmp_path / "checkpoint"))
    finally:
        first.stop()
    script = tmp_path / "resume.py"
    script.write_text(_RESUME_SCRIPT)
    out = str(tmp_path / "resumed")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, str(script), path, out, tests_dir], check=True, timeout=120)
    resumed = np.load(out + ".npz")
    for module_id, module_weights in weights.items():
        for name, value in module_weights.items():
            np.testing.assert_array_equal(resumed[f"{module_id}/{name}"], value)
    with open(out + ".json") as f:
        assert json.load(f) == [_runner_metrics(r) for r in results[2:]]


def test_an_altered_module_checkpoint_is_refused(tmp_path, trained_checkpoint):
    import shutil

    path, _ = trained_checkpoint
    copy = tmp_path / "altered"
    shutil.copytree(path, copy)
    state_file = copy / MODULES / "p0" / "module_state.msgpack"
    data = bytearray(state_file.read_bytes())
    data[-1] ^= 0xFF
    state_file.write_bytes(bytes(data))
    algo = _config(num_agents=3, seed=31).build()
    try:
        before = algo.get_weights()
        with pytest.raises(CheckpointError, match="altered"):
            algo.restore_from_path(copy / MODULES / "p0", component=f"{MODULES}/p0")
        assert all(_same(algo.get_weights()[m], before[m]) for m in before)
        # The whole checkpoint reads its weights from there too: refused, nothing changes.
        with pytest.raises(CheckpointError, match="altered"):
            algo.restore_from_path(str(copy))
        assert all(_same(algo.get_weights()[m], before[m]) for m in before)
        # A module checkpoint swapped for another (each consistent in itself) is refused too.
        shutil.rmtree(copy / MODULES / "p0")
        shutil.copytree(copy / MODULES / "p1", copy / MODULES / "p0")
        with pytest.raises(CheckpointError, match="module checkpoint 'p0' was altered"):
            algo.restore_from_path(str(copy))
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_restarted_env_runner_has_the_added_module():
    from trainer.testing import kill_env_runner

    config = _self_play_config(num_env_runners=2).fault_tolerance(
        delay_between_env_runner_restarts_s=0
    )
    algo = config.build()
    try:
        algo.train()
        algo.add_module(
            "main_v1",
            RLModuleSpec.from_module(algo.get_module("main")),
            new_agent_to_module_mapping_fn=_opponent,
        )
        algo.train()
        kill_env_runner(algo, 1)
        algo.train()
        result = algo.train()
        assert result["fault_tolerance"]["num_remote_worker_restarts"] == 1
        group = algo.env_runner_group
        assert (
            group.foreach_env_runner(
                lambda runner: (
                    sorted(runner.module.keys()),
                    runner.config.policy_mapping_fn(1, None),
                ),
                local_env_runner=False,
            )
            == [(["main", "main_v1"], "main_v1")] * 2
        )
        weights = algo.get_weights()
        for runner_weights in group.foreach_env_runner(lambda runner: runner.get_weights()):
            assert all(_same(runner_weights[m], weights[m]) for m in weights)
    finally:
        algo.stop()


@pytest.mark.slow
def test_agents_acting_in_turns_resume_exactly_counting_agent_steps():
    """Episodes cut mid-turn (an agent's reward waiting for its next step) and agent-step
    counting: the restored runner's state goes on as the uninterrupted one."""
    from multi_agent_envs import TakeTurns

    config = (
        PPOConfig()
        .environment(TakeTurns, env_config={"length": 31})
        .multi_agent(
            policies={"pa", "pb"},
            policy_mapping_fn=_turns_mapping,
            count_steps_by="agent_steps",
        )
        .env_runners(num_env_runners=1, num_envs_per_env_runner=2, rollout_fragment_length=7)
        .training(train_batch_size=42, minibatch_size=21, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=5)
    )
    algo = config.build()
    try:
        algo.train()
        state = algo.get_state()
        straight = [algo.train() for _ in range(3)]
        weights = algo.get_weights()
        algo.set_state(state)
        again = [algo.train() for _ in range(3)]
        assert all(_same(algo.get_weights()[m], weights[m]) for m in weights)
    finally:
        algo.stop()
    assert [_runner_metrics(r) for r in again] == [_runner_metrics(r) for r in straight]
    assert [r["learners"] for r in again] == [r["learners"] for r in straight]


def _turns_mapping(agent_id, episode, **kwargs):
    return f"p{agent_id}"


class _EnvWithALock(CartPoles):
    """An env holding something that is not data: its state cannot be captured."""

    def __init__(self, config=None):
        import threading

        super().__init__(config)
        self.lock = threading.Lock()


def test_an_env_that_cannot_be_captured_restarts_its_episode_with_a_warning(caplog):
    from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner

    config = _config(seed=4).environment(_EnvWithALock, env_config={"num_agents": 2})
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    runner.sample(num_timesteps=20)
    state = runner.get_state()
    assert state["sampling"]["uncaptured"] == {"0": "_EnvWithALock.lock holds a _thread.lock"}
    other = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    with caplog.at_level("WARNING", logger="trainer"):
        other.set_state(state)
    assert "its episode restarts" in caplog.text
    episodes = other.sample(num_timesteps=20)
    assert episodes and all(e.env_t_started == 0 for e in episodes)
    runner.stop()
    other.stop()


def test_a_learners_policies_to_train_set_through_foreach_learner_take_effect():
    """As RLlib's Learner, each learner holds an unfrozen copy of the config: RLlib's
    league-based self-play callback sets `learner.config.multi_agent(policies_to_train=...)`
    through `learner_group.foreach_learner`, and the next update trains those modules; the
    algorithm's own config stays frozen and unchanged."""
    config = _self_play_config(num_env_runners=0).multi_agent(
        policies={"main", "old"}, policy_mapping_fn=_old_opponent, policies_to_train=["main"]
    )
    algo = config.build()
    try:
        algo.train()
        old = algo.get_weights(["old"])["old"]
        algo.train()
        assert _same(algo.get_weights(["old"])["old"], old)  # not trained
        algo.learner_group.foreach_learner(
            lambda learner: learner.config.multi_agent(policies_to_train={"main", "old"}),
            timeout_seconds=0.0,
        )
        result = algo.train()
        assert "old" in result["learners"]
        assert not _same(algo.get_weights(["old"])["old"], old)
        assert algo.config.is_frozen and list(algo.config.policies_to_train) == ["main"]
    finally:
        algo.stop()
