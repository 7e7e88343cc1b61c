"""`TinyCatch`: a small Atari-like game with ALE's surface, registered as
`localrl/TinyCatch-v0`.

RLlib's CNN examples play ALE Atari games (`ale_py:ALE/Pong-v5`), which this project does not
ship. TinyCatch stands in for them: it is made with `gym.make` and takes ALE's keyword
arguments (`frameskip`, `repeat_action_probability`, `full_action_space`), returns 84x84 RGB
frames (uint8), and has what RLlib's Atari wrappers read (`unwrapped.get_action_meanings()`,
NOOP first, and `unwrapped.ale.lives()`), so RLlib's Atari scripts run on it unchanged with
`--env=localrl/TinyCatch-v0`. Learning it takes a CNN minutes on a laptop, not hours.

The game: balls drop one after another from the top of the screen, each at a random column and
with a random sideways drift (bouncing off the side walls); a paddle at the bottom moves left
or right and catches them. A catch pays +1, a miss costs -1 and a life. The game ends after
`balls_per_game` balls or when the lives run out.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

#: ALE's 18 action meanings, in ALE's order (the full action space).
ALE_ACTION_MEANINGS = (
    "NOOP",
    "FIRE",
    "UP",
    "RIGHT",
    "LEFT",
    "DOWN",
    "UPRIGHT",
    "UPLEFT",
    "DOWNRIGHT",
    "DOWNLEFT",
    "UPFIRE",
    "RIGHTFIRE",
    "LEFTFIRE",
    "DOWNFIRE",
    "UPRIGHTFIRE",
    "UPLEFTFIRE",
    "DOWNRIGHTFIRE",
    "DOWNLEFTFIRE",
)
#: The game's minimal action set (ALE's default, `full_action_space=False`).
MINIMAL_ACTION_MEANINGS = ("NOOP", "RIGHT", "LEFT")

SCREEN = 84  # pixels, square
WALL = 4  # the grey top wall's height
PADDLE_WIDTH, PADDLE_HEIGHT, PADDLE_SPEED = 16, 3, 4
PADDLE_TOP = SCREEN - 6
BALL_SIZE, BALL_FALL_SPEED = 4, 3
#: Frames without a ball: at the start of a game (as ALE's games pause before the serve), after
#: a catch and after a miss.
SERVE_DELAY, CATCH_DELAY, MISS_DELAY = 100, 4, 8

WALL_COLOR = (142, 142, 142)
PADDLE_COLOR = (200, 72, 72)
BALL_COLOR = (236, 236, 236)


class TinyCatchALE:
    """The part of ALE's interface (`env.unwrapped.ale`) that wrappers read: lives and frame
    counts."""

    def __init__(self, game: TinyCatch):
        self._game = game

    def lives(self) -> int:
        return self._game.lives

    def game_over(self) -> bool:
        return self._game.lives <= 0 or self._game.balls_left <= 0

    def getEpisodeFrameNumber(self) -> int:  # noqa: N802 - ALE's name
        return self._game.episode_frame_number

    def getFrameNumber(self) -> int:  # noqa: N802 - ALE's name
        return self._game.frame_number


class TinyCatch(gym.Env):
    """Catch the falling balls with the paddle (see the module docstring).

    Observations: the 84x84 RGB screen, a (84, 84, 3) uint8 Box. Actions: Discrete(3), NOOP,
    RIGHT, LEFT (the paddle moves 4 pixels a frame); with `full_action_space=True` ALE's 18
    actions, each moving the paddle as its RIGHT/LEFT part says.

    ALE's arguments: `frameskip` (an int, or `(low, high)` for a random count in [low, high)
    per step; default 4 as ALE v5) repeats each action that many frames and sums the rewards;
    `repeat_action_probability` (default 0.25 as ALE v5) repeats, on each frame, the previous
    frame's action instead of the new one with that probability (sticky actions).

    The game's own: `balls_per_game` (default 10), `lives` (default 3). `info` has ALE's
    `lives`, `episode_frame_number` and `frame_number`.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}

    def __init__(
        self,
        frameskip: int | tuple[int, int] = 4,
        repeat_action_probability: float = 0.25,
        full_action_space: bool = False,
        balls_per_game: int = 10,
        lives: int = 3,
        render_mode: str | None = None,
    ):
        self._frameskip = self._checked_frameskip(frameskip)
        if not 0.0 <= float(repeat_action_probability) <= 1.0:
            raise ValueError(
                f"TinyCatch: repeat_action_probability={repeat_action_probability!r}: must be "
                "in [0, 1]"
            )
        self.repeat_action_probability = float(repeat_action_probability)
        if int(balls_per_game) < 1 or int(lives) < 1:
            raise ValueError(
                f"TinyCatch: balls_per_game={balls_per_game!r}, lives={lives!r}: both must be >= 1"
            )
        if render_mode not in (None, "rgb_array"):
            raise ValueError(
                f"TinyCatch: render_mode={render_mode!r}: allowed are None and 'rgb_array'"
            )
        self.render_mode = render_mode
        self.balls_per_game = int(balls_per_game)
        self.start_lives = int(lives)
        self._meanings = ALE_ACTION_MEANINGS if full_action_space else MINIMAL_ACTION_MEANINGS
        # The paddle's move per action: +1 right, -1 left, 0 otherwise.
        self._moves = np.array(
            [("RIGHT" in m) - ("LEFT" in m) for m in self._meanings], dtype=np.int64
        )
        self.action_space = gym.spaces.Discrete(len(self._meanings))
        self.observation_space = gym.spaces.Box(0, 255, (SCREEN, SCREEN, 3), np.uint8)
        self.ale = TinyCatchALE(self)
        self.frame_number = 0
        self._new_game()

    @staticmethod
    def _checked_frameskip(frameskip: Any) -> tuple[int, int]:
        """[low, high) of the frames per step."""
        if isinstance(frameskip, (tuple, list)) and len(frameskip) == 2:
            low, high = int(frameskip[0]), int(frameskip[1])
        elif isinstance(frameskip, (int, np.integer)) and not isinstance(frameskip, bool):
            low, high = int(frameskip), int(frameskip) + 1
        else:
            low = high = 0
        if low < 1 or high <= low:
            raise ValueError(
                f"TinyCatch: frameskip={frameskip!r}: expected an int >= 1 or a (low, high) "
                "pair with 1 <= low < high"
            )
        return low, high

    def get_action_meanings(self) -> list[str]:
        """ALE's names of the actions, "NOOP" first."""
        return list(self._meanings)

    def _new_game(self) -> None:
        self.lives = self.start_lives
        self.balls_left = self.balls_per_game
        self.episode_frame_number = 0
        self._paddle_x = (SCREEN - PADDLE_WIDTH) // 2
        self._ball: np.ndarray | None = None  # x, y, x-velocity
        self._wait = SERVE_DELAY
        self._last_action = 0

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            # A seeded reset starts afresh, as ALE's reloads the game: the frame count too.
            self.frame_number = 0
        self._new_game()
        return self._screen(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.action_space.contains(action):
            raise ValueError(f"TinyCatch: action={action!r} is not in {self.action_space}")
        low, high = self._frameskip
        frames = low if high == low + 1 else int(self.np_random.integers(low, high))
        reward = 0.0
        for _ in range(frames):
            # Sticky actions, per frame, as ALE.
            if self.np_random.random() >= self.repeat_action_probability:
                self._last_action = int(action)
            reward += self._frame(self._last_action)
            if self._game_over():
                break
        return self._screen(), reward, self._game_over(), False, self._info()

    def _game_over(self) -> bool:
        return self.lives <= 0 or self.balls_left <= 0

    def _frame(self, action: int) -> float:
        """Advances one frame; the reward of that frame."""
        self.frame_number += 1
        self.episode_frame_number += 1
        self._paddle_x = int(
            np.clip(self._paddle_x + PADDLE_SPEED * self._moves[action], 0, SCREEN - PADDLE_WIDTH)
        )
        if self._ball is None:
            self._wait -= 1
            if self._wait <= 0:
                x = int(self.np_random.integers(0, SCREEN - BALL_SIZE + 1))
                drift = int(self.np_random.integers(-1, 2))
                self._ball = np.array([x, WALL, drift])
            return 0.0
        ball = self._ball
        ball[0] += ball[2]
        if ball[0] < 0 or ball[0] > SCREEN - BALL_SIZE:  # bounce off a side wall
            ball[2] = -ball[2]
            ball[0] = int(np.clip(ball[0], 0, SCREEN - BALL_SIZE))
        ball[1] += BALL_FALL_SPEED
        if ball[1] + BALL_SIZE < PADDLE_TOP:
            return 0.0
        # The ball reached the paddle's height: caught if they overlap sideways.
        self._ball = None
        self.balls_left -= 1
        if ball[0] + BALL_SIZE > self._paddle_x and ball[0] < self._paddle_x + PADDLE_WIDTH:
            self._wait = CATCH_DELAY
            return 1.0
        self.lives -= 1
        self._wait = MISS_DELAY
        return -1.0

    def _screen(self) -> np.ndarray:
        screen = np.zeros((SCREEN, SCREEN, 3), dtype=np.uint8)
        screen[:WALL] = WALL_COLOR
        left = self._paddle_x
        screen[PADDLE_TOP : PADDLE_TOP + PADDLE_HEIGHT, left : left + PADDLE_WIDTH] = PADDLE_COLOR
        if self._ball is not None:
            x, y = int(self._ball[0]), int(self._ball[1])
            screen[y : y + BALL_SIZE, x : x + BALL_SIZE] = BALL_COLOR
        return screen

    def _info(self) -> dict[str, Any]:
        return {
            "lives": self.lives,
            "episode_frame_number": self.episode_frame_number,
            "frame_number": self.frame_number,
        }

    def render(self) -> np.ndarray | None:
        """The screen (`render_mode="rgb_array"`), None without a render mode."""
        return self._screen() if self.render_mode == "rgb_array" else None
