"""`ParametricRecSys`: a recommender-system env with random user and document embeddings (RLlib's
example env, RecSim's observation and action form, single-agent)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x))
    return e / e.sum()


class ParametricRecSys(gym.Env):
    """Each step the agent sees a user and `num_docs_to_select_from` documents (embeddings in
    [-1, 1]) and recommends a slate of `slate_size` of them (MultiDiscrete). The user clicks one
    (or none) with softmax probabilities of the documents' softmaxed affinities; a click pays
    `(1 - regret) * 100` and costs the user 1.0 of `user_time_budget`; the episode ends
    (terminated and truncated, as in RLlib) when the budget is spent.

    `num_docs_in_db` / `num_users_in_db`: fixed pools to draw from (None: fresh embeddings).
    """

    def __init__(
        self,
        embedding_size: int = 20,
        num_docs_to_select_from: int = 10,
        slate_size: int = 1,
        num_docs_in_db: int | None = None,
        num_users_in_db: int | None = None,
        user_time_budget: float = 60.0,
    ):
        self.embedding_size = embedding_size
        self.num_docs_to_select_from = num_docs_to_select_from
        self.slate_size = slate_size
        self.num_docs_in_db = num_docs_in_db
        self.docs_db: list | None = None
        self.num_users_in_db = num_users_in_db
        self.users_db: list | None = None
        self.current_user: np.ndarray | None = None
        self.user_time_budget = user_time_budget
        self.current_user_budget = user_time_budget
        embedding = gym.spaces.Box(-1.0, 1.0, shape=(self.embedding_size,), dtype=np.float32)
        self.observation_space: gym.spaces.Dict = gym.spaces.Dict(
            {
                "doc": gym.spaces.Dict(
                    {str(i): embedding for i in range(self.num_docs_to_select_from)}
                ),
                "user": embedding,
                "response": gym.spaces.Tuple(
                    [
                        gym.spaces.Dict(
                            {
                                "click": gym.spaces.Discrete(2),
                                "engagement": gym.spaces.Box(
                                    0.0, 100.0, shape=(), dtype=np.float32
                                ),
                            }
                        )
                        for _ in range(self.slate_size)
                    ]
                ),
            }
        )
        self.action_space = gym.spaces.MultiDiscrete(
            [self.num_docs_to_select_from for _ in range(self.slate_size)]
        )

    def _get_embedding(self) -> np.ndarray:
        return self.np_random.uniform(-1, 1, size=(self.embedding_size,)).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.current_user_budget = self.user_time_budget
        if self.num_users_in_db is not None:
            if self.users_db is None:
                self.users_db = [self._get_embedding() for _ in range(self.num_users_in_db)]
            self.current_user = self.users_db[self.np_random.choice(self.num_users_in_db)]
        else:
            self.current_user = self._get_embedding()
        return self._get_obs(), {}

    def step(self, action):
        if self.current_user is None:
            raise RuntimeError("ParametricRecSys: call reset() before step()")
        user = self.current_user
        scores = softmax(np.array([np.dot(user, doc) for doc in self.currently_suggested_docs]))
        best_reward = np.max(scores)
        user_doc_overlaps = np.array([scores[a] for a in action] + [0.0])
        which_clicked = self.np_random.choice(
            np.arange(self.slate_size + 1), p=softmax(user_doc_overlaps)
        )
        reward = 0.0
        if which_clicked < self.slate_size:
            regret = best_reward - user_doc_overlaps[which_clicked]
            reward = float((1 - regret) * 100)
            self.current_user_budget -= 1.0
        done = self.current_user_budget <= 0.0
        response = tuple(
            {
                "click": int(i == which_clicked),
                "engagement": np.array(reward if i == which_clicked else 0.0, np.float32),
            }
            for i in range(self.slate_size)
        )
        return self._get_obs(response=response), reward, done, done, {}

    def _get_obs(self, response: tuple | None = None) -> dict:
        if self.num_docs_in_db is not None:
            if self.docs_db is None:
                self.docs_db = [self._get_embedding() for _ in range(self.num_docs_in_db)]
            picks = self.np_random.choice(
                self.num_docs_in_db, size=(self.num_docs_to_select_from,), replace=False
            )
            self.currently_suggested_docs = [self.docs_db[i] for i in picks]
        else:
            self.currently_suggested_docs = [
                self._get_embedding() for _ in range(self.num_docs_to_select_from)
            ]
        if not response:
            response = self.observation_space["response"].sample()
        if self.current_user is None:  # reset() draws one
            raise RuntimeError("call reset() before the first observation")
        return {
            "user": self.current_user.astype(np.float32),
            "doc": {str(i): d for i, d in enumerate(self.currently_suggested_docs)},
            "response": response,
        }
