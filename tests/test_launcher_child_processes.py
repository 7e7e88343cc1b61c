"""The processes a launched script starts: a Python process that imports `ray.rllib` gets this
project's (through the launcher's sitecustomize), and so do the worker processes of a real Ray
that one of them starts, as RLlib's Ray Serve example needs: its `serve run` process loads the
trained module in a Ray worker with `RLModule.from_checkpoint`. Also Ray's host:port helpers
that RLlib's examples import."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from test_launcher import REPO, needs_installed_ray, run_script

from trainer import launcher
from trainer.launcher import ray_network
from trainer.launcher.finder import STARTUP_DIR

pytestmark = pytest.mark.cli

#: What a child process reports: where its RLlib comes from, and whether its Ray is installed.
CHILD = """
import json, os, sys
import ray
from ray.rllib.core.rl_module.rl_module import RLModule
print(json.dumps({
    "rl_module": RLModule.__module__,
    "installed_ray": ray.__file__ is not None,
    "user_sitecustomize": os.environ.get("USER_SITECUSTOMIZE_RAN"),
    # Left on sys.meta_path once done: a finder taken out while another thread walks the list
    # makes that thread skip the next one.
    "finder_kept": any(type(f).__name__ == "RLlibOnFirstImport" for f in sys.meta_path),
}))
"""


@pytest.mark.slow
@needs_installed_ray
def test_a_python_process_the_script_starts_imports_this_projects_rllib(tmp_path):
    """The script's child imports the installed Ray and then `ray.rllib` without importing
    `trainer`: it gets this project's RLlib on the installed Ray, and a sitecustomize of the
    user's, hidden by the launcher's, still runs."""
    user_site = tmp_path / "user_site"
    user_site.mkdir()
    (user_site / "sitecustomize.py").write_text(
        "import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = 'yes'\n"
    )
    (tmp_path / "child.py").write_text(CHILD)
    result = run_script(
        tmp_path,
        """
        import subprocess, sys
        from ray.rllib.algorithms.ppo import PPOConfig  # the script's own, on the stand-in
        child = subprocess.run([sys.executable, "child.py"], capture_output=True, text=True)
        print(child.stdout, child.stderr, file=sys.stderr)
        print(child.stdout.strip().splitlines()[-1])
        """,
        environment={"PYTHONPATH": os.pathsep.join([str(REPO), str(user_site)])},
        in_subprocess=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {
        "rl_module": "trainer.core.rl_module",
        "installed_ray": True,
        "user_sitecustomize": "yes",
        "finder_kept": True,
    }


@pytest.mark.slow
@pytest.mark.ray
@needs_installed_ray
@pytest.mark.timeout(240)
def test_the_ray_workers_of_a_process_the_script_starts_load_its_checkpoint(tmp_path):
    """As RLlib's Ray Serve example does: the script trains and saves; a process it starts
    starts a real Ray, whose worker loads the module with RLlib's `RLModule.from_checkpoint`
    and answers the script's greedy action."""
    (tmp_path / "serving.py").write_text(
        textwrap.dedent(
            """
            import json, sys
            import numpy as np
            import ray

            ray.init(address="local", num_cpus=1, include_dashboard=False)

            @ray.remote
            def act(path, obs):
                from ray.rllib.core import Columns
                from ray.rllib.core.rl_module.rl_module import RLModule

                module = RLModule.from_checkpoint(path)
                out = module.forward_inference({Columns.OBS: np.array([obs], np.float32)})
                logits = np.asarray(out[Columns.ACTION_DIST_INPUTS])[0]
                return type(module).__module__, int(np.argmax(logits))

            print(json.dumps(ray.get(act.remote(sys.argv[1], json.loads(sys.argv[2])))))
            ray.shutdown()
            """
        )
    )
    result = run_script(
        tmp_path,
        """
        import json, subprocess, sys
        import numpy as np
        from pathlib import Path
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.core import Columns

        # (a small iteration: RLlib's default PPO one, 30 epochs over 4000 steps, took 4 s)
        algo = (
            PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
            .training(train_batch_size=200, minibatch_size=100, num_epochs=1).build()
        )
        algo.train()
        path = Path(algo.save("checkpoint").checkpoint.path)
        module_path = path / "learner_group" / "learner" / "rl_module" / "default_policy"
        obs = [0.01, -0.02, 0.03, 0.04]
        logits = algo.get_module().forward_inference({Columns.OBS: np.array([obs], np.float32)})
        greedy = int(np.argmax(np.asarray(logits[Columns.ACTION_DIST_INPUTS])[0]))
        algo.stop()
        served = subprocess.run(
            [sys.executable, "serving.py", str(module_path), json.dumps(obs)],
            capture_output=True, text=True, timeout=180,
        )
        print(served.stderr[-3000:], file=sys.stderr)
        module_name, action = json.loads(served.stdout.strip().splitlines()[-1])
        print(json.dumps([module_name, action == greedy]))
        """,
        in_subprocess=True,
        timeout=220,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # (no framework chosen: under the launcher, RLlib's default, torch)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        "trainer.algorithms.ppo.torch_module",
        True,
    ]


def test_install_puts_the_startup_folder_first_and_uninstall_takes_it_away(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    launcher.install()
    try:
        assert os.environ["PYTHONPATH"].split(os.pathsep) == [STARTUP_DIR, "/somewhere"]
        assert Path(STARTUP_DIR, "sitecustomize.py").is_file()
        launcher.install()  # once
        assert os.environ["PYTHONPATH"].split(os.pathsep) == [STARTUP_DIR, "/somewhere"]
    finally:
        launcher.uninstall()
    assert os.environ["PYTHONPATH"] == "/somewhere"


def test_the_startup_folder_names_the_launchers_mode_variable():
    text = Path(STARTUP_DIR, "sitecustomize.py").read_text()
    assert f'LAUNCHER_VAR = "{launcher.ENV_VAR}"' in text


ADDRESSES = ["localhost", "127.0.0.1", "::1", "[::1]", "10.0.0.1", "fe80::1%eth0", "node-1"]
HOST_PORTS = ["a:1", "::1", "[::1]:80", "noport", "1.2.3.4:5", "[fe80::1]:8265", "x:y:z"]


@needs_installed_ray
def test_rays_address_helpers_answer_as_rays_own_for_literals():
    import ray._raylet as raylet

    for host in ADDRESSES:
        assert ray_network.build_address(host, 8265) == raylet.build_address(host, 8265), host
        assert ray_network.is_ipv6(host) == raylet.is_ipv6(host), host
        if host != "node-1":  # Ray looks names up; the helpers here do not
            assert ray_network.is_localhost(host) == raylet.is_localhost(host), host
    for address in HOST_PORTS:
        assert ray_network.parse_address(address) == raylet.parse_address(address), address
    assert 0 < ray_network.find_free_port() < 65536


def test_an_rllib_script_names_its_server_with_rays_address_helper(hook):
    from ray._common.network_utils import build_address

    assert build_address("localhost", 12345) == "localhost:12345"
    assert build_address("::1", 80) == "[::1]:80"
    assert sys.modules["ray._common.network_utils"].__name__ == "ray._common.network_utils"
