"""RLlib's Atari wrappers (`trainer.env.wrappers.atari_wrappers`), the TinyCatch game that
stands in for ALE (`localrl/TinyCatch-v0`) and the image helpers they use.

The wrappers are checked against RLlib 2.60's own code: RLlib cannot be imported here, but its
`atari_wrappers.py` needs only gymnasium, numpy, an annotation and `resize`/`rgb2gray` (OpenCV,
not installed): the module's source, from the installed Ray wheel (the test extra), is executed
with those imports pointed at this project's numpy helpers. Both wrapper chains then play the
same game with the same seeds and actions, and every step must return the same.
"""

from __future__ import annotations

import types

import gymnasium as gym
import numpy as np
import pytest
from helpers import exec_rllib_source, rllib_source

import trainer  # noqa: F401 - registers localrl/TinyCatch-v0
from trainer.env.wrappers import atari_wrappers as ours
from trainer.examples.envs.classes.tiny_catch import ALE_ACTION_MEANINGS, TinyCatch
from trainer.util.images import numpy_resize, numpy_rgb2gray, resize, rgb2gray

CATCH = "localrl/TinyCatch-v0"


def _rllib_atari_wrappers() -> types.SimpleNamespace:
    """RLlib's `atari_wrappers` module, from its source, with its imports served by stand-ins."""
    fake_modules = {
        "ray": {},
        "ray.rllib": {},
        "ray.rllib.utils": {},
        "ray.rllib.utils.annotations": {"PublicAPI": lambda obj: obj},
        "ray.rllib.utils.images": {"resize": resize, "rgb2gray": rgb2gray},
    }
    path = rllib_source("env/wrappers/atari_wrappers.py")
    return types.SimpleNamespace(**exec_rllib_source(path, fake_modules, "rllib_atari_wrappers"))


@pytest.fixture(scope="module")
def rllib():
    return _rllib_atari_wrappers()


def _catch(**kwargs):
    settings = {"frameskip": 1, "repeat_action_probability": 0.25, "full_action_space": False}
    settings.update(kwargs)
    return gym.make(CATCH, **settings)


def _play_both(our_env, rllib_env, steps: int, seed: int) -> int:
    """Plays both envs with the same seeds and random actions; asserts every reset and step
    returns the same. The number of episode ends seen."""
    actions = np.random.default_rng(seed)
    assert our_env.observation_space == rllib_env.observation_space
    ends = 0
    reset_seed = seed
    obs_a, info_a = our_env.reset(seed=reset_seed)
    obs_b, info_b = rllib_env.reset(seed=reset_seed)
    for _ in range(steps):
        np.testing.assert_array_equal(obs_a, obs_b)
        assert info_a == info_b
        action = int(actions.integers(our_env.action_space.n))
        obs_a, reward_a, term_a, trunc_a, info_a = our_env.step(action)
        obs_b, reward_b, term_b, trunc_b, info_b = rllib_env.step(action)
        assert (reward_a, term_a, trunc_a) == (reward_b, term_b, trunc_b)
        if term_a or trunc_a:
            ends += 1
            obs_a, info_a = our_env.reset()
            obs_b, info_b = rllib_env.reset()
    np.testing.assert_array_equal(obs_a, obs_b)
    return ends


@pytest.mark.parametrize("full_action_space", [False, True])  # True: FIRE, so FireResetEnv
def test_new_stack_wrapping_plays_as_rllibs(rllib, full_action_space):
    ends = _play_both(
        ours.wrap_atari_for_new_api_stack(
            _catch(full_action_space=full_action_space), dim=42, framestack=4
        ),
        rllib.wrap_atari_for_new_api_stack(
            _catch(full_action_space=full_action_space), dim=42, framestack=4
        ),
        steps=200,
        seed=3,
    )
    assert ends >= 3  # lives lost and games over, not only steps


def test_new_stack_wrapping_layers_and_spaces(rllib):
    env = ours.wrap_atari_for_new_api_stack(_catch(), dim=42, framestack=4)
    assert env.observation_space == gym.spaces.Box(-1.0, 1.0, (42, 42, 4), np.float32)
    layers, layer = [], env
    while isinstance(layer, gym.Wrapper):
        layers.append(type(layer).__name__)
        layer = layer.env
    assert layers[:7] == [
        "FrameStack",
        "EpisodicLifeEnv",
        "NoopResetEnv",
        "MaxAndSkipEnv",
        "NormalizedImageEnv",
        "GrayScaleAndResize",
        "TimeLimit",
    ]
    assert ours.get_wrapper_by_cls(env, ours.MaxAndSkipEnv) is not None
    assert ours.get_wrapper_by_cls(env, ours.FireResetEnv) is None
    # Colour, no frame skipping, no stacking: the other branches of RLlib's wrapping.
    colour = ours.wrap_atari_for_new_api_stack(_catch(), dim=21, frameskip=1, grayscale=False)
    assert colour.observation_space.shape == (21, 21, 3)
    assert ours.get_wrapper_by_cls(colour, ours.MaxAndSkipEnv) is None
    _play_both(
        colour,
        rllib.wrap_atari_for_new_api_stack(_catch(), dim=21, frameskip=1, grayscale=False),
        steps=150,
        seed=5,
    )


def test_deepmind_wrapping_plays_as_rllibs(rllib):
    ends = _play_both(
        ours.wrap_deepmind(_catch(frameskip=4), dim=42),
        rllib.wrap_deepmind(_catch(frameskip=4), dim=42),
        steps=300,
        seed=7,
    )
    assert ends >= 3


class ScriptedALE(gym.Env):
    """A game whose frame is its step count, rewards 1 per step, and which loses a life at the
    steps in `life_losses` (3 lives): to see what each wrapper does with frames, rewards,
    lives and resets."""

    def __init__(self, life_losses=(5,), meanings=("NOOP", "FIRE", "RIGHT")):
        self.observation_space = gym.spaces.Box(0, 255, (2, 2, 1), np.uint8)
        self.action_space = gym.spaces.Discrete(len(meanings))
        self.meanings = list(meanings)
        self.life_losses = set(life_losses)
        self.ale = types.SimpleNamespace(lives=lambda: self.lives)
        self.resets = 0
        self.actions: list[int] = []

    def get_action_meanings(self):
        return self.meanings

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.lives = 0, 3
        self.resets += 1
        return self._frame(), {}

    def step(self, action):
        self.t += 1
        self.actions.append(int(action))
        if self.t in self.life_losses:
            self.lives -= 1
        return self._frame(), 1.0, self.lives == 0, False, {}

    def _frame(self):
        # Odd steps bright, even steps dark: a max over two frames is always the bright one.
        return np.full((2, 2, 1), self.t * 10 + (100 if self.t % 2 else 0), np.uint8)


def test_max_and_skip_sums_rewards_and_takes_the_brighter_of_the_last_two_frames():
    game = ScriptedALE(life_losses=())
    env = ours.MaxAndSkipEnv(game, skip=4)
    env.reset()
    obs, reward, *_ = env.step(2)
    assert reward == 4.0 and game.actions == [2, 2, 2, 2]
    assert obs[0, 0, 0] == max(3 * 10 + 100, 4 * 10)  # frames 3 and 4
    with pytest.raises(ValueError, match="skip=0"):
        ours.MaxAndSkipEnv(game, skip=0)


def test_max_and_skip_images_only_the_two_frames_it_reads(monkeypatch):
    """Under the frame skip, RLlib's order grayscales and resizes every frame; only the last
    two reach the maximum, so the others are stepped beneath the image wrappers (the same
    rewards, ends and observations: test_new_stack_wrapping_plays_as_rllibs)."""
    imaged = []
    observation = ours.GrayScaleAndResize.observation
    monkeypatch.setattr(
        ours.GrayScaleAndResize,
        "observation",
        lambda self, frame: imaged.append(1) or observation(self, frame),
    )
    env = ours.MaxAndSkipEnv(ours.NormalizedImageEnv(ours.GrayScaleAndResize(_catch(), 42)), 4)
    env.reset(seed=0)
    imaged.clear()
    obs, *_ = env.step(0)
    assert len(imaged) == 2 and obs.shape == (42, 42, 1)


def test_episodic_life_ends_episodes_at_lost_lives_and_resets_the_game_at_game_over():
    game = ScriptedALE(life_losses=(2, 4, 6))
    env = ours.EpisodicLifeEnv(game)
    env.reset()
    assert game.resets == 1 and env.lives == 3
    assert env.step(0)[2] is False
    assert env.step(0)[2] is True  # the first life lost: the episode ends
    env.reset()  # not a game over: one NOOP step, no reset of the game
    assert game.resets == 1 and game.t == 3 and env.lives == 2
    assert env.step(0)[2] is True
    env.reset()
    assert env.step(0)[2] is True  # the last life: the game's own termination
    env.reset()
    assert game.resets == 2 and env.lives == 3


def test_noop_reset_steps_noop_a_random_or_fixed_number_of_times():
    game = ScriptedALE(life_losses=())
    env = ours.NoopResetEnv(game, noop_max=5)
    env.override_num_noops = 3
    obs, _ = env.reset(seed=0)
    assert game.actions == [0, 0, 0] and obs[0, 0, 0] == 3 * 10 + 100
    env.override_num_noops = None
    counts = set()
    for seed in range(30):
        game.actions.clear()
        env.reset(seed=seed)
        counts.add(len(game.actions))
    assert counts <= set(range(1, 6)) and len(counts) > 2
    with pytest.raises(ValueError, match="NOOP"):
        ours.NoopResetEnv(ScriptedALE(meanings=("FIRE", "NOOP", "RIGHT")))


def test_fire_reset_presses_fire_then_action_two():
    game = ScriptedALE(life_losses=())
    env = ours.FireResetEnv(game)
    env.reset()
    assert game.actions == [1, 2]
    with pytest.raises(ValueError, match="FIRE"):
        ours.FireResetEnv(ScriptedALE(meanings=("NOOP", "RIGHT", "FIRE")))


def test_frame_stack_normalize_and_grayscale_resize():
    game = ScriptedALE(life_losses=())
    stacked = ours.FrameStack(ours.NormalizedImageEnv(game), k=3)
    assert stacked.observation_space.shape == (2, 2, 3)
    assert stacked.observation_space.dtype == np.float32
    obs, _ = stacked.reset()
    np.testing.assert_array_equal(obs[0, 0], [-1.0, -1.0, -1.0])  # the first frame, 3 times
    obs, *_ = stacked.step(0)
    obs, *_ = stacked.step(0)
    np.testing.assert_allclose(obs[0, 0], [-1.0, 110 / 128 - 1, 20 / 128 - 1])  # oldest first

    frame = np.zeros((4, 4, 3), np.uint8)
    frame[:2, :2] = (255, 0, 0)
    warped = ours.WarpFrame(ScriptedALE(), dim=2).observation(frame)
    assert warped.shape == (2, 2, 1) and warped.dtype == np.uint8
    np.testing.assert_array_equal(warped[..., 0], [[76, 0], [0, 0]])  # OpenCV's red


@pytest.mark.parametrize(
    ("rgb2gray", "resize"), [(rgb2gray, resize), (numpy_rgb2gray, numpy_resize)], ids=["", "numpy"]
)
def test_rgb2gray_and_resize_match_opencv_values(rgb2gray, resize):
    pixels = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]]], np.uint8)
    np.testing.assert_array_equal(rgb2gray(pixels), [[76, 150, 29, 255]])  # cv2's outputs
    np.testing.assert_allclose(
        rgb2gray(pixels.astype(np.float32) / 255), [[0.299, 0.587, 0.114, 1.0]], rtol=1e-6
    )
    # 3 -> 2 pixels: each output covers 1.5 inputs.
    row = np.array([[0.0, 3.0, 6.0]], np.float32)
    np.testing.assert_allclose(resize(row, 1, 2), [[1.0, 5.0]])
    with pytest.raises(ValueError, match="rgb2gray"):
        rgb2gray(np.zeros((2, 2)))


def test_frames_go_through_opencv_where_installed_and_numpy_is_within_a_level():
    cv2 = pytest.importorskip("cv2")
    env = gym.make("localrl/TinyCatch-v0", frameskip=1, repeat_action_probability=0.0)
    frames = [env.reset(seed=0)[0]] + [env.step(i % 3)[0] for i in range(20)]
    noise = np.random.default_rng(0).integers(0, 256, (210, 160, 3), dtype=np.uint8)
    for frame in [*frames, noise]:
        gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
        np.testing.assert_array_equal(rgb2gray(frame), gray)
        scaled = cv2.resize(gray, (42, 42), interpolation=cv2.INTER_AREA)
        np.testing.assert_array_equal(resize(gray[..., None], 42, 42), scaled[..., None])
        # Without OpenCV: the same but for a rounding at an exact half, here and there.
        for ours_, theirs in ((numpy_rgb2gray(frame), gray), (numpy_resize(gray, 42, 42), scaled)):
            difference = np.abs(ours_.astype(int) - theirs)
            assert difference.max() <= 1 and (difference > 0).mean() < 0.01


def test_is_atari_as_rllib(rllib):
    for env in ("ale_py:ALE/Pong-v5", "ALE/Breakout-v5", CATCH, "CartPole-v1"):
        assert ours.is_atari(env) == rllib.is_atari(env)
    catch, cartpole = _catch(), gym.make("CartPole-v1")
    assert ours.is_atari(catch) is rllib.is_atari(catch) is False
    assert ours.is_atari(cartpole) is rllib.is_atari(cartpole) is False


# -- TinyCatch --------------------------------------------------------------------------------
def test_tiny_catch_has_ales_surface_and_passes_gymnasiums_checks():
    from gymnasium.utils.env_checker import check_env

    env = _catch()
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space == gym.spaces.Box(0, 255, (84, 84, 3), np.uint8)
    assert env.unwrapped.get_action_meanings() == ["NOOP", "RIGHT", "LEFT"]
    _, info = env.reset(seed=0)
    assert env.unwrapped.ale.lives() == info["lives"] == 3
    full = _catch(full_action_space=True)
    assert full.action_space.n == 18
    assert full.unwrapped.get_action_meanings() == list(ALE_ACTION_MEANINGS)
    # ALE v5's defaults when made without arguments.
    default = gym.make(CATCH).unwrapped
    assert (default._frameskip, default.repeat_action_probability) == ((4, 5), 0.25)


def test_tiny_catch_frameskip_repeats_the_action_and_sums_the_rewards():
    skipping = TinyCatch(frameskip=4, repeat_action_probability=0.0)
    single = TinyCatch(frameskip=1, repeat_action_probability=0.0)
    skipping.reset(seed=11)
    single.reset(seed=11)
    for action in np.random.default_rng(0).integers(3, size=120):
        obs_a, reward_a, term_a, *_ = skipping.step(int(action))
        reward_b = 0.0
        for _ in range(4):
            obs_b, reward, term_b, *_ = single.step(int(action))
            reward_b += reward
            if term_b:
                break
        np.testing.assert_array_equal(obs_a, obs_b)
        assert (reward_a, term_a) == (reward_b, term_b)
        if term_a:
            break


def test_tiny_catch_rewards_catches_and_misses_and_ends_the_game():
    env = TinyCatch(frameskip=1, repeat_action_probability=0.0, balls_per_game=4, lives=2)
    env.reset(seed=2)
    rewards, terminated = [], False
    while not terminated:
        ball = env._ball  # follow the ball: catches; standing still would miss some
        move = 0 if ball is None else np.sign(ball[0] + 2 - (env._paddle_x + 6))
        action = {0: 0, 1: 1, -1: 2}[int(move)]
        _, reward, terminated, truncated, info = env.step(action)
        assert not truncated
        if reward:
            rewards.append(reward)
    assert rewards == [1.0] * 4 and info["lives"] == 2


def test_tiny_catch_refuses_bad_arguments():
    with pytest.raises(ValueError, match="frameskip=0"):
        TinyCatch(frameskip=0)
    with pytest.raises(ValueError, match="repeat_action_probability=1.5"):
        TinyCatch(repeat_action_probability=1.5)
    with pytest.raises(ValueError, match="action=7"):
        TinyCatch().step(7)
    with pytest.raises(TypeError):
        gym.make(CATCH, obs_type="grayscale")


def test_importing_trainer_registers_tiny_catch_by_name_only():
    # Registered when trainer is imported (above), naming the module: nothing is imported
    # until gym.make (worker processes import trainer, so the id works there too).
    spec = gym.spec(CATCH)
    assert spec.entry_point == "trainer.examples.envs.classes.tiny_catch:TinyCatch"
    assert spec.max_episode_steps is None  # the wrappers' TimeLimit sets it, as for ALE
    assert spec.kwargs == {
        "frameskip": 4,
        "repeat_action_probability": 0.25,
        "full_action_space": False,
    }
