"""`EnvWithSubprocess`: an env that starts a child process (RLlib's example env, for testing that
EnvRunners clean up after their envs)."""

from __future__ import annotations

import atexit
import os
import subprocess

import gymnasium as gym
from gymnasium.spaces import Discrete


class EnvWithSubprocess(gym.Env):
    """Starts `sleep 20` at construction and kills it at interpreter exit. `env_config` names four
    files the test created: at exit the env deletes `tmp_file1` (on worker 0, the local
    EnvRunner) or `tmp_file2` (on a remote one); `close()` deletes `tmp_file3` (worker 0) or
    `tmp_file4`. So a test sees which cleanups ran where. Every episode is one step."""

    UNIQUE_CMD = "sleep 20"

    def __init__(self, config: dict):
        self.UNIQUE_FILE_0 = config["tmp_file1"]
        self.UNIQUE_FILE_1 = config["tmp_file2"]
        self.UNIQUE_FILE_2 = config["tmp_file3"]
        self.UNIQUE_FILE_3 = config["tmp_file4"]
        self.action_space = Discrete(2)
        self.observation_space = Discrete(2)
        self.subproc = subprocess.Popen(self.UNIQUE_CMD.split(" "), shell=False)
        self.config = config
        atexit.register(self.subproc.kill)
        exit_file = self.UNIQUE_FILE_0 if self._worker_index == 0 else self.UNIQUE_FILE_1
        atexit.register(os.unlink, exit_file)

    @property
    def _worker_index(self) -> int:
        return getattr(self.config, "worker_index", 0)

    def close(self) -> None:
        os.unlink(self.UNIQUE_FILE_2 if self._worker_index == 0 else self.UNIQUE_FILE_3)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return 0, 0, True, False, {}
