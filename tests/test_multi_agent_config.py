"""RLlib's multi-agent config: `multi_agent()` in RLlib 2.60's forms and its checks,
`is_multi_agent`, `get_multi_rl_module_spec`, `rl_module(rl_module_spec=MultiRLModuleSpec(...),
algorithm_config_overrides_per_module=...)` with `get_config_for_module`, to_dict / from_dict
and pickling, and the refusal at build (multi-agent training is not available yet)."""

from __future__ import annotations

import multiprocessing
import pickle

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest

from trainer.algorithms.dqn import DQNConfig
from trainer.algorithms.dqn.q_module import QModule
from trainer.algorithms.ppo import PPOConfig
from trainer.algorithms.ppo.module import PolicyModule
from trainer.checkpoints.config_data import config_to_data
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.policy_spec import PolicySpec
from trainer.core.rl_module import RLModuleSpec
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.errors import ConfigError, UnknownSettingError
from trainer.examples.rl_modules.classes import BeatLastHeuristicRLM, RandomRLModule


def map_by_agent(agent_id, episode, **kwargs):
    """Agent i acts with policy "p{i}"."""
    return f"p{agent_id}"


def train_only_p0(policy_id, batch=None):
    return policy_id == "p0"


def _ma_config(config=None):
    return (
        (config or PPOConfig())
        .environment("CartPole-v1")
        .multi_agent(
            policies={"p0", "p1"},
            policy_mapping_fn=map_by_agent,
            policies_to_train=["p0"],
            count_steps_by="agent_steps",
        )
    )


def test_single_agent_defaults_are_rllib_s():
    config = PPOConfig()
    assert config.policies == {"default_policy": PolicySpec()}
    assert config.policy_mapping_fn("agent_7", None) == "default_policy"
    assert config.policies_to_train is None and config.count_steps_by == "env_steps"
    assert not config.is_multi_agent and config.is_multi_agent() is False
    assert config.algorithm_config_overrides_per_module == {}
    assert config.get_config_for_module("default_policy") is config


@pytest.mark.parametrize(
    "policies, expected",
    [
        ({"p1", "p0"}, {"p0": PolicySpec(), "p1": PolicySpec()}),
        (["a", "b"], {"a": PolicySpec(), "b": PolicySpec()}),
        (("a",), {"a": PolicySpec()}),
        (
            {"a": PolicySpec(config={"lr": 0.1}), "b": (None, None, None, {"gamma": 0.5})},
            {"a": PolicySpec(config={"lr": 0.1}), "b": PolicySpec(config={"gamma": 0.5})},
        ),
        (None, {"default_policy": PolicySpec()}),
    ],
)
def test_policies_take_rllib_s_forms_as_policy_specs(policies, expected):
    config = PPOConfig().multi_agent(policies=policies)
    assert config.policies == expected
    assert list(config.policies) == list(expected)  # a set in sorted order: runs repeat
    assert bool(config.is_multi_agent) == (policies is not None)
    assert config.is_multi_agent() == (policies is not None)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"policies": 5}, r"multi_agent\(policies=5\): policies must be a set, list or tuple"),
        ({"policies": {"a/b"}}, r"module id 'a/b' is not valid"),
        ({"policies": set()}, r"not empty"),
        ({"policies": {"a": "PPO"}}, r"the value of 'a' is 'PPO'"),
        ({"policies": {"a": PolicySpec(config=3)}}, r"config of policy 'a' must be a dict"),
        (
            {"count_steps_by": "episodes"},
            r"count_steps_by='episodes'\): count_steps_by must be one of "
            r"\['env_steps', 'agent_steps'\]",
        ),
        ({"policies_to_train": "p0"}, r"policies_to_train='p0'\): policies_to_train must be"),
        ({"policy_mapping_fn": "p0"}, r"policy_mapping_fn must be a callable"),
    ],
)
def test_multi_agent_refuses_bad_values_naming_setting_and_value(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        PPOConfig().multi_agent(**kwargs)


def test_a_mapping_fn_of_the_old_stack_is_taken_and_refused_when_validated():
    """RLlib takes any callable; its episodes call it as fn(agent_id, episode), so a signature
    that needs a third argument (the old stack's `worker`) fails at the first step there: here,
    at `validate()`, saying so."""
    config = PPOConfig().multi_agent(
        policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, worker, **kw: "p0"
    )
    assert config.policy_mapping_fn("a", None, None) == "p0"
    with pytest.raises(ConfigError, match=r"called with 2 argument\(s\); this one's signature"):
        config.environment("CartPole-v1").validate()


def test_unknown_and_old_stack_multi_agent_keywords():
    with pytest.raises(UnknownSettingError, match="policy_mapping_function"):
        PPOConfig().multi_agent(policy_mapping_function=map_by_agent)
    config = PPOConfig().multi_agent(policy_map_capacity=200, observation_fn=None)
    assert config.policy_map_capacity == 200
    with pytest.warns(UserWarning, match="no policy will be trained"):
        PPOConfig().multi_agent(policies={"a"}, policies_to_train=[])


def test_policies_to_train_forms_and_the_cross_check_at_validate():
    config = _ma_config()
    policy_dict, is_trained = config.get_multi_agent_setup(env=gym.make("CartPole-v1"))
    assert is_trained("p0") and not is_trained("p1")
    assert policy_dict["p0"].observation_space == gym.make("CartPole-v1").observation_space
    assert (
        isinstance(policy_dict["p0"].config, PPOConfig) and policy_dict["p0"].config.lr == config.lr
    )
    with_overrides = config.copy().multi_agent(policies={"p0": PolicySpec(config={"lr": 0.125})})
    setup, _ = with_overrides.get_multi_agent_setup(env=gym.make("CartPole-v1"))
    assert setup["p0"].config.lr == 0.125
    assert with_overrides.policies["p0"].config == {"lr": 0.125}  # the config is unchanged
    config.multi_agent(policies_to_train=train_only_p0)
    _, is_trained = config.get_multi_agent_setup(env=gym.make("CartPole-v1"))
    assert is_trained("p0") and not is_trained("p1")
    config.multi_agent(policies_to_train=None)
    _, is_trained = config.get_multi_agent_setup(env=gym.make("CartPole-v1"))
    assert is_trained("p0") and is_trained("p1")
    bad = _ma_config().multi_agent(policies_to_train={"p0", "p9"})
    with pytest.raises(ConfigError, match=r"names policy 'p9', which is not in"):
        bad.validate()


def test_what_cannot_train_multi_agent_fails_at_build_before_any_worker():
    before = set(multiprocessing.active_children())
    # DQN's default buffer stores single-agent episodes: a multi-agent run needs its
    # multi-agent counterpart.
    with pytest.raises(ConfigError, match="MultiAgentPrioritizedEpisodeReplayBuffer"):
        _ma_config(DQNConfig()).build()
    spec_only = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={"a": RLModuleSpec()}))
    )
    with pytest.raises(ConfigError, match=r"rl_module_spec=MultiRLModuleSpec\(\.\.\.\)"):
        spec_only.build()
    assert set(multiprocessing.active_children()) == before  # no EnvRunner was started


def test_a_multi_agent_config_on_a_single_agent_env_names_the_env():
    config = PPOConfig().environment("CartPole-v1").multi_agent(policies=["shared"])
    with pytest.raises(ValueError, match="not a MultiAgentEnv"):
        config.env_runners(num_env_runners=0).build()


def test_single_agent_forms_still_build_and_store_no_multi_agent_settings():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .multi_agent(policies={"default_policy"}, count_steps_by="env_steps")
    )
    assert not config.is_multi_agent
    stored = config_to_data(config)["settings"]
    assert not {"policies", "policy_mapping_fn", "policies_to_train"} & set(stored)
    with config.build() as algo:
        assert algo.train()["training_iteration"] == 1


def test_to_dict_from_dict_and_pickles_keep_the_multi_agent_settings():
    config = _ma_config().rl_module(
        algorithm_config_overrides_per_module={"p1": {"lr": 0.5}},
        rl_module_spec=MultiRLModuleSpec(
            rl_module_specs={"p1": RLModuleSpec(module_class=RandomRLModule)}
        ),
    )
    for clone in (
        PPOConfig.from_dict(config.to_dict()),
        pickle.loads(pickle.dumps(config)),
        cloudpickle.loads(cloudpickle.dumps(config)),
        config.copy(),
    ):
        assert clone.policies == {"p0": PolicySpec(), "p1": PolicySpec()}
        assert clone.policy_mapping_fn is map_by_agent
        assert clone.policies_to_train == ["p0"] and clone.count_steps_by == "agent_steps"
        assert clone.algorithm_config_overrides_per_module == {"p1": {"lr": 0.5}}
        assert isinstance(clone.rl_module_spec, MultiRLModuleSpec)
        assert clone.rl_module_spec["p1"].module_class is RandomRLModule
        assert clone.is_multi_agent
    # The default mapping survives pickling as itself.
    assert (
        pickle.loads(pickle.dumps(PPOConfig())).policy_mapping_fn == PPOConfig().policy_mapping_fn
    )
    # RLlib's older nested "multiagent" dict.
    old = PPOConfig.from_dict(
        {"multiagent": {"policies": ["x", "y"], "count_steps_by": "agent_steps"}}
    )
    assert list(old.policies) == ["x", "y"] and old.count_steps_by == "agent_steps"


def test_overrides_per_module_and_get_config_for_module():
    config = _ma_config().rl_module(algorithm_config_overrides_per_module={"p1": {"lr": 0.25}})
    config.rl_module(algorithm_config_overrides_per_module={"p0": {"gamma": 0.5}})  # updates
    p1 = config.get_config_for_module("p1")
    assert p1.lr == 0.25 and p1.gamma == config.gamma and config.lr != 0.25
    assert config.get_config_for_module("p1") is p1  # built once
    assert config.get_config_for_module("p0").gamma == 0.5
    assert config.get_config_for_module("other") is config
    with pytest.raises(UnknownSettingError, match="got an unknown setting lrr=0.1"):
        config.rl_module(algorithm_config_overrides_per_module={"p1": {"lrr": 0.1}})
    with pytest.raises(ConfigError, match=r"lr=-1: lr must be a number >= 0"):
        config.rl_module(algorithm_config_overrides_per_module={"p1": {"lr": -1}})
    with pytest.raises(ConfigError, match="must be a dict {module_id: {setting: value}}"):
        config.rl_module(algorithm_config_overrides_per_module=["p1"])
    # RLlib's older place of the overrides, logged once as older API (trainer.util.deprecation).
    moved = PPOConfig().multi_agent(algorithm_config_overrides_per_module={"a": {"lr": 0.3}})
    assert moved.get_config_for_module("a").lr == 0.3


def test_get_multi_rl_module_spec_builds_default_and_user_modules():
    env = gym.make("CartPole-v1")
    spec = _ma_config().get_multi_rl_module_spec(env=env)
    assert set(spec.rl_module_specs) == {"p0", "p1"}
    module = spec.build()
    assert isinstance(module, MultiRLModule) and isinstance(module["p0"], PolicyModule)
    assert module["p0"].observation_space == env.observation_space
    obs = np.stack([env.reset(seed=0)[0]] * 2)
    assert module.forward_inference({"p1": {"obs": obs}})["p1"]["action_dist_inputs"].shape == (
        2,
        2,
    )
    # DQN's default module is its Q-network, with DQN's `dueling`.
    dqn = _ma_config(DQNConfig().training(dueling=False)).get_multi_rl_module_spec(env=env)
    assert isinstance(dqn.build()["p1"], QModule) and dqn.build()["p1"].dueling is False
    # A user's heuristic module next to a trained default one; spaces from `spaces=`.
    discrete4, discrete3 = gym.spaces.Discrete(4), gym.spaces.Discrete(3)
    mixed = (
        PPOConfig()
        .multi_agent(policies={"learned", "heuristic"}, policies_to_train=["learned"])
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "learned": RLModuleSpec(model_config={"fcnet_hiddens": [8]}),
                    "heuristic": RLModuleSpec(module_class=BeatLastHeuristicRLM),
                }
            )
        )
        .get_multi_rl_module_spec(
            spaces={"learned": (discrete4, discrete3), "heuristic": (discrete4, discrete3)}
        )
    )
    built = mixed.build()
    assert isinstance(built["learned"], PolicyModule)
    assert built["learned"].model_config["fcnet_hiddens"] == [8]
    assert isinstance(built["heuristic"], BeatLastHeuristicRLM)
    assert built.forward_inference({"heuristic": {"obs": np.array([1])}})["heuristic"][
        "actions"
    ].tolist() == [2]


def test_inference_only_spec_leaves_out_learner_only_modules_and_specs_are_checked():
    spec = (
        PPOConfig()
        .multi_agent(policies={"a", "critic"})
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"critic": RLModuleSpec(learner_only=True)}
            )
        )
        .get_multi_rl_module_spec(env=gym.make("CartPole-v1"), inference_only=True)
    )
    assert set(spec.rl_module_specs) == {"a"} and spec["a"].inference_only

    class TorchLikeModule:
        pass

    with pytest.raises(ConfigError, match="is not an RLModule: subclass trainer.RLModule"):
        PPOConfig().rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"a": RLModuleSpec(module_class=TorchLikeModule)}
            )
        )
    with pytest.raises(ConfigError, match=r"fcnet_hiddens'\]=\[0\]"):
        PPOConfig().rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"a": RLModuleSpec(model_config={"fcnet_hiddens": [0]})}
            )
        )
    with pytest.raises(ValueError, match="must be a dict {module_id: RLModuleSpec}"):
        MultiRLModuleSpec(rl_module_specs=["a"])
    with pytest.raises(ValueError, match="use get_multi_rl_module_spec"):
        PPOConfig().rl_module(
            rl_module_spec=MultiRLModuleSpec(rl_module_specs={"a": RLModuleSpec()})
        ).get_rl_module_spec(env=gym.make("CartPole-v1"))


def test_multi_rl_module_spec_api():
    obs, act = gym.spaces.Discrete(4), gym.spaces.Discrete(3)
    spec = MultiRLModuleSpec(
        rl_module_specs={
            "a": RLModuleSpec(module_class=RandomRLModule, observation_space=obs, action_space=act)
        }
    )
    assert "a" in spec and spec["a"].module_class is RandomRLModule
    assert isinstance(spec.build("a"), RandomRLModule)
    spec.add_modules(
        {
            "b": RLModuleSpec(
                module_class=BeatLastHeuristicRLM, observation_space=obs, action_space=act
            )
        }
    )
    # Without override, an existing spec is updated with the fields the new one sets.
    spec.add_modules({"a": RLModuleSpec(action_space=gym.spaces.Discrete(2))}, override=False)
    assert spec["a"].action_space == gym.spaces.Discrete(2)
    assert spec["a"].module_class is RandomRLModule and spec["a"].observation_space == obs
    spec.add_modules({"a": RLModuleSpec(action_space=act)})  # override: replaced
    assert spec["a"].module_class is None
    spec.add_modules(
        {"a": RLModuleSpec(module_class=RandomRLModule, observation_space=obs, action_space=act)}
    )
    spec.remove_modules("b")
    assert "b" not in spec and spec.as_multi_rl_module_spec() is spec
    again = MultiRLModuleSpec.from_dict(spec.to_dict())  # plain data, classes by import path
    assert again.multi_rl_module_class is MultiRLModule and set(again.rl_module_specs) == {"a"}
    assert again["a"].module_class is RandomRLModule and again["a"].observation_space == obs
    module = spec.build()
    assert module.keys() == {"a"} and MultiRLModuleSpec.from_module(module)["a"].module_class is (
        RandomRLModule
    )


def test_policy_spec_state_and_serialized_forms():
    spec = PolicySpec(None, gym.spaces.Discrete(4), gym.spaces.Discrete(3), {"lr": 0.1})
    assert PolicySpec.from_state(spec.get_state()) == spec
    assert PolicySpec.deserialize(spec.serialize()) == spec
    assert spec != PolicySpec() and "config={'lr': 0.1}" in repr(spec)


class TwoKindsOfAgents(MultiAgentEnv):
    """Agent 0 sees CartPole-like boxes, agent 1 a Discrete(5); both pick from Discrete(2)."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = self.agents = [0, 1]
        self.observation_spaces = {
            0: gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
            1: gym.spaces.Discrete(5),
        }
        self.action_spaces = {0: gym.spaces.Discrete(2), 1: gym.spaces.Discrete(2)}


def test_policy_spaces_come_from_the_agents_that_map_to_each_policy():
    env = TwoKindsOfAgents()
    config = PPOConfig().multi_agent(policies={"p0", "p1"}, policy_mapping_fn=map_by_agent)
    setup, _ = config.get_multi_agent_setup(env=env)
    assert setup["p0"].observation_space == env.observation_spaces[0]
    assert setup["p1"].observation_space == gym.spaces.Discrete(5)
    module = config.get_multi_rl_module_spec(env=env).build()
    assert module["p1"].forward_inference({"obs": np.array([4])})["action_dist_inputs"].shape == (
        1,
        2,
    )
    # Two agents with different spaces on one policy cannot share a module.
    shared = PPOConfig().multi_agent(
        policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared"
    )
    with pytest.raises(ValueError, match=r"agents \['0', '1'\] map to policy 'shared'"):
        shared.get_multi_agent_setup(env=env)


def test_the_default_module_spec_round_trips_through_rl_module():
    env = gym.make("CartPole-v1")
    spec = PPOConfig().rl_module(model_config={"fcnet_hiddens": [4]}).get_rl_module_spec(env=env)
    assert spec.module_class is PolicyModule and isinstance(spec.build(), PolicyModule)
    again = PPOConfig().rl_module(rl_module_spec=spec)  # the default class, named: accepted
    assert again.model["fcnet_hiddens"] == [4]
    dqn_spec = DQNConfig().get_rl_module_spec(env=env)
    assert dqn_spec.module_class is QModule and dqn_spec.build().dueling is True
    # PPO's module is not DQN's: taken by rl_module() (RLlib takes any class), refused by
    # validate(), and RLlib's merged spec names it.
    config = DQNConfig().environment("CartPole-v1").rl_module(rl_module_spec=spec)
    assert config.rl_module_spec.module_class is PolicyModule
    with pytest.raises(ConfigError, match="RLModules other than TorchRLModule subclasses"):
        config.validate()
