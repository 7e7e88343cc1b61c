"""Multi-agent: RLlib's tuned `multi_agent_cartpole_ppo.py` to its stop, and multi-agent
sampling against single-agent sampling of the same CartPoles, measured in the same run.

1. Training: MultiAgentCartPole with 2 agents, one policy each (p0, p1), RLlib's tuned settings
   (fcnet_hiddens [32], linear activation, shared value layers, lr 3e-4, 6 epochs,
   vf_loss_coeff 0.01, 2 EnvRunners); stop when `env_runners/episode_return_mean` (summed over
   the agents) reaches 800 or 300k env steps are sampled. Wall time includes the build.
   Target: under 10 s on 2 cores, median of 3 seeds (RLlib 2.60 itself: 90 s on this machine).
2. Sampling: one MultiAgentEnvRunner (in this process) stepping MultiAgentCartPole with N
   agents, all mapped to one module, against one single-agent EnvRunner stepping N CartPoles
   as sub-envs; agent steps per CPU second of this process and their ratio, N = 2 and 8.
   Target: ratio >= 0.8.

3. With `--dqn`: RLlib's tuned multi_agent_cartpole_dqn.py (2 agents, dueling double Q,
   n-step (2, 5), prioritized replay per module) to its stop, a summed return of 300 within
   500k env steps.

Run: python bench/multi_agent.py [--seeds 0 1 2] [--steps 20000] [--repeats 5] [--skip-training]
     [--dqn]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from trainer import DQNConfig, PPOConfig
from trainer.core.nn import Categorical
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.runners.env_runner import EnvRunner
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner

STOP_RETURN = 800.0
STOP_ENV_STEPS = 300_000


def tuned_config(seed: int) -> PPOConfig:
    """RLlib's tuned_examples/ppo/multi_agent_cartpole_ppo.py (2 agents)."""
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .rl_module(
            model_config={
                "fcnet_hiddens": [32],
                "fcnet_activation": "linear",
                "vf_share_layers": True,
            }
        )
        .training(gamma=0.99, lr=0.0003, num_epochs=6, vf_loss_coeff=0.01, use_kl_loss=True)
        .multi_agent(
            policy_mapping_fn=lambda agent_id, *args, **kwargs: f"p{agent_id}",
            policies={"p0", "p1"},
        )
        .debugging(seed=seed)
    )


def tuned_multi_agent_cartpole_dqn(seed: int = 0) -> DQNConfig:
    """RLlib 2.60's tuned_examples/dqn/multi_agent_cartpole_dqn.py (2 agents), its settings
    as the script sets them (train_batch_size_per_learner=48, n_step=(2, 5), dueling double
    Q, [256, 256] tanh with a [256] head, epsilon to 0.02 over 20k steps)."""
    return (
        DQNConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .training(
            lr=0.00065,
            train_batch_size_per_learner=48,
            replay_buffer_config={
                "type": "MultiAgentPrioritizedEpisodeReplayBuffer",
                "capacity": 50000,
                "alpha": 0.6,
                "beta": 0.4,
            },
            n_step=(2, 5),
            double_q=True,
            num_atoms=1,
            dueling=True,
            epsilon=[(0, 1.0), (20000, 0.02)],
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": [256, 256],
                "fcnet_activation": "tanh",
                "fcnet_bias_initializer": "zeros_",
                "head_fcnet_bias_initializer": "zeros_",
                "head_fcnet_hiddens": [256],
            }
        )
        .multi_agent(
            policy_mapping_fn=lambda aid, *arg, **kw: f"p{aid}",
            policies={f"p{i}" for i in range(2)},
        )
        .debugging(seed=seed)
    )


def dqn_to_stop(seed: int) -> tuple[float, float, int]:
    """RLlib's tuned multi_agent_cartpole_dqn.py to its stop (a summed return of 300 within
    500k env steps): (seconds including the build, final return, env steps)."""
    start = time.perf_counter()
    algo = tuned_multi_agent_cartpole_dqn(seed).build()
    try:
        while True:
            result = algo.train()
            episode_return = result["env_runners"].get("episode_return_mean", float("nan"))
            steps = result["num_env_steps_sampled_lifetime"]
            if episode_return >= 300.0 or steps >= 500_000:
                return time.perf_counter() - start, episode_return, steps
    finally:
        algo.stop()


def train_to_stop(seed: int) -> tuple[float, float, int]:
    """(seconds including the build, final return, env steps)."""
    start = time.perf_counter()
    algo = tuned_config(seed).build()
    try:
        while True:
            result = algo.train()
            episode_return = result["env_runners"].get("episode_return_mean", float("nan"))
            steps = result["num_env_steps_sampled_lifetime"]
            if episode_return >= STOP_RETURN or steps >= STOP_ENV_STEPS:
                return time.perf_counter() - start, episode_return, steps
    finally:
        algo.stop()


def agent_steps_per_s(runner: EnvRunner | MultiAgentEnvRunner, env_steps: int) -> float:
    """Agent steps per CPU second of this process over one `sample(num_timesteps=env_steps)`
    after a warm-up (both runners sample in this process, on one thread: CPU time counts the
    work, and other processes on a busy machine change it less than they change wall time)."""
    runner.sample(num_timesteps=max(env_steps // 10, 1))
    start = time.process_time()
    episodes = runner.sample(num_timesteps=env_steps)
    elapsed = time.process_time() - start
    agent_steps = sum(
        episode.agent_steps() if hasattr(episode, "agent_steps") else len(episode)
        for episode in episodes
    )
    return agent_steps / elapsed


def ceiling_agent_steps_per_s(
    runner: MultiAgentEnvRunner, num_agents: int, env_steps: int
) -> float:
    """Agent steps per CPU second of a loop doing only what no multi-agent sampler can skip:
    MultiAgentCartPole's steps and resets, the module's forward pass over the acting agents'
    observations and the action draws (no episodes, no metrics, no bookkeeping). An upper
    bound on the multi-agent runner's rate: its ratio to the single-agent runner is the best
    any multi-agent runner built on this env and module could show."""
    env = MultiAgentCartPole({"num_agents": num_agents})
    module = runner.module["p0"]
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    env_step = agent_steps = 0
    start = time.process_time()
    while env_step < env_steps:
        agent_ids = list(obs)
        logits = module.dist_inputs(np.array([obs[agent_id] for agent_id in agent_ids]))
        actions, _ = Categorical.act(logits, rng, True)
        obs, _, terminateds, truncateds, _ = env.step(
            dict(zip(agent_ids, actions.tolist(), strict=True))
        )
        env_step += 1
        agent_steps += len(obs)
        if terminateds["__all__"] or truncateds["__all__"]:
            obs, _ = env.reset()
        else:  # agents that are done act no more
            obs = {a: o for a, o in obs.items() if not (terminateds[a] or truncateds[a])}
    return agent_steps / (time.process_time() - start)


def sampling_ratio(num_agents: int, agent_steps: int, repeats: int) -> tuple[float, float, float]:
    """Medians of (multi-agent, single-agent, ceiling) agent steps per second."""
    multi = MultiAgentEnvRunner(
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": num_agents})
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, *a, **kw: "p0"),
        worker_index=1,
        num_workers=1,
    )
    single = EnvRunner(
        PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=num_agents),
        worker_index=1,
        num_workers=1,
    )
    try:
        multi_rates, single_rates, ceiling_rates = [], [], []
        for _ in range(repeats):  # alternated: the machine's load drifts alike for all
            multi_rates.append(agent_steps_per_s(multi, agent_steps // num_agents))
            single_rates.append(agent_steps_per_s(single, agent_steps))
            ceiling_rates.append(
                ceiling_agent_steps_per_s(multi, num_agents, agent_steps // num_agents)
            )
        return (
            statistics.median(multi_rates),
            statistics.median(single_rates),
            statistics.median(ceiling_rates),
        )
    finally:
        multi.stop()
        single.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=20_000, help="agent steps per sample")
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="samples of each side, alternated; the medians count (this machine's speed drifts)",
    )
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument(
        "--dqn", action="store_true", help="also RLlib's tuned multi_agent_cartpole_dqn.py"
    )
    args = parser.parse_args()
    if args.dqn:
        for seed in args.seeds:
            seconds, episode_return, steps = dqn_to_stop(seed)
            print(
                f"DQN seed {seed}: return {episode_return:.0f} after {steps} env steps in "
                f"{seconds:.1f} s (build included; RLlib's stop: 300 within 500k steps)"
            )
    if not args.skip_training:
        times = []
        for seed in args.seeds:
            seconds, episode_return, steps = train_to_stop(seed)
            times.append(seconds)
            print(
                f"seed {seed}: return {episode_return:.0f} after {steps} env steps in "
                f"{seconds:.1f} s (build included)"
            )
        print(
            f"median {statistics.median(times):.1f} s to return {STOP_RETURN:.0f} "
            "(target < 10 s on 2 cores; RLlib 2.60: 90 s)"
        )
    for num_agents in (2, 8):
        multi, single, ceiling = sampling_ratio(num_agents, args.steps, args.repeats)
        print(
            f"sampling, {num_agents} agents: multi-agent {multi:,.0f} agent steps/CPU-s, "
            f"single-agent ({num_agents} sub-envs) {single:,.0f} = {multi / single:.2f}x "
            f"(target >= 0.8; ceiling: env + forward + draws alone {ceiling:,.0f} = "
            f"{ceiling / single:.2f}x)"
        )


if __name__ == "__main__":
    main()
