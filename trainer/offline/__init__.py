"""Offline data: RLlib 2.60's `offline_data()` on files, without Ray Data.

Reading (`offline_data(input_=...)`, for the offline algorithms: BC, MARWIL, CQL, IQL)::

    input_ (paths, globs, folders; "local://" taken off)
      -> dataset files (.parquet for read_parquet, .json/.jsonl for read_json)   files.py
      -> row groups, read one at a time with pyarrow (a dataset larger than memory streams)
      -> transitions: obs, actions, rewards, new_obs, terminateds, truncateds and every other
         column (action_logp, ...), from RLlib's column tables (one row per env step,
         `input_read_schema` renaming columns) or its serialized episodes (`item`, msgpack,
         `input_read_episodes=True`)                                             reading.py
      -> a shuffle pool of a few row groups -> train batches of `train_batch_size_per_learner`
         rows, epoch after epoch                                                 reading.py

Recording (`offline_data(output=...)`, any algorithm): the episodes each training EnvRunner
returns go, in the main process, into that runner's rows; every `output_max_rows_per_file`
rows (else every sample) one parquet file is written beside its final name and renamed into
place, so a killed run leaves whole files only                                   recording.py

Both formats are RLlib's: a column table has one row per env step (`eps_id`, `agent_id`,
`module_id`, `obs`, `actions`, `rewards`, `new_obs`, `terminateds`, `truncateds`, and the
episode's extra model outputs); an episode table has one row per episode, its column `item`
holding `SingleAgentEpisode.get_state()` packed with msgpack in msgpack-numpy's layout
(codec.py). pyarrow and msgpack are the `offline` extra, imported when data is read or written.
"""
