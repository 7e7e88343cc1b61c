"""PPO on an Atari game: env steps per second (learning included) and return, this project
against Stable-Baselines3 and RLlib 2.60, on the same machine in the same run.

The config is rl-zoo's for Atari PPO (rl-baselines3-zoo `hyperparams/ppo.yml`, `atari`): 8 envs,
128 steps each per update (1024), 4 epochs of minibatches of 256, lr 2.5e-4, clip 0.1, vf
coefficient 0.5, entropy coefficient 0.01, gamma 0.99, GAE lambda 0.95, gradient norm 0.5;
frames as Stable-Baselines3's AtariWrapper makes them (4 skipped with a max over the last two,
84x84 grayscale, one episode per life, FIRE on reset, rewards clipped to their sign) stacked 4
deep; the network is the Nature CNN (32 8x8/4, 64 4x4/2, 64 3x3/1, unpadded, then 512 units)
shared by the policy and the value function, then a linear policy head and a linear value
head (1.7M weights). In RLlib's model config the 512-unit layer is a last convolution of 512
7x7 kernels over the 7x7 map (the same weights and outputs as a dense layer over the flattened
map), shared with `vf_share_layers`, and `head_fcnet_hiddens=[]` makes the heads linear. Here
and in RLlib the frames come from RLlib's `wrap_atari_for_new_api_stack(dim=84, framestack=4)`
(its rewards are not clipped: the learners see the game's, so the returns compare as the game
counts them); here with `normalize=False`, so frames travel as bytes, as in
Stable-Baselines3, and the default module scales them as RLlib's wrapper does (the same
network inputs).

`--stacking connectors` stacks the frames as RLlib's own `atari_ppo.py` does, in this project
and in RLlib: the wrapper stacks none (`framestack=None`), `FrameStackingEnvToModule(4)` stacks
them for the module in the EnvRunners and `FrameStackingLearner(4)` in the learner, so the
episodes carry each frame once; the default, `wrapper`, stacks them in the env wrapper (4 per
observation, as Stable-Baselines3's `VecFrameStack`).

Each library runs `--frames` frames (4 per env step; default 200k: 50k env steps), from
before the algorithm is built to the last update; `env steps/s` is env steps over that wall
time. `return` is the mean game score of the episodes ended in the last quarter of the run
(one life is an episode to the learners here; the score is the game's).
Layouts on this machine's cores: Stable-Baselines3 steps its 8 envs in one process
(`DummyVecEnv`, rl-zoo's); this project and RLlib put 4 envs in each of 2 EnvRunner
processes. `learner updates` is the wall time spent in the learner updates (Stable-Baselines3's
`train()`, RLlib's `learner_group.update`, this project's `update_learners`), the rest of the
run is sampling and setup: a library at 2x another's env steps/s must fit its whole run in half
the other's time.

Prints one line per library, then the ratios (this project's env steps/s over theirs) and the
CPU model; `--rounds N` runs the libraries in turns N times and ends with each ratio's median
over the rounds (both sides of a ratio move by several percent from run to run here). Each library runs in a process of its own (`--only LIB` runs one and prints JSON).

Run: python bench/atari.py [--game ALE/Pong-v5] [--frames 200000] [--libs localrl sb3 rllib]
                           [--stacking wrapper|connectors] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from libraries import run_rounds, timed_calls

FRAMES_PER_STEP = 4
NUM_ENVS = 8
STEPS_PER_ENV = 128
#: The Nature CNN (Mnih et al. 2015), Stable-Baselines3's `NatureCNN`, in RLlib's terms: its
#: dense layer of 512 units over the 7x7x64 map is a convolution of 512 7x7 kernels.
NATURE_CNN = [
    [32, [8, 8], 4, "valid"],
    [64, [4, 4], 2, "valid"],
    [64, [3, 3], 1, "valid"],
    [512, [7, 7], 1, "valid"],
]


def _episode_scores(results: list[tuple[int, float]], total: int) -> float:
    """The mean of the per-iteration mean returns over the run's last quarter."""
    tail = [r for steps, r in results if steps >= 0.75 * total and r == r]
    return sum(tail) / len(tail) if tail else float("nan")


def _ppo_config(config_class: type, game: str) -> object:
    """This project's or RLlib's PPOConfig with rl-zoo's Atari settings (module doc)."""
    config = config_class()
    return (
        config.environment("atari-84", env_config={"game": game})
        .framework("torch")
        .env_runners(
            num_env_runners=2,
            num_envs_per_env_runner=NUM_ENVS // 2,
            rollout_fragment_length=STEPS_PER_ENV,
        )
        .training(
            train_batch_size=NUM_ENVS * STEPS_PER_ENV,
            minibatch_size=256,
            num_epochs=4,
            lr=2.5e-4,
            clip_param=0.1,
            vf_loss_coeff=0.5,
            entropy_coeff=0.01,
            gamma=0.99,
            lambda_=0.95,
            grad_clip=0.5,
            vf_clip_param=float("inf"),
        )
        .rl_module(
            model_config={
                "conv_filters": NATURE_CNN,
                "conv_activation": "relu",
                "head_fcnet_hiddens": [],
                "vf_share_layers": True,
            }
        )
    )


def _atari_creator(wrap: object, framestack: int | None, **options: object) -> object:
    def make(env_config: dict) -> object:
        import ale_py  # noqa: F401 - registers the ALE ids (in each EnvRunner process)
        import gymnasium as gym

        game = env_config.get("game", "ALE/Pong-v5")
        env = gym.make(game, frameskip=1)
        return wrap(env, dim=84, framestack=framestack, **options)  # type: ignore[operator]

    return make


def _stacked_by_connectors(config: object, env_to_module: type, learner: type) -> object:
    """`config` with RLlib's frame-stacking pieces (`--stacking connectors`)."""
    return config.env_runners(  # type: ignore[attr-defined]
        env_to_module_connector=lambda env, spaces=None, device=None: env_to_module(num_frames=4)
    ).training(learner_connector=lambda obs_space, act_space: learner(num_frames=4))


def _train(algo: object, frames: int) -> dict:
    steps, results = 0, []
    while steps * FRAMES_PER_STEP < frames:
        result = algo.train()  # type: ignore[attr-defined]
        runners = result["env_runners"]
        steps = int(runners["num_env_steps_sampled_lifetime"])
        results.append((steps, float(runners.get("episode_return_mean", float("nan")))))
    return {"env_steps": steps, "results": results}


def run_localrl(game: str, frames: int, stacking: str) -> dict:
    import ale_py  # noqa: F401 - registers the ALE ids

    from trainer import PPOConfig
    from trainer.connectors.env_to_module import FrameStackingEnvToModule
    from trainer.connectors.learner import FrameStackingLearner
    from trainer.env.envs import register_env
    from trainer.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    framestack = None if stacking == "connectors" else 4
    register_env(
        "atari-84", _atari_creator(wrap_atari_for_new_api_stack, framestack, normalize=False)
    )
    start = time.perf_counter()
    config = _ppo_config(PPOConfig, game)
    if stacking == "connectors":
        config = _stacked_by_connectors(config, FrameStackingEnvToModule, FrameStackingLearner)
    algo = config.build()  # type: ignore[attr-defined]
    update = [0.0]
    timed_calls(algo, "update_learners", update)
    try:
        out = _train(algo, frames)
        out["update_seconds"] = update[0]
    finally:
        algo.stop()
    out["seconds"] = time.perf_counter() - start
    return out


def run_rllib(game: str, frames: int, stacking: str) -> dict:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
    from ray.rllib.connectors.learner.frame_stacking import FrameStackingLearner
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack
    from ray.tune.registry import register_env

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    framestack = None if stacking == "connectors" else 4
    register_env("atari-84", _atari_creator(wrap_atari_for_new_api_stack, framestack))
    start = time.perf_counter()
    config = _ppo_config(PPOConfig, game)
    if stacking == "connectors":
        config = _stacked_by_connectors(config, FrameStackingEnvToModule, FrameStackingLearner)
    algo = config.build_algo()  # type: ignore[attr-defined]
    update = [0.0]
    timed_calls(algo.learner_group, "update", update)  # type: ignore[attr-defined]
    try:
        out = _train(algo, frames)
        out["update_seconds"] = update[0]
    finally:
        algo.stop()
        ray.shutdown()
    out["seconds"] = time.perf_counter() - start
    return out


def run_sb3(game: str, frames: int, stacking: str) -> dict:
    import ale_py  # noqa: F401
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    start = time.perf_counter()
    env = VecFrameStack(make_atari_env(game, n_envs=NUM_ENVS, seed=0), n_stack=4)

    def linear(x: float):  # rl-zoo's lin_X
        return lambda remaining: remaining * x

    model = PPO(
        "CnnPolicy",
        env,
        n_steps=STEPS_PER_ENV,
        n_epochs=4,
        batch_size=256,
        learning_rate=linear(2.5e-4),
        clip_range=linear(0.1),
        vf_coef=0.5,
        ent_coef=0.01,
        seed=0,
        verbose=0,
    )
    results: list[tuple[int, float]] = []

    class Record(BaseCallback):
        def _on_rollout_end(self) -> None:
            buffer = self.model.ep_info_buffer
            score = sum(e["r"] for e in buffer) / len(buffer) if buffer else float("nan")
            results.append((self.model.num_timesteps, score))

        def _on_step(self) -> bool:
            return True

    update = [0.0]
    timed_calls(model, "train", update)
    model.learn(total_timesteps=frames // FRAMES_PER_STEP, callback=Record())
    env.close()
    return {
        "env_steps": model.num_timesteps,
        "results": results,
        "seconds": time.perf_counter() - start,
        "update_seconds": update[0],
    }


RUNNERS = {"localrl": run_localrl, "sb3": run_sb3, "rllib": run_rllib}
LABELS = {"localrl": "localrl", "sb3": "Stable-Baselines3", "rllib": "RLlib 2.60"}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--game", default="ALE/Pong-v5")
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--libs", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    parser.add_argument("--stacking", choices=["wrapper", "connectors"], default="wrapper")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each library, in turns")
    parser.add_argument("--only", choices=list(RUNNERS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(RUNNERS[args.only](args.game, args.frames, args.stacking)))
        return
    run_rounds(
        args.rounds,
        __file__,
        args.libs,
        ["--game", args.game, "--frames", str(args.frames), "--stacking", args.stacking],
        LABELS,
        lambda out: (
            f"PPO {args.game}, {out['env_steps'] * FRAMES_PER_STEP} frames "
            f"({out['env_steps']} env steps) in {out['seconds']:.1f} s: "
            f"{out['env_steps'] / out['seconds']:.1f} env steps/s, return "
            f"{_episode_scores(out['results'], out['env_steps']):.2f} (last quarter); "
            f"learner updates {out['update_seconds']:.1f} s"
        ),
    )


if __name__ == "__main__":
    main()
