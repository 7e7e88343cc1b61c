"""The "ray" backend: each remote EnvRunner is a Ray actor holding the same `EnvRunner`, on any
node of the cluster the driver is connected to; `RayRunner` is the group's `RunnerHandle` on one.

    driver (this process)                      actor (`_EnvRunnerActor`, on some node)
    RayRunner.send(request)  -- answer.remote -->  RunnerServer.answer(request) -> Reply
    RayRunner.read_reply()   <-- ray.get ------    (the protocol of `trainer.runners.protocol`,
                                                    served by `trainer.runners.worker`'s code)

Requests to one actor run one at a time, in the order sent (its default concurrency group has
one thread). A second group holds one call, `watch`, that never returns: when the actor dies
(its process killed, `ray.kill`, its node lost) that call fails at once, so `is_alive()` is one
non-blocking `ray.wait`, and a runner that died while idle is noticed like a dead process.

Resources mean what they mean in RLlib: `num_cpus_per_env_runner`, `num_gpus_per_env_runner`,
`custom_resources_per_env_runner`; actors are spread over the nodes ("SPREAD"), or, in a Ray
Tune trial, placed in the trial's placement group. The driver
joins the cluster the user already joined (`ray.init(...)` before `build()`), else
`env_runners(ray_address=...)` or `RAY_ADDRESS`, else starts a local Ray instance. A Ray
started here (`connect`) is shut down by the `stop()` of the algorithm whose build started it
(`ray_started_since`, `shutdown_ray`); a Ray the user started stays up.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from trainer.errors import EnvRunnerCrashed, EnvRunnerTimeout
from trainer.runners import protocol
from trainer.runners.handle import RunnerBackend, RunnerHandle
from trainer.runners.worker import RunnerServer
from trainer.util.log import plain_text

#: Longest wait for a killed actor to be dead (Ray reports it within milliseconds here).
KILL_WAIT_S = 5.0

#: What `env_runners(backend="ray")` needs, and how to get it.
RAY_INSTALL_HINT = "pip install -e '.[ray]' (or pip install 'ray==2.60.0')"


def ray_installed() -> bool:
    import importlib.util

    if ray_is_stand_in():
        return False
    return importlib.util.find_spec("ray") is not None


#: Why `backend="ray"` cannot run under the RLlib launcher's stand-in for `ray`.
RAY_STAND_IN_HINT = (
    "`import ray` is localrl's stand-in here (the script runs under "
    "`python -m trainer run`): run it with `python -m trainer run --ray SCRIPT` "
    "(or LOCALRL_RLLIB_LAUNCHER=ray) to use the installed Ray"
)


#: The attribute by which an import finder on `sys.meta_path` says whether it serves `import ray`
#: with a stand-in: the RLlib launcher's finder (`trainer.launcher.finder.RLlibFinder`, in the
#: launcher layer above this one) has it.
RAY_STAND_IN = "serves_ray_stand_in"


def ray_is_stand_in() -> bool:
    """Whether `import ray` gives the RLlib launcher's stand-in (`trainer.launcher`) rather
    than the installed Ray."""
    finder = next((f for f in sys.meta_path if hasattr(f, RAY_STAND_IN)), None)
    return finder is not None and bool(getattr(finder, RAY_STAND_IN))


#: The Ray session `connect` started in this process (`_session` of it: the driver's node and
#: job ids), or None: the one an algorithm that started it shuts down (`shutdown_ray`).
_started_session: tuple[str, str] | None = None


def _session(ray: Any) -> tuple[str, str]:
    """The Ray session this process is connected to: its node id (a new local instance has a
    new one) and job id (a new connection to a cluster is a new job)."""
    context = ray.get_runtime_context()
    return (context.get_node_id(), context.get_job_id())


def connect(address: str | None) -> bool:
    """Joins a Ray cluster unless this process already has: `address`, else `RAY_ADDRESS`,
    else a new local instance. Whether it called `ray.init` (the session it started is
    `started_ray_session()`; a Ray this process joined before stays the user's)."""
    global _started_session
    import ray

    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    ray.init(address=address, include_dashboard=False, log_to_driver=True, configure_logging=False)
    _started_session = _session(ray)
    return True


def started_ray_session() -> tuple[str, str] | None:
    """The Ray session `connect` started, while this process is still connected to it; None
    when Ray is not running here, or runs as the user (or the Tune front) started it. Never
    imports Ray."""
    ray = sys.modules.get("ray")
    if _started_session is None or ray is None or ray_is_stand_in() or not ray.is_initialized():
        return None
    return _started_session if _session(ray) == _started_session else None


def ray_started_since(before: tuple[str, str] | None) -> tuple[str, str] | None:
    """The Ray session `connect` started since `started_ray_session()` gave `before`; None if
    it started none (Ray was running already, the user's or an earlier algorithm's)."""
    now = started_ray_session()
    return now if now != before else None


def shutdown_ray(session: tuple[str, str] | None) -> bool:
    """`ray.shutdown()` if this process is still connected to `session`, a Ray session
    `connect` started (`ray_started_since`); whether it shut it down. A Ray the user started
    (or one started since: another session) stays."""
    global _started_session
    if session is None or started_ray_session() != session:
        return False
    import ray

    ray.shutdown()
    _started_session = None
    return True


class _EnvRunnerActor:
    """The actor: a `RunnerServer` answering the protocol's requests."""

    def __init__(self, worker_index: int, main_pid: int):
        self._server = RunnerServer(worker_index, main_pid=main_pid)

    def answer(self, request: Any) -> protocol.Reply:
        reply = self._server.answer(request)
        if isinstance(request, protocol.Init) and isinstance(reply.value, dict):
            import ray

            reply.value["node_id"] = ray.get_runtime_context().get_node_id()  # where it runs
        return reply

    def watch(self) -> None:
        threading.Event().wait()  # never returns: it fails when the actor dies


#: The Ray actor classes made by `watched_actor_class`, by their base class.
_actor_classes: dict[type, Any] = {}


def watched_actor_class(base: Any, name: str) -> Any:
    """`base` (a class with a `watch` method that never returns) as a Ray actor class named
    `name`, its `watch` calls in a concurrency group of their own: a `watch` call in flight
    fails at once when the actor dies. Made once per base class (Ray imported here)."""
    actor_class = _actor_classes.get(base)
    if actor_class is None:
        import ray

        watch = ray.method(concurrency_group="watch")(base.watch)
        cls = type(name, (base,), {"watch": watch, "__module__": base.__module__})
        actor_class = _actor_classes[base] = ray.remote(concurrency_groups={"watch": 1})(cls)
    return actor_class


def death_reason(error: BaseException) -> str:
    """Ray's error for a dead actor as one line: its type and Ray's first line."""
    lines = plain_text(str(error)).strip().splitlines()
    return f"{type(error).__name__}{': ' + lines[0] if lines else ''}"


def kill_actor(actor: Any, watch: Any, timeout_s: float) -> None:
    """Kills `actor` and waits (at most `timeout_s`) until Ray has it dead, its `watch` call
    failed: `ray.kill` goes through Ray's control plane and returns at once, while calls go to
    the actor directly, so nothing runs on it after this and its resources are free for a
    replacement. An actor already gone, or Ray shutting down, is no error."""
    import ray

    try:
        ray.kill(actor, no_restart=True)
        ray.wait([watch], timeout=timeout_s)
    except Exception:  # noqa: BLE001 - already gone, or Ray is shutting down
        pass


def resources_hint(options: dict, settings: str) -> str:
    """For an actor that never answered its first call: what it asked of the cluster (its
    Ray `options`) and what the cluster has (an actor waiting for resources never starts,
    silently); `settings`: the config's settings that ask for fewer. "" when Ray cannot say."""
    import ray
    from ray.exceptions import RayError

    try:
        total, free = ray.cluster_resources(), ray.available_resources()
    except RayError:
        return ""
    asked = {
        "CPU": options.get("num_cpus") or 0,
        "GPU": options.get("num_gpus") or 0,
        **options.get("resources", {}),
    }
    asked = {name: amount for name, amount in asked.items() if amount}
    return (
        f"Its Ray actor asked for {asked} and may have waited for them: the cluster has "
        f"{ {name: total.get(name, 0) for name in asked} } in all, "
        f"{ {name: free.get(name, 0) for name in asked} } free now. Give the cluster "
        f"more resources or ask for fewer ({settings})."
    )


class RayRunner(RunnerHandle):
    """One Ray actor holding one `EnvRunner`."""

    def __init__(self, worker_index: int, options: dict):
        self.worker_index = worker_index
        self.healthy = True
        self.pid: int | None = None
        #: The Ray node the actor runs on (known from its `Init` reply).
        self.node_id: str | None = None
        self.options = options
        actor_class = watched_actor_class(_EnvRunnerActor, "EnvRunnerActor")
        self.actor = actor_class.options(**options).remote(worker_index, os.getpid())
        self._watch = self.actor.watch.remote()
        #: (request id, label, object ref) of each request sent and not yet read, oldest first.
        self._pending: deque[tuple[int, str, Any]] = deque()
        self._killed = False

    def send(self, request: protocol.Request, *, pickled: bytes | None = None) -> None:
        if self._killed or not self.is_alive():
            self.healthy = False
            raise EnvRunnerCrashed(
                self.worker_index,
                request.label,
                None,
                self.death_detail() or "its Ray actor is gone",
            )
        self._pending.append((request.request_id, request.label, self.actor.answer.remote(request)))

    def has_pending(self) -> bool:
        return bool(self._pending)

    def _ready(self, refs: list) -> list:
        import ray

        return ray.wait(refs, num_returns=len(refs), timeout=0)[0] if refs else []

    def reply_ready(self) -> bool:
        refs = [self._watch] + ([self._pending[0][2]] if self._pending else [])
        return bool(self._ready(refs))

    def read_reply(self, timeout: float) -> Any:
        import ray
        from ray.exceptions import RayError

        request_id, label, ref = self._pending[0]
        ready, _ = ray.wait([ref], timeout=max(timeout, 0))
        if not ready:
            raise self.timed_out(timeout)
        try:
            reply: protocol.Reply = ray.get(ref)
        except RayError as error:  # the actor died (RayActorError and its kin)
            self._pending.clear()
            self.kill()
            raise EnvRunnerCrashed(
                self.worker_index, label, None, self._death_text(error)
            ) from None
        self._pending.popleft()
        try:
            value = protocol.reply_value(reply, request_id, label, self.worker_index)
        except protocol.ProtocolError:
            self.kill()
            raise
        if label == "__init__" and isinstance(value, dict):
            self.pid, self.node_id = value.get("pid"), value.get("node_id")
        return value

    def _death_text(self, error: BaseException) -> str:
        """Where the actor ran and Ray's first line on why it died."""
        where = f" (pid {self.pid} on node {self.node_id})" if self.node_id else ""
        return f"its Ray actor{where} died: {death_reason(error)}"

    def death_detail(self) -> str:
        import ray
        from ray.exceptions import RayError

        if not self._ready([self._watch]):
            return ""
        try:  # the watch call ended when the actor died, with Ray's reason
            ray.get(self._watch, timeout=0)
        except RayError as error:
            return self._death_text(error)
        return ""

    def timed_out(self, timeout: float) -> EnvRunnerTimeout:
        label = self._pending[0][1] if self._pending else "request"
        self._pending.clear()
        hint = (
            resources_hint(
                self.options,
                "num_env_runners, evaluation_num_env_runners, num_cpus_per_env_runner",
            )
            if label == "__init__"
            else ""
        )
        self.kill()
        return EnvRunnerTimeout(self.worker_index, label, timeout, hint=hint)

    def is_alive(self) -> bool:
        return not self._killed and not self._ready([self._watch])

    def exitcode(self) -> int | None:
        return None  # Ray does not say; the failure says the actor died

    def kill(self) -> None:
        self.healthy = False
        if not self._killed:
            self._killed = True
            kill_actor(self.actor, self._watch, KILL_WAIT_S)

    def stop(self, timeout: float = 2.0) -> None:
        import ray

        if self.healthy and self.is_alive():
            try:
                while self._pending:
                    self.read_reply(timeout)
                ray.wait([self.actor.answer.remote(protocol.stop())], timeout=timeout)
            except Exception:  # noqa: BLE001 - a runner that fails the polite stop is killed
                pass
        self.kill()

    @staticmethod
    def wait(handles: Sequence[RunnerHandle], timeout: float) -> list[RunnerHandle]:
        import ray

        by_ref: dict[Any, RunnerHandle] = {}
        # A pool holds runners of one backend: these handles are all RayRunners.
        for handle in (h for h in handles if isinstance(h, RayRunner)):
            by_ref[handle._watch] = handle
            if handle._pending:
                by_ref[handle._pending[0][2]] = handle
        if not by_ref:
            return []
        ray.wait(list(by_ref), num_returns=1, timeout=max(timeout, 0))
        ready = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=0)[0]
        found = {id(by_ref[ref]) for ref in ready}
        return [handle for handle in handles if id(handle) in found]


def _scheduling_strategy() -> Any:
    """Inside a placement group (a Ray Tune trial's, which reserved the EnvRunners' bundles
    from `default_resource_request`): in that group, as RLlib's actors are; else spread over
    the nodes."""
    from ray.util import get_current_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    group = get_current_placement_group()
    if group is None:
        return "SPREAD"
    return PlacementGroupSchedulingStrategy(group, placement_group_capture_child_tasks=True)


class RayBackend(RunnerBackend):
    """Remote runners as Ray actors, spread over the cluster's nodes."""

    def __init__(self, config: Any):
        connect(config.ray_address)
        self._options = {
            "num_cpus": config.num_cpus_per_env_runner,
            "num_gpus": config.num_gpus_per_env_runner,
            "resources": dict(config.custom_resources_per_env_runner or {}),
            "scheduling_strategy": _scheduling_strategy(),
            "max_restarts": 0,  # the group restarts runners, with their state
        }

    def start(self, worker_index: int) -> RayRunner:
        return RayRunner(worker_index, self._options)

    def object_refs(self, values: Sequence[Any]) -> list[Any]:
        """Ray's own `ObjectRef`s (`ray.put`): the script's `ray.get` is the installed Ray's."""
        import ray

        return [ray.put(value) for value in values]
