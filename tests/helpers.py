from trainer import PPOConfig


def small_ppo(num_env_runners: int = 0, env: str = "CartPole-v1", **training) -> PPOConfig:
    """A PPO config that trains in a fraction of a second: small batch, small net, one epoch."""
    settings = {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1}
    settings.update(training)
    return (PPOConfig().environment(env)
            .env_runners(num_env_runners=num_env_runners)
            .training(**settings)
            .rl_module(model_config={"fcnet_hiddens": [16]}))
