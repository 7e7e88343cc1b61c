"""The episode replay buffers beyond RLlib's own test files: eviction of episodes that arrive in
chunks, the step rows against the episodes, observations that are not plain arrays, sequences,
metrics, states that do not fit, and bad arguments."""

import gymnasium as gym
import numpy as np
import ormsgpack
import pytest

from trainer import SingleAgentEpisode
from trainer.replay_buffers import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer

BUFFERS = [EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer]


def _chunks(
    id_: str, length: int, chunk: int, *, base: float = 0.0, terminated: bool = True
) -> list[SingleAgentEpisode]:
    """An episode of `length` steps (observation t is base + t, reward of step t is t + 1) cut
    into chunks of `chunk` steps."""
    episode = SingleAgentEpisode(id_)
    episode.add_env_reset(np.full(2, base, np.float32))
    chunks = []
    for t in range(length):
        episode.add_env_step(
            np.full(2, base + t + 1, np.float32),
            t % 3,
            float(t + 1),
            terminated=terminated and t == length - 1,
        )
        if (t + 1) % chunk == 0 or t == length - 1:
            chunks.append(episode.to_numpy())
            if not episode.is_done:
                episode = episode.cut()
    return chunks


@pytest.mark.parametrize("cls", BUFFERS)
def test_interleaved_chunks_form_whole_episodes_and_leave_whole(cls):
    buffer = cls(capacity=35, seed=0)
    a, b, c = _chunks("a", 12, 4), _chunks("b", 12, 4, base=100), _chunks("c", 20, 5, base=200)
    for pair in zip(a, b, strict=True):  # a and b arrive interleaved, a chunk at a time
        buffer.add(list(pair))
    assert [len(ep) for ep in buffer.episodes] == [12, 12]
    assert buffer.get_num_timesteps() == 24
    for part in c:  # c overflows the capacity: a (the oldest) goes, all 12 steps at once
        buffer.add(part)
    assert [ep.id_ for ep in buffer.episodes] == ["b", "c"]
    assert buffer.get_num_timesteps() == 32 and buffer.get_num_episodes_evicted() == 1
    # No step of the evicted episode is drawn; n-step returns run across the chunk joins.
    batch = buffer.sample_transitions(500, n_step=3, gamma=1.0)
    assert not np.any(batch["obs"][:, 0] < 100)
    starts = batch["obs"][:, 0] % 100
    lengths = np.where(batch["obs"][:, 0] >= 200, 20, 12)
    steps = np.minimum(3, lengths - starts).astype(int)
    if cls is PrioritizedEpisodeReplayBuffer:
        # RLlib's sample() draws again where fewer than n steps follow; DQN's arrays do not.
        assert np.any(steps < 3)
        episodes = buffer.sample(200, n_step=3)
        assert all(ep.get_observations(-1)[0] - ep.get_observations(0)[0] == 3 for ep in episodes)
    np.testing.assert_array_equal(batch["n_steps_taken"], steps)
    np.testing.assert_array_equal(batch["new_obs"][:, 0], batch["obs"][:, 0] + steps)
    expected = [sum(s + 1 + k for k in range(n)) for s, n in zip(starts, steps, strict=True)]
    np.testing.assert_allclose(batch["rewards"], expected)
    np.testing.assert_array_equal(batch["terminateds"], starts + steps == lengths)


def test_prioritized_buffer_drops_an_incoming_chunk_of_an_evicted_episode():
    buffer = PrioritizedEpisodeReplayBuffer(capacity=20, seed=0)
    first, second = _chunks("a", 10, 5, terminated=False)
    buffer.add(first)
    buffer.add(_chunks("b", 10, 10, base=100))
    # a's next chunk and a new episode overflow the capacity: a goes, with its new chunk
    # (RLlib's order: the oldest episode first, whatever arrives with it).
    buffer.add([second, *_chunks("c", 5, 5, base=200)])
    assert [ep.id_ for ep in buffer.episodes] == ["b", "c"]
    assert buffer.get_num_timesteps() == 15
    assert buffer.get_added_timesteps() == 20  # the dropped chunk does not count as added
    assert sorted(buffer._tree_idx_to_sample_idx[buffer._tree_idx_to_sample_idx >= 0]) == list(
        range(15)
    )


def test_dict_observations_are_read_from_the_episodes():
    space = gym.spaces.Dict({"pos": gym.spaces.Box(-100, 100, (2,)), "id": gym.spaces.Discrete(5)})
    episode = SingleAgentEpisode("d", observation_space=space, action_space=gym.spaces.Discrete(2))
    episode.add_env_reset({"pos": np.zeros(2, np.float32), "id": 0})
    for t in range(6):
        episode.add_env_step(
            {"pos": np.full(2, t + 1, np.float32), "id": t % 5}, t % 2, 1.0, terminated=t == 5
        )
    for cls in BUFFERS:
        buffer = cls(capacity=100, seed=0)
        buffer.add(episode.to_numpy())
        batch = buffer.sample_transitions(50, n_step=2, gamma=0.5)
        assert set(batch["obs"]) == {"pos", "id"} and batch["obs"]["pos"].shape == (50, 2)
        np.testing.assert_array_equal(
            batch["new_obs"]["pos"][:, 0], batch["obs"]["pos"][:, 0] + batch["n_steps_taken"]
        )
        sampled = buffer.sample(10, n_step=2, sample_episodes=True)
        assert all(set(ep.get_observations(0)) == {"pos", "id"} for ep in sampled)


def test_uniform_buffer_sequences_and_default_batches():
    buffer = EpisodeReplayBuffer(capacity=1000, batch_size_B=4, batch_length_T=6, seed=0)
    for i in range(5):
        buffer.add(_chunks(str(i), 30, 30, base=100 * i))
    # RLlib's default: a dict of [B, T] arrays.
    batch = buffer.sample()
    assert batch["obs"].shape == (4, 6, 2) and batch["is_first"][:, 0].all()
    assert buffer.get_sampled_timesteps() == 24
    # Sequences: slices of up to T steps with a lookback, until B steps are gathered.
    sequences = buffer.sample(
        batch_size_B=20, batch_length_T=5, n_step=1, lookback=2, sample_episodes=True
    )
    for sequence in sequences:
        assert 1 <= len(sequence) <= 5
        first = sequence.get_observations(0)[0]
        assert sequence.t_started == int(first) % 100
        if sequence.t_started >= 2:
            assert sequence.get_observations(-1, neg_index_as_lookback=True)[0] == first - 1
        assert sequence.get_extra_model_outputs("weights").tolist() == [1.0] * len(sequence)
    with pytest.raises(ValueError, match="n_step is required"):
        buffer.sample(4, sample_episodes=True)
    with pytest.raises(ValueError, match="sequences are sampled with n_step=1"):
        buffer.sample(4, batch_length_T=5, n_step=3, sample_episodes=True)


@pytest.mark.parametrize("cls", BUFFERS)
def test_metrics_report_rllib_keys(cls):
    buffer = cls(capacity=25, seed=0)
    buffer.add(_chunks("a", 20, 20))
    buffer.add(_chunks("b", 10, 10, base=100))
    buffer.sample(8, n_step=2, sample_episodes=True)
    metrics = buffer.get_metrics()
    values = {
        key: value.peek() if hasattr(value, "peek") else value for key, value in metrics.items()
    }
    assert values["num_env_steps_added_lifetime"] == 30
    assert values["num_episodes_evicted_lifetime"] == 1
    assert values["num_env_steps_evicted"] == 20
    assert values["num_env_steps_sampled"] == 8 and values["actual_n_step"] == 2.0
    assert 0 < values["num_episodes_per_sample"] <= 8


@pytest.mark.parametrize("cls", BUFFERS)
def test_a_state_that_does_not_fit_is_refused_and_changes_nothing(cls):
    buffer = cls(capacity=100, seed=0)
    buffer.add(_chunks("a", 10, 10))
    state = ormsgpack.unpackb(
        ormsgpack.packb(buffer.get_state(), option=ormsgpack.OPT_SERIALIZE_NUMPY)
    )
    other = cls(capacity=100, seed=1)
    other.add(_chunks("b", 5, 5, base=100))
    broken = dict(state, _indices=dict(state["_indices"], timesteps=[0] * 10))
    with pytest.raises(ValueError, match="step rows"):
        other.set_state(broken)
    broken = dict(state, episode_id_to_index=[["zzz", 0]])
    with pytest.raises(ValueError, match="episode_id_to_index"):
        other.set_state(broken)
    if cls is PrioritizedEpisodeReplayBuffer:
        with pytest.raises(ValueError, match="priorities"):
            other.set_state(dict(state, _priorities=[1.0]))
    with pytest.raises(ValueError, match="capacity=100"):
        cls(capacity=50).set_state(state)
    assert [ep.id_ for ep in other.episodes] == ["b"] and len(other) == 5
    other.set_state(state)
    assert [ep.id_ for ep in other.episodes] == ["a"] and len(other) == 10


def test_bad_arguments_name_the_setting():
    buffer = PrioritizedEpisodeReplayBuffer(capacity=100)
    with pytest.raises(ValueError, match="holds no env steps"):
        buffer.sample(4)
    buffer.add(_chunks("a", 10, 10))
    with pytest.raises(ValueError, match=r"n_step=\(3, 3\).*low < high"):
        buffer.sample(4, n_step=(3, 3))
    with pytest.raises(ValueError, match="num_items=4 or batch_size_B=4"):
        buffer.sample(4, batch_size_B=4)
    with pytest.raises(ValueError, match=r"beta=-1"):
        buffer.sample(4, beta=-1)
    buffer.sample(4)
    with pytest.raises(ValueError, match="3 priorities for the 4 steps"):
        buffer.update_priorities(np.ones(3))
    with pytest.raises(ValueError, match=r"alpha=-0.5"):
        PrioritizedEpisodeReplayBuffer(alpha=-0.5)
    with pytest.raises(ValueError, match=r"capacity=0"):
        EpisodeReplayBuffer(capacity=0)
    with pytest.raises(ValueError, match="hardly any stored step"):
        buffer.sample(4, n_step=11)


@pytest.mark.parametrize("cls", BUFFERS)
def test_many_evictions_compact_the_rows_and_keep_the_contents(cls):
    buffer = cls(capacity=1000, seed=0)
    for i in range(1000):  # 10,000 steps: 900 episodes evicted, their rows compacted away
        buffer.add(_chunks(str(i), 10, 10, base=1000 * i))
    assert buffer.get_num_timesteps() == 1000 and buffer.get_num_episodes() == 100
    assert [ep.id_ for ep in buffer.episodes] == [str(i) for i in range(900, 1000)]
    batch = buffer.sample_transitions(300, n_step=2)
    assert np.all(batch["obs"][:, 0] >= 900_000)
    episodes = buffer.sample(50, n_step=1, sample_episodes=True)
    assert all(ep.get_observations(0)[0] >= 900_000 for ep in episodes)
    if cls is PrioritizedEpisodeReplayBuffer:
        mapping = buffer._tree_idx_to_sample_idx
        assert sorted(mapping[mapping >= 0]) == list(range(1000))


def test_a_prioritized_state_naming_a_node_twice_is_refused():
    from trainer.replay_buffers import PrioritizedEpisodeReplayBuffer

    buffer = PrioritizedEpisodeReplayBuffer(capacity=8)
    state = buffer.get_state()
    free = np.array(state["_free_nodes"]).copy()
    free[1] = free[0]
    state["_free_nodes"] = free
    with pytest.raises(ValueError, match="once each"):
        buffer.set_state(state)
