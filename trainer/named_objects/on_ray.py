"""Named objects as real Ray named actors: what `trainer.named_objects` uses instead of its own
server when the main process is connected to Ray (`ray.init()` was called, or an algorithm with
`env_runners(backend="ray")` was built) at the first named object or EnvRunner start.

    main process                                   any process of the run, on any node
    create_named_object("counter", Counter)        get_named_object("counter").inc(1)
      -> a Ray actor named "counter" in the           -> ray.get_actor("counter", namespace)
         main process's namespace, 0 CPUs,               .localrl_call.remote("inc", (1,), {})
         on the driver's node if it can be            ray.get_actor("counter").inc.remote(1)
                                                       (plain Ray works too)

The actor class is made per factory class, here, so that it pickles by value and imports
nothing of the user's on the node where it runs before `sys.path` is set (the EnvRunners' way):
its `__init__` adds the main process's import paths, then unpickles the factory. It has one
forwarding method per public method of the factory class (so plain Ray handles work) and
`localrl_call(method, args, kwargs)`, which the handles here use (it also serves factories that
are not classes, whose methods are known only once the object exists).

Calls on one actor run one at a time, those of one process in the order made (Ray's ordering
for a caller's calls to one threaded actor with `max_concurrency=1`), as with the server.
EnvRunner processes on the process backend join the cluster themselves, with the address and
namespace in `client_settings()`, on their first named-object call.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from typing import Any

import cloudpickle

from trainer.errors import NamedObjectError
from trainer.named_objects.object_ref import ObjectRef
from trainer.util.child_process import add_import_paths
from trainer.util.log import plain_text

#: The method every named-object actor has: `localrl_call(method, args, kwargs)`.
CALL_METHOD = "localrl_call"


def connected() -> bool:
    """Whether this process is connected to Ray (without importing Ray when it is not loaded)."""
    ray = sys.modules.get("ray")
    if ray is None or getattr(ray, "__localrl_shim__", False):  # the RLlib launcher's stand-in
        return False
    return getattr(ray, "is_initialized", lambda: False)()


def settings_of_this_process() -> dict:
    """Where this process's named actors live: the cluster's address and the namespace."""
    import ray

    context = ray.get_runtime_context()
    return {"address": context.gcs_address, "namespace": context.namespace}


def _forward(method: str) -> Callable[..., Any]:
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._object, method)(*args, **kwargs)

    forward.__name__ = method
    return forward


class _NamedObjectHolder:
    """The body of every named-object actor class (see the module docstring)."""

    def __init__(self, sys_path: list[str], payload: bytes):
        add_import_paths(sys_path)
        factory, args, kwargs = cloudpickle.loads(payload)
        self._object = factory(*args, **kwargs)

    def localrl_call(self, method: str, args: tuple, kwargs: dict) -> Any:
        return getattr(self._object, method)(*args, **kwargs)


def actor_class(factory: Any) -> Any:
    """A Ray actor class holding `factory(*args, **kwargs)`, with a forwarding method per
    public method of `factory` when it is a class."""
    import ray

    methods = {}
    if isinstance(factory, type):
        methods = {
            name: _forward(name)
            for name in dir(factory)
            if not name.startswith("_")
            and name != CALL_METHOD
            and callable(getattr(factory, name, None))
        }
    name = getattr(factory, "__name__", "NamedObject")
    # Not an attribute of this module: cloudpickle sends it by value, with no reference to
    # `factory`'s module (which the actor's node imports only after its `__init__` set sys.path).
    cls = type(
        name,
        (_NamedObjectHolder,),
        {**methods, "__module__": __name__, "__qualname__": f"NamedObject[{name}]"},
    )
    return ray.remote(cls)


def _error(what: str, error: BaseException) -> Exception:
    """The `NamedObjectError` for a Ray error of a named-object request."""
    from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

    if isinstance(error, RayActorError) and error.args and isinstance(error.args[0], RayTaskError):
        error = error.args[0]  # its __init__ raised: that error is the story
    if isinstance(error, RayTaskError):  # the object's method raised: its traceback is in it
        cause = error.cause  # str(error) is Ray's text: where it ran, and the traceback
        return NamedObjectError(
            f"{what} raised {type(cause).__name__}: {cause}\n{plain_text(str(error)).rstrip()}"
        )
    if isinstance(error, RayActorError):
        return NamedObjectError(
            f"{what}: the named object's Ray actor is gone: {plain_text(str(error))}"
        )
    if isinstance(error, GetTimeoutError):
        return NamedObjectError(f"{what}: the named object's Ray actor did not answer: {error}")
    return NamedObjectError(f"{what}: {type(error).__name__}: {error}")


class RayConnection:
    """A process's way to its named actors, with the interface of the server's `_Connection`:
    `request` (waits), `submit` (`.remote()` calls, read later through their `ObjectRef`),
    `flush`, `close`, `known_names`; and `create`, which the main process calls with the
    factory in hand (the server gets it pickled in a "create" request)."""

    def __init__(self, settings: dict, call_timeout_s: float):
        self.settings = settings
        self.call_timeout_s = call_timeout_s
        self.known_names: set[str] = set()
        self._handles: dict[str, Any] = {}
        #: (ObjectRef, Ray ref, what) of each `.remote()` call not yet read, oldest first.
        self._in_flight: deque[tuple[Any, Any, str]] = deque()
        #: Actors this process created (the main process ends them on shutdown).
        self.created: list[Any] = []

    # -- connecting ----------------------------------------------------------------------------
    def _ray(self) -> Any:
        import ray

        if not ray.is_initialized():  # an EnvRunner process of the process backend
            ray.init(
                address=self.settings["address"],
                namespace=self.settings["namespace"],
                include_dashboard=False,
                configure_logging=False,
                log_to_driver=False,
            )
        return ray

    def _lookup(self, name: str) -> Any:
        """The actor handle named `name`, or None if there is none."""
        handle = self._handles.get(name)
        if handle is None:
            ray = self._ray()
            try:
                handle = ray.get_actor(name, namespace=self.settings["namespace"])
            except ValueError:  # Ray's "failed to look up actor"
                return None
            self._handles[name] = handle
        return handle

    def names(self) -> list[str]:
        from ray.util import list_named_actors

        self._ray()
        return sorted(
            actor["name"]
            for actor in list_named_actors(all_namespaces=True)
            if actor["namespace"] == self.settings["namespace"]
        )

    # -- the requests of `_Connection` --------------------------------------------------------
    def _call_ref(self, name: str, method: str, args: tuple, kwargs: dict) -> Any:
        handle = self._lookup(name)
        if handle is None:
            raise NamedObjectError(
                f"{name}.{method}(): no named object {name!r}; existing: {self.names()}"
            )
        if hasattr(handle, CALL_METHOD):
            return handle.localrl_call.remote(method, args, kwargs)
        return getattr(handle, method).remote(*args, **kwargs)  # a plain Ray named actor

    def _get(self, ref: Any, what: str) -> Any:
        from ray.exceptions import RayError

        ray = self._ray()
        try:
            return ray.get(ref, timeout=self.call_timeout_s)
        except RayError as error:
            raise _error(what, error) from None

    def request(self, kind: str, *args: Any) -> Any:
        self.flush()  # this call's effect follows the `.remote()` calls made before it
        if kind == "call":
            name, method, call_args, call_kwargs = args
            return self._get(
                self._call_ref(name, method, call_args, call_kwargs), f"{name}.{method}()"
            )
        if kind == "names":
            return self.names()
        raise ValueError(f"not a named-object request: {kind!r}")

    def create(self, name: str, factory: Any, payload: bytes) -> bool:
        """Creates the named actor holding `factory(*args, **kwargs)` (`payload`: the three,
        cloudpickled); False if the name is taken."""
        from ray.exceptions import ActorAlreadyExistsError
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.flush()  # its creation follows the `.remote()` calls made before it
        ray = self._ray()
        if self._lookup(name) is not None:
            return False  # the name is taken
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        try:
            handle = (
                actor_class(factory)
                .options(
                    name=name,
                    namespace=self.settings["namespace"],
                    num_cpus=0,
                    max_restarts=0,
                    scheduling_strategy=here,
                )
                .remote(list(sys.path), payload)
            )
        except (ActorAlreadyExistsError, ValueError) as error:
            if "already taken" in str(error):
                return False  # created elsewhere just now
            raise
        # The object exists once its __init__ ran: a factory that raises fails here, as on the
        # server.
        self._get(handle.__ray_ready__.remote(), f"create_named_object({name!r})")
        self._handles[name] = handle
        self.created.append(handle)
        return True

    def submit(self, kind: str, name: str, method: str, args: tuple, kwargs: dict) -> Any:
        ref = ObjectRef(self)
        self._in_flight.append(
            (ref, self._call_ref(name, method, args, kwargs), f"{name}.{method}()")
        )
        return ref

    def flush(self, until: Any = None) -> None:
        """Reads the `.remote()` calls' results in order until `until` is answered (default:
        all of them)."""
        while self._in_flight and (until is None or not until._done):
            ref, ray_ref, what = self._in_flight.popleft()
            try:
                ref._set("ok", self._get(ray_ref, what))
            except NamedObjectError as error:
                ref._set("error", str(error))

    def kill(self, name: str) -> None:
        """Kills the named actor `name` (`ray.kill`), if there is one."""
        handle = self._lookup(name)
        self._handles.pop(name, None)
        self.known_names.discard(name)
        if handle is None:
            return
        self._ray().kill(handle, no_restart=True)
        self.created = [created for created in self.created if created is not handle]

    def kill_created(self) -> None:
        """Ends the actors this process created (their objects are gone)."""
        import ray

        for handle in self.created:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone, or Ray is shutting down
                pass
        self.created.clear()
        self._handles.clear()

    def close(self) -> None:
        self._handles.clear()
